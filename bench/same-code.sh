#!/usr/bin/env bash
# Does the debug information change the code? Recompiles kernel objects of
# the cache's object directory with their own kbuild command line (.cmd),
# once as built and once without the debug-info flags, and compares their
# code sections byte for byte (relocations are not in the section bytes, so
# the comparison is about instructions, not addresses). Prints; asserts
# nothing.
#
#   bench/same-code.sh [OBJ...]   default: the objects of the files the bug
#                                 and fix patches touch (ARCH=arm for ARM)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/scripts/common.sh"
help_header "${1:-}"
for a in "$@"; do
	case $a in -*) usage_die "same-code.sh takes object files, not '$a' (--help for more)" ;; esac
done
ARCH=${ARCH:-x86_64}
obj=${KREPRO_OBJ:-$KREPRO_CACHE/build/$ARCH}
cross=$(KREPRO_ARCH=$ARCH arch_field cross)
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046
	set -- $(sed -n 's|^+++ b/\(.*\)\.c$|\1.o|p' "$TOP"/kernel-patches/*/*.patch | sort -u)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -d "$obj" ] || usage_die "no object directory $obj (build the kernel first, or set KREPRO_OBJ)"
cd "$obj"
same=0 differ=0
for o in "$@"; do
	c=$(dirname "$o")/.$(basename "$o").cmd
	[ -f "$c" ] || continue    # not built for this arch
	cmd=$(sed -n 's/^cmd_[^ ]* := //p' "$c" | sed 's/;.*//')
	nodebug=$(sed -e 's/ -g / /g' -e 's/ -gdwarf-[0-9] / /g' -e 's/ -femit-struct-debug-baseonly / /' \
		-e 's/ -fno-var-tracking / /' <<<"$cmd")
	eval "${cmd/ -o $o / -o $tmp/with.o }" && eval "${nodebug/ -o $o / -o $tmp/without.o }" ||
		{ echo "$o: does not compile here"; continue; }
	"${cross}readelf" -S "$tmp/with.o" | grep -q '\.debug_line' || { echo "$o: built without line information"; continue; }
	"${cross}readelf" -S "$tmp/without.o" | grep -q '\.debug_line' && { echo "$o: the flags were not removed"; continue; }
	ok=1
	for sec in $("${cross}objdump" -h "$tmp/with.o" | awk '$2 ~ /^\.(init\.|exit\.|noinstr\.)?text/ { print $2 }'); do
		"${cross}objcopy" -O binary -j "$sec" "$tmp/with.o" "$tmp/a"
		"${cross}objcopy" -O binary -j "$sec" "$tmp/without.o" "$tmp/b"
		cmp -s "$tmp/a" "$tmp/b" || ok=0
	done
	if [ "$ok" = 1 ]; then same=$((same + 1)); echo "$o: same code"; else differ=$((differ + 1)); echo "$o: code differs"; fi
done
echo "$ARCH: $same objects with the same code, $differ with different code"
