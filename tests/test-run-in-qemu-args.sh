#!/usr/bin/env bash
# run-in-qemu.sh's argument handling and bad input; boots no guest.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
run=$top/run-in-qemu.sh
. "$top/tests/lib.sh"

check 0 "--help" "$run" --help
contains "--help documents the exit codes" "125 undecided"
contains "--help documents the usage status" "128 usage error"
check 0 "--list" "$run" --list
contains "--list names xfs-nowait-dio" "xfs-nowait-dio"
check 128 "no reproducer" "$run"
check 128 "unknown reproducer" "$run" no-such-bug
contains "unknown reproducer lists the known ones" "the reproducers for x86_64: bpf-percpu-reuse"
check 128 "unknown option" "$run" --frobnicate xfs-nowait-dio
check 128 "--kernel path missing" "$run" --kernel /nonexistent/bzImage xfs-nowait-dio
contains "missing kernel is named" "/nonexistent/bzImage: no such file"
check 128 "--kernel not a kernel" "$run" --kernel /etc/hostname xfs-nowait-dio
contains "not-a-kernel is explained" "not an x86 bzImage"
check 128 "--repeat 0" "$run" --repeat 0 xfs-nowait-dio
check 128 "--timeout abc" "$run" --timeout abc xfs-nowait-dio
check 128 "--accel bogus" "$run" --accel bogus xfs-nowait-dio
check 128 "--kernel without value" "$run" --kernel
check 128 "--repeat abc" "$run" --repeat abc xfs-nowait-dio
contains "--repeat abc is explained" "--repeat: wants a whole number from 1 to 1000, not 'abc'"
check 128 "--repeat -1" "$run" --repeat -1 xfs-nowait-dio
check 128 "--tree without value" "$run" --tree
check 128 "--report without value" "$run" --report
check 128 "--report of a missing directory" "$run" --report /nonexistent/run
contains "missing report dir is named" "/nonexistent/run: no such directory"
check 0 "--help documents --tree and --report" "$run" --help
contains "--help names --tree" "--tree DIR"
contains "--help names --report" "--report DIR"
contains "--help shows git bisect run" "git bisect run"

# --tree on what is not a kernel tree: 125 (git bisect's skip) before any
# work, dry run or not; kernels.sh build-tree itself says it with the log path.
# A scratch cache, so nothing lands in the real one.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/not-a-kernel"
echo hello >"$scratch/not-a-kernel/README"
for dry in "" --dry-run; do
	check 125 "--tree not a kernel tree ${dry:-(a run)}" env KREPRO_CACHE="$scratch/cache" "$run" $dry \
		--tree "$scratch/not-a-kernel" xfs-nowait-dio
	contains "not a kernel tree is said ${dry:-(a run)}" "not-a-kernel: not a kernel tree"
	if [ -e "$scratch/cache/build" ]; then not_ok "nothing made before the refusal ${dry:-(a run)}"
	else ok "nothing made before the refusal ${dry:-(a run)}"; fi
done
check 125 "kernels.sh build-tree on not a kernel tree" env KREPRO_CACHE="$scratch/cache" \
	"$(dirname "$run")/scripts/kernels.sh" build-tree "$scratch/not-a-kernel"
contains "kernels.sh build-tree: not a kernel tree is said" "is not a kernel tree"
contains "--tree failure names the build log" "build log: $scratch/cache/trees/"
log=$(grep -o "build log: [^)]*" <<<"$LAST" | cut -d' ' -f3)
if [ -f "$log" ] && grep -q "not a kernel tree" "$log"; then ok "the named build log exists and says why"
else not_ok "the named build log exists and says why: '$log'"; fi
# A tree whose config step fails, and one whose build fails: 125 and the log.
for what in config build; do
	t=$scratch/fake-$what
	mkdir -p "$t/arch/x86" "$t/scripts/kconfig"
	if [ $what = config ]; then
		printf '#!/bin/sh\necho "merge_config: no such fragment" >&2\nexit 1\n' >"$t/scripts/kconfig/merge_config.sh"
	else
		# Writes .config with every requested option, as the real one would.
		printf '#!/bin/sh\n[ "$1" = -n ] && shift; [ "$1" = -O ] && obj=$2 && shift 2; cat "$@" >"$obj/.config"\n' \
			>"$t/scripts/kconfig/merge_config.sh"
	fi
	chmod +x "$t/scripts/kconfig/merge_config.sh"
	printf 'VERSION = 6\nPATCHLEVEL = 1\nbzImage:\n\t@echo "error: this tree does not build"; exit 1\n' >"$t/Makefile"
	check 125 "--tree whose $what fails" env KREPRO_CACHE="$scratch/cache" "$run" --tree "$t" xfs-nowait-dio
	contains "--tree $what failure names the build log" "(build log: $scratch/cache/trees/"
