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
#   bench/bench.sh --baseline REV
#                              the sequential matrix, and before it the same
#                              matrix run by commit REV's own runner, guest
#                              image and recorded rates (a temporary worktree;
#                              the cached kernels are shared): the old
#                              behaviour beside the new, with the ratio
#   --record FILE              also write the matrix runs as a bench record
#                              (bench/matrix-record.py: every guest's boot and
#                              seconds, every row's guests)
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
cold=0 fixed=1 debug_info=0 baseline= record=
while [ $# -gt 0 ]; do
	case $1 in
	--cold) cold=1 ;;
	--cold-debug-info) debug_info=1 ;;
	--sequential-only) fixed=0 ;;
	--baseline)
		[ $# -ge 2 ] || usage_die "--baseline needs a commit"
		baseline=$(git -C "$TOP" rev-parse --verify -q "$2^{commit}") || usage_die "--baseline $2: no such commit"
		fixed=0
		shift
		;;
	--record)
		[ $# -ge 2 ] || usage_die "--record needs a file"
		record=$2
		shift
		;;
	-h | --help) help_header --help ;;
	*) usage_die "unknown argument $1 (bench/bench.sh --help for the arguments)" ;;
	esac
	shift
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
matrix() { # label results-dir checkout run-in-qemu options...
	local label=$1 dir=$2 top=$3
	shift 3
	# shellcheck disable=SC2086
	"$top/run-in-qemu.sh" --arch "$ARCH" --results "$dir" --kernel unpatched --kernel patched \
		--expect "$@" $repros >"$dir.log" 2>&1 || true
}
stamp=$(date +%Y%m%d-%H%M%S)
runs=()
if [ -n "$baseline" ]; then
	# The old behaviour in the same bench run: that commit's own runner,
	# guest image and recorded rates, on the same cached kernels.
	old=$(mktemp -d "$KREPRO_CACHE/bench-baseline.XXXXXX")
	trap 'git -C "$TOP" worktree remove --force "$old" 2>/dev/null; rm -rf "$old"' EXIT
	git -C "$TOP" worktree add -q --detach "$old" "$baseline"
	dir=$TOP/results/bench-$stamp-baseline
	echo "== the matrix at $baseline (sequential, miss <= $MISS): $dir"
	matrix baseline "$dir" "$old" --miss "$MISS"
	runs+=("baseline=$dir")
fi
dir=$TOP/results/bench-$stamp-sequential
echo "== the matrix, sequential (miss <= $MISS): $dir"
matrix sequential "$dir" "$TOP" --miss "$MISS"
runs=("sequential=$dir" "${runs[@]}")
if [ "$fixed" = 1 ]; then
	dir=$TOP/results/bench-$stamp-fixed
	echo "== the matrix, fixed REPEAT=$REPEAT: $dir"
	matrix fixed "$dir" "$TOP" --repeat "$REPEAT"
	runs+=("fixed=$dir")
fi
"$TOP/bench/matrix-record.py" ${record:+--record "$record"} \
	--what "the $ARCH matrix, warm kernels${baseline:+, beside the matrix at $baseline}" "${runs[@]}"
