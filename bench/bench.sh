#!/usr/bin/env bash
# Print krepro's performance figures; asserts nothing.
#
#   bench/bench.sh            last build timings, then boot-to-init and
#                             time-to-verdict over RUNS guests per flavour
#   bench/bench.sh --cold     first a cold build of unpatched (scratch object
#                             directory, ccache off) and the incremental patched
#                             build after it; ~20 minutes on 2 cores
#
# RUNS (default 3) guests per flavour and reproducer. Never run it beside
# another build: TCG guests stall when the host is loaded.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/scripts/common.sh"
RUNS=${RUNS:-3}

if [ "${1:-}" = --cold ]; then
	scratch=$(mktemp -d "$KREPRO_CACHE/bench.XXXXXX")
	trap 'rm -rf "$scratch"' EXIT
	echo "== cold build (scratch objects, ccache off), then incremental second flavour"
	CCACHE_DISABLE=1 KREPRO_OBJ=$scratch/obj KREPRO_KERNELS=$scratch/kernels \
		"$TOP/scripts/kernels.sh" build unpatched patched
	for f in unpatched patched; do
		echo "build $f: $(KREPRO_KERNELS=$scratch/kernels && cat "$(kernel_image "$f").timing")"
	done
fi

echo "== last builds of the cached flavours ($KREPRO_KERNELS)"
for f in $KREPRO_FLAVOURS; do
	t=$(kernel_image "$f").timing
	[ -f "$t" ] && echo "build $f: $(cat "$t")" || echo "build $f: not built"
done

echo "== guests: $RUNS per flavour and reproducer"
results=$(mktemp -d "$TOP/results/bench.XXXXXX" 2>/dev/null || { mkdir -p "$TOP/results"; mktemp -d "$TOP/results/bench.XXXXXX"; })
# shellcheck disable=SC2046
"$TOP/run-in-qemu.sh" --results "$results" --kernel unpatched --kernel patched \
	--repeat "$RUNS" $("$TOP/run-in-qemu.sh" --list) >/dev/null 2>&1 || true
python3 - "$results" <<'EOF'
import json, os, re, statistics, sys
res = sys.argv[1]
rows = {}
for d in sorted(os.listdir(res)):
    p = os.path.join(res, d, "verdict.json")
    if not os.path.isfile(p):
        continue
    v = json.load(open(p))
    con = open(os.path.join(res, d, "console.log"), errors="replace").read()
    m = re.search(r"krepro-init: started, uptime ([0-9.]+) s", con)
    init = float(m.group(1)) if m else float("nan")
    rows.setdefault((v["repro"], v["kernel"]), []).append((init, v["seconds"], v["verdict"]))
print(f"{'reproducer':<20} {'kernel':<10} {'runs':>4} {'init(s) guest uptime':>21} {'verdict(s) wall':>16}  verdicts")
for (r, k), xs in sorted(rows.items()):
    init = [x[0] for x in xs]
    wall = [x[1] for x in xs]
    verdicts = ",".join(sorted(set(x[2] for x in xs)))
    print(f"{r:<20} {k:<10} {len(xs):>4} {min(init):>8.2f}-{max(init):<8.2f}    "
          f"{min(wall):>6.1f}-{max(wall):<6.1f}   {verdicts}")
print(f"results: {res}")
EOF
