#!/usr/bin/env bash
# common.sh ccache_paths: two trees laid out as krepro's own (ROOT/linux-X
# beside ROOT/build/X/ARCH) share ccache, and what the compiler writes
# names sources as upstream does: __FILE__ and the debug info say foo/a.c,
# never ../../../linux-x/foo/a.c nor a tree's absolute path (BUG and WARN
# lines, report titles and decoded traces read them).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KREPRO_CACHE=$work/cache CCACHE_DIR=$work/ccache
. "$top/scripts/common.sh"
. "$top/tests/lib.sh"
command -v ccache >/dev/null || { echo "no ccache: skipped"; exit 77; }

build() { # ROOT: compile ROOT/linux-x/foo/a.c as kbuild does (absolute paths)
	local tree=$1/linux-x obj=$1/build/x/x86_64
	mkdir -p "$tree/include" "$tree/foo" "$obj/foo"
	echo '#define WHERE __FILE__' >"$tree/include/w.h"
	printf '#include "w.h"\nconst char *where(void) { return WHERE; }\n' >"$tree/foo/a.c"
	ccache_paths "$tree" "$obj"
	# shellcheck disable=SC2086 # KREPRO_KCFLAGS is a list of options
	(cd "$obj" && ccache gcc -g -O2 -I"$tree/include" -fmacro-prefix-map="$tree/=" \
		$KREPRO_KCFLAGS -c "$tree/foo/a.c" -o foo/a.o)
}

check 0 "the first tree builds" build "$KREPRO_CACHE/one"
check 0 "a second tree with the same sources builds" build "$KREPRO_CACHE/bisect/tree-1"
hits=$(ccache -s -v 2>/dev/null | awk '/^ *Hits:/ { print $2; exit }')
if [ "${hits:-0}" -ge 1 ]; then ok "the second tree's object came from ccache"
else not_ok "the second tree's object came from ccache (hits: ${hits:-none})"; fi
o=$KREPRO_CACHE/bisect/tree-1/build/x/x86_64/foo/a.o
if strings "$o" | grep -qx 'foo/a.c'; then ok "__FILE__ is foo/a.c"
else not_ok "__FILE__ is foo/a.c: $(strings "$o" | grep a.c)"; fi
if strings "$o" | grep -q -e '\.\./' -e "$work"; then
	not_ok "no relative or absolute tree path in the object: $(strings "$o" | grep -e '\.\./' -e "$work")"
else
	ok "no relative or absolute tree path in the object"
fi
summary
