#!/usr/bin/env bash
# scripts/configure.sh: a configure that fails leaves nothing a later run
# takes as done (no stamp, no CMakeCache.txt), keeps its log, and the next
# one configures again and names it; one cut short (a cache without its
# Makefile) is configured again too; make build takes the stamp.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$top/tests/lib.sh"
nok() { not_ok "$1"; sed 's/^/    /' "$work/out" 2>/dev/null; }
b=$work/build

"$top/scripts/configure.sh" "$b" -DCMAKE_TOOLCHAIN_FILE="$work/no-such-toolchain.cmake" >"$work/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && ok "a failed configure fails (exit $rc)" || nok "a failed configure fails"
[ ! -e "$b/krepro-configured" ] && [ ! -e "$b/CMakeCache.txt" ] && ok "it leaves no stamp and no cache" ||
	nok "it leaves no stamp and no cache"
[ -s "$b/configure-failed.log" ] && grep -q "configure-failed.log" "$work/out" &&
	ok "its log is kept and named" || nok "its log is kept and named"

"$top/scripts/configure.sh" "$b" -DCMAKE_BUILD_TYPE= >"$work/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ -e "$b/krepro-configured" ] && ok "the next configure runs and stamps" ||
	nok "the next configure runs and stamps (exit $rc)"
grep -q "last configure of .* failed" "$work/out" && ok "and says the last one failed" ||
	nok "and says the last one failed"
[ ! -e "$b/configure-failed.log" ] && ok "the old failure's log is gone once it configures" ||
	nok "the old failure's log is gone once it configures"

# Cut short: a cache, no generated Makefile, no stamp.
rm -f "$b/krepro-configured" "$b/Makefile"
"$top/scripts/configure.sh" "$b" -DCMAKE_BUILD_TYPE= >"$work/out" 2>&1 &&
	grep -q "not configured to its end" "$work/out" && [ -e "$b/Makefile" ] && [ -e "$b/krepro-configured" ] &&
	ok "a configure cut short is done again" || nok "a configure cut short is done again"

# make build after a failed configure of the same directory: configures again.
rm -rf "$b"
"$top/scripts/configure.sh" "$b" -DCMAKE_TOOLCHAIN_FILE="$work/no-such-toolchain.cmake" >/dev/null 2>&1
make -C "$top" --no-print-directory -q BUILD="$b" build >/dev/null 2>&1
[ $? -ne 0 ] && ok "make sees the directory as not configured" || nok "make sees the directory as not configured"
summary