done
contains "the build's own error is shown" "error: this tree does not build"
# A tree outside the cache is built from a copy in the flavours' layout
# (ccache serves it); the tree itself is left as it was.
copy=$(realpath -m "$scratch/cache")/trees/$(realpath "$scratch/fake-build" | sha256sum | cut -c1-12)/linux-6.1
if [ -f "$copy/Makefile" ] && [ -d "$(dirname "$copy")/build/6.1/x86_64" ]; then
	ok "the tree was copied to ROOT/linux-6.1, its objects in ROOT/build/6.1/x86_64"
else not_ok "the tree was copied to ROOT/linux-6.1, its objects in ROOT/build/6.1/x86_64: '$copy'"; fi
if [ "$(ls -A "$scratch/fake-build")" = "$(printf 'Makefile\narch\nscripts')" ]; then ok "nothing written into the tree"
else not_ok "nothing written into the tree: $(ls -A "$scratch/fake-build" | tr '\n' ' ')"; fi
check 0 "kernels.sh obj-dir names the copy's object directory" env KREPRO_CACHE="$scratch/cache" \
	"$(dirname "$run")/scripts/kernels.sh" obj-dir "$scratch/fake-build"
contains "obj-dir is the copy's" "$(dirname "$copy")/build/6.1/x86_64"
check 128 "--tree missing directory" env KREPRO_CACHE="$scratch/cache" "$run" --tree "$scratch/nope" xfs-nowait-dio
check 128 "--tree with an unknown reproducer: usage first, no build" env KREPRO_CACHE="$scratch/cache" "$run" --tree "$scratch/not-a-kernel" no-such-bug

# --report on a directory without run.json: says so, a usage error; on a run
# that was interrupted it renders what finished and says it is partial (the
# rendering itself: tests/test_runner.py).
mkdir -p "$scratch/empty-run"
check 128 "--report of a directory without run.json" "$run" --report "$scratch/empty-run"
contains "no run.json is explained" "no run.json there"
mkdir -p "$scratch/run/r.patched.1"
cat >"$scratch/run/run.json" <<'JSON'
{"format": 1, "arch": "x86_64", "accel": "tcg", "started": "2026-12-04T10:00:00+00:00",
 "finished": null, "interrupted": true, "krepro": "test", "expect": false,
 "mode": {"kind": "fixed", "repeat": 2}, "kernels": [], "rows": [], "prepare": [],
 "runs": [{"repro": "r", "kernel": "patched", "run": 1, "outcome": "PASS", "evidence": "exit 0",
           "seconds": 5.0, "log": "r.patched.1/console.log", "ktap": "r.patched.1/ktap.txt"}]}
JSON
check 130 "--report of an interrupted run renders it" "$run" --report "$scratch/run"
contains "the run is called partial" "**PARTIAL**"
contains "the undecided row is there" "| r | patched | (not decided: run stopped) |"

# Arches: each lists and accepts its own reproducers only.
check 0 "--arch arm --list" "$run" --arch arm --list
contains "arm lists arm-kprobe-fortify" "arm-kprobe-fortify"
check 0 "--list is x86_64's" "$run" --list
if grep -qx arm-kprobe-fortify <<<"$LAST"; then
	not_ok "x86_64 --list has arm-kprobe-fortify"
else ok "x86_64 --list lacks arm-kprobe-fortify"; fi
check 128 "an arm reproducer on x86_64" "$run" arm-kprobe-fortify
contains "the arch is named" "'arm-kprobe-fortify' runs on arm guests, not x86_64: add --arch arm"
check 128 "an x86 reproducer on arm" "$run" --arch arm xfs-nowait-dio
check 128 "--arch bogus" "$run" --arch sparc xfs-nowait-dio
check 128 "--arch arm: a bzImage is not a zImage" "$run" --arch arm --kernel /etc/hostname arm-kprobe-fortify
contains "not-a-zImage is explained" "not an ARM zImage"
# --tree with --arch arm: the tree must have arch/arm (an x86-only fake has not).
check 125 "--arch arm --tree without arch/arm" env KREPRO_CACHE="$scratch/cache" "$run" --arch arm --tree "$scratch/fake-build" arm-kprobe-fortify
contains "--arch arm --tree without arch/arm is said" "arch/arm/"
check 125 "kernels.sh build-tree, arm, without arch/arm" env KREPRO_CACHE="$scratch/cache" KREPRO_ARCH=arm \
	"$(dirname "$run")/scripts/kernels.sh" build-tree "$scratch/fake-build"
contains "--arch arm --tree has its own object directory" "/build/6.1/arm/"
log=$(grep -o "build log: [^)]*" <<<"$LAST" | cut -d' ' -f3)
if [ -f "$log" ] && grep -q "arch/arm/" "$log"; then ok "the arm build log names arch/arm/"
else not_ok "the arm build log names arch/arm/: '$log'"; fi

summary
