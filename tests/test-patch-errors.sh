#!/usr/bin/env bash
# kernels.sh check-patches on bad series: a hunk that does not apply and a
# bug+fix pair that is not a no-op must each fail and name the patch and file.
# Needs the kernel tree in the cache (make check-patches creates it); skips
# (exit 77, ctest's SKIP_RETURN_CODE) without it.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/common.sh"
git -C "$KREPRO_TREE" rev-parse -q --verify pristine >/dev/null 2>&1 || {
	echo "no kernel tree in $KREPRO_TREE: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
nok() { fail=$((fail + 1)); echo "not ok - $1"; sed 's/^/    /' "$work/out"; }

good=$top/kernel-patches/xfs-nowait-dio
mkdir -p "$work/p/config" "$work/p/badhunk" "$work/p/noop"
# A bug patch whose context no longer matches 6.1.
sed 's/^ \t \* when it is subsequently mapped and aborting the I\/O\.$/ \t * this line is not in 6.1/' \
	"$good"/bug-0001-*.patch >"$work/p/badhunk/bug-0001-bad.patch"
cp "$good"/fix-0001-*.patch "$work/p/badhunk/"
# A pair whose fix does not undo the bug: the bug patch twice is not a no-op.
cp "$good"/bug-0001-*.patch "$work/p/noop/bug-0001-x.patch"
cp "$good"/fix-0001-*.patch "$work/p/noop/fix-0001-x.patch"
sed -i 's/IOMAP_NOWAIT | IOMAP_OVERWRITE_ONLY/IOMAP_OVERWRITE_ONLY | IOMAP_NOWAIT/' "$work/p/noop/fix-0001-x.patch"

KREPRO_PATCHES=$work/p "$top/scripts/kernels.sh" check-patches >"$work/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && ok "bad series fails (exit $rc)" || nok "bad series fails"
grep -q "badhunk/bug-0001-bad.patch: does not apply" "$work/out" &&
	grep -q "fs/xfs/xfs_iomap.c" "$work/out" && ok "names the patch and the file" ||
	nok "names the patch and the file"
grep -q "not ok - noop: bug + fix is not a no-op" "$work/out" && ok "a fix that does not undo the bug is caught" ||
	nok "a fix that does not undo the bug is caught"
KREPRO_PATCHES=$top/kernel-patches "$top/scripts/kernels.sh" check-patches >"$work/out" 2>&1 &&
	ok "the real series passes" || nok "the real series passes"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
