#!/usr/bin/env bash
# Print krepro's performance figures; asserts nothing.
#
#   bench/bench.sh             last build timings, then the matrix decided
#                              sequentially (target miss MISS, default 0.01)
#                              beside the same matrix at a fixed REPEAT
#                              (default 5), with the ratio
#   bench/bench.sh --cold      first a cold build of unpatched (scratch object
#                              directory, ccache off) and the incremental
#                              patched build after it; ~20 minutes on 2 cores
#   bench/bench.sh --cold-debug-info
#                              side by side, cold builds of unpatched (empty
#                              ccache) without and with kernel-patches/config/
#                              debug-info.config, the second being the cache's
#                              own stale unpatched kernel; the ratio, and whether
#                              the code (.text, .init.text) is the same; ~30
#                              minutes on 2 cores (ARCH=arm for the ARM kernel)
#   bench/bench.sh --sequential-only
#                              the sequential matrix only
#
# REPROS (default: the x86_64 matrix) limits the reproducers; ARCH=arm the
# ARM matrix. Never run it beside another build: TCG guests stall when the
# host is loaded.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/scripts/common.sh"
MISS=${MISS:-0.01}
REPEAT=${REPEAT:-5}
ARCH=${ARCH:-x86_64}
cold=0 fixed=1 debug_info=0
for a in "$@"; do
	case $a in
	--cold) cold=1 ;;
	--cold-debug-info) debug_info=1 ;;
	--sequential-only) fixed=0 ;;
	*) die "unknown argument $a (see the top of $0)" ;;
	esac
done

if [ "$cold" = 1 ]; then
	scratch=$(mktemp -d "$KREPRO_CACHE/bench.XXXXXX")
	trap 'rm -rf "$scratch"' EXIT
	echo "== cold build (scratch objects, ccache off), then incremental second flavour"
	CCACHE_DISABLE=1 KREPRO_OBJ=$scratch/obj KREPRO_KERNELS=$scratch/kernels \
		"$TOP/scripts/kernels.sh" build unpatched patched
	for f in unpatched patched; do
		echo "build $f: $(KREPRO_KERNELS=$scratch/kernels && cat "$(kernel_image "$f").timing")"
	done
fi

if [ "$debug_info" = 1 ]; then
	# As a cold CI machine builds: ccache on but empty (one per build). The
	# build with the fragment is the cache's own unpatched kernel, so the
	# measurement costs no extra build; the one without goes to scratch.
	img=$(KREPRO_ARCH=$ARCH kernel_image unpatched)
	[ -n "$(KREPRO_ARCH=$ARCH "$TOP/scripts/kernels.sh" stale unpatched)" ] ||
		die "$img is current: --cold-debug-info measures its build (remove it, or use a fresh KREPRO_CACHE)"
	scratch=$(mktemp -d "$KREPRO_CACHE/bench.XXXXXX")
	trap 'rm -rf "$scratch"' EXIT
	cp -r "$TOP/kernel-patches" "$scratch/without"
	rm "$scratch/without/config/debug-info.config"
	echo "== cold $ARCH unpatched without debug-info.config (scratch objects, empty ccache)"
	CCACHE_DIR=$scratch/ccache-without KREPRO_ARCH=$ARCH KREPRO_PATCHES=$scratch/without \
		KREPRO_OBJ=$scratch/obj KREPRO_KERNELS=$scratch/kernels \
		"$TOP/scripts/kernels.sh" build unpatched
	echo "== cold $ARCH unpatched with it (the cache's object directory, empty ccache)"
	CCACHE_DIR=$scratch/ccache-with KREPRO_ARCH=$ARCH "$TOP/scripts/kernels.sh" build unpatched
	without=$scratch/kernels/$(basename "$img")
	for v in "without:$without" "with:$img"; do
		echo "build ${v%%:*}: $(cat "${v#*:}.timing") vmlinux $(du -m "${v#*:}.vmlinux" | cut -f1) MB"
	done
	s0=$(sed 's/seconds=\([0-9]*\).*/\1/' "$without.timing")
	s1=$(sed 's/seconds=\([0-9]*\).*/\1/' "$img.timing")
	echo "with / without: $(awk -v a="$s1" -v b="$s0" 'BEGIN { printf "%.2f", a / b }')"
	objcopy=$(KREPRO_ARCH=$ARCH arch_field cross)objcopy
	for sec in .text .init.text; do
		$objcopy -O binary -j "$sec" "$without.vmlinux" "$scratch/a"
		$objcopy -O binary -j "$sec" "$img.vmlinux" "$scratch/b"
		if cmp -s "$scratch/a" "$scratch/b"; then
			echo "$sec: identical ($(du -k "$scratch/b" | cut -f1) KiB)"
		else
			echo "$sec: differs"
		fi
	done
	exit 0
fi

echo "== last builds of the cached flavours ($KREPRO_KERNELS)"
for f in $KREPRO_FLAVOURS; do
	t=$(kernel_image "$f").timing
	[ -f "$t" ] && echo "build $f: $(cat "$t")" || echo "build $f: not built"
done

mkdir -p "$TOP/results"
repros=${REPROS:-$("$TOP/run-in-qemu.sh" --arch "$ARCH" --list)}
matrix() { # label results-dir run-in-qemu options...
	local label=$1 dir=$2 t0
	shift 2
	t0=$(date +%s)
	# shellcheck disable=SC2086
	"$TOP/run-in-qemu.sh" --arch "$ARCH" --results "$dir" --kernel unpatched --kernel patched \
		--expect "$@" $repros >"$dir.log" 2>&1 || true
	echo "$label $(($(date +%s) - t0))" >>"$dir.wall"
}
seq_dir=$(mktemp -u "$TOP/results/bench-seq.XXXXXX")
echo "== the matrix, sequential (miss <= $MISS): $seq_dir"
matrix sequential "$seq_dir" --miss "$MISS"
dirs=("$seq_dir")
if [ "$fixed" = 1 ]; then
	fix_dir=$(mktemp -u "$TOP/results/bench-fixed.XXXXXX")
	echo "== the matrix, fixed REPEAT=$REPEAT: $fix_dir"
	matrix fixed "$fix_dir" --repeat "$REPEAT"
	dirs+=("$fix_dir")
fi
PYTHONPATH=$TOP/scripts python3 - "${dirs[@]}" <<'PY'
import json, statistics, sys
print(f"{'mode':<12} {'wall':>8} {'guests':>7} {'guest s':>8}  rows as expected")
walls = []
for d in sys.argv[1:]:
    rec = json.load(open(f"{d}/run.json"))
    label, wall = open(f"{d}.wall").read().split()
    walls.append(int(wall))
    secs = sum(r["seconds"] or 0 for r in rec["runs"])
    ok = sum(1 for r in rec["rows"] if r.get("as_expected"))
    print(f"{label:<12} {int(wall) // 60:>4}m{int(wall) % 60:02d}s {len(rec['runs']):>7} {secs:>8.0f}  "
          f"{ok}/{len(rec['rows'])}")
    for r in rec["rows"]:
        print(f"    {r['repro']:<20} {r['kernel']:<10} {r['runs']:>3} guests  {r['cell']}")
if len(walls) == 2:
    print(f"sequential / fixed wall time: {walls[0] / walls[1]:.2f}")
PY
