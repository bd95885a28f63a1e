#!/usr/bin/env bash
# run-in-qemu.sh's argument handling and bad input; boots no guest.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
run=$top/run-in-qemu.sh
pass=0 fail=0

check() { # expected-status description command...
	local want=$1 what=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ]; then
		pass=$((pass + 1)); echo "ok - $what"
	else
		fail=$((fail + 1)); echo "not ok - $what: exit $rc, want $want"; echo "$out" | sed 's/^/    /'
	fi
	LAST=$out
}
contains() { # description needle
	if grep -qF -- "$2" <<<"$LAST"; then pass=$((pass + 1)); echo "ok - $1"
	else fail=$((fail + 1)); echo "not ok - $1: no '$2' in:"; echo "$LAST" | sed 's/^/    /'; fi
}

check 0 "--help" "$run" --help
contains "--help documents the exit codes" "125 undecided"
check 0 "--list" "$run" --list
contains "--list names xfs-nowait-dio" "xfs-nowait-dio"
check 2 "no reproducer" "$run"
check 2 "unknown reproducer" "$run" no-such-bug
contains "unknown reproducer lists the known ones" "  xfs-nowait-dio"
check 2 "unknown option" "$run" --frobnicate xfs-nowait-dio
check 2 "--kernel path missing" "$run" --kernel /nonexistent/bzImage xfs-nowait-dio
contains "missing kernel is named" "/nonexistent/bzImage: no such file"
check 2 "--kernel not a kernel" "$run" --kernel /etc/hostname xfs-nowait-dio
contains "not-a-kernel is explained" "not an x86 bzImage"
check 2 "--repeat 0" "$run" --repeat 0 xfs-nowait-dio
check 2 "--timeout abc" "$run" --timeout abc xfs-nowait-dio
check 2 "--accel bogus" "$run" --accel bogus xfs-nowait-dio
check 2 "--kernel without value" "$run" --kernel
# Arches: each lists and accepts its own reproducers only.
check 0 "--arch arm --list" "$run" --arch arm --list
contains "arm lists arm-kprobe-fortify" "arm-kprobe-fortify"
check 0 "--list is x86_64's" "$run" --list
if grep -qx arm-kprobe-fortify <<<"$LAST"; then
	fail=$((fail + 1)); echo "not ok - x86_64 --list has arm-kprobe-fortify"
else pass=$((pass + 1)); echo "ok - x86_64 --list lacks arm-kprobe-fortify"; fi
check 2 "an arm reproducer on x86_64" "$run" arm-kprobe-fortify
contains "the arch is named" "unknown reproducer 'arm-kprobe-fortify' for x86_64"
check 2 "an x86 reproducer on arm" "$run" --arch arm xfs-nowait-dio
check 2 "--arch bogus" "$run" --arch sparc xfs-nowait-dio
check 2 "--arch arm: a bzImage is not a zImage" "$run" --arch arm --kernel /etc/hostname arm-kprobe-fortify
contains "not-a-zImage is explained" "not an ARM zImage"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
