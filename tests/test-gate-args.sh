#!/usr/bin/env bash
# gate.sh's bad input: no series, missing patches, a bad --repeat, and a series
# that does not apply (named by patch and hunk, exit 128, nothing built). The
# last needs the kernel tree in the cache; without it those checks are skipped.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/common.sh"
gate=$top/scripts/gate.sh
. "$top/tests/lib.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/empty"

check 0 "--help" "$gate" --help
contains "--help gives the exit codes" "1 a regression"
check 128 "no series" "$gate" --base patched
check 128 "missing patch file" "$gate" --base patched "$scratch/nope.patch"
contains "missing patch is named" "$scratch/nope.patch"
check 128 "directory without patches" "$gate" --base patched "$scratch/empty"
contains "empty series dir is named" "holds no *.patch files"
check 128 "--repeat 0" "$gate" --repeat 0 "$top/kernel-patches/xfs-rmap-keys"
check 128 "--arch bogus" "$gate" --arch sparc "$top/kernel-patches/xfs-rmap-keys"
contains "bad arch is explained" "--arch is one of: x86_64 arm"
check 0 "--help names --arch" "$gate" --help
contains "--help documents --arch" "--arch A"
check 128 "--base not a tree" "$gate" --base "$scratch/empty" "$top/kernel-patches/xfs-rmap-keys"
contains "bad base is explained" "not unpatched, patched or a git kernel tree"
check 0 "--help names the culprit search" "$gate" --help
contains "--help documents --no-bisect" "--no-bisect"
contains "--help says what a culprit adds to the status" "a regression is 1 whether its"
check 128 "--no-bisect keeps the checks" "$gate" --no-bisect --repeat 0 "$top/kernel-patches/xfs-rmap-keys"
check 128 "--dry-run keeps the checks" "$gate" --dry-run "$scratch/nope.patch"
check 2 "make gate without SERIES (make's own status)" make -s -C "$top" gate

if git -C "$KREPRO_TREE" rev-parse -q --verify pristine >/dev/null 2>&1; then
	# The fix is in the patched flavour already: its hunk cannot apply again.
	fix=$(ls "$top"/kernel-patches/xfs-nowait-dio/fix-*.patch)
	# A cache of its own holding only the tree: whatever the gate would
	# write (kernels, clones, locks) shows there, whatever else runs on the
	# machine beside this test.
	mkdir -p "$scratch/cache"
	ln -s "$(realpath "$KREPRO_TREE")" "$scratch/cache/linux-$KREPRO_BRANCH"
	KREPRO_CACHE=$scratch/cache check 128 "a series that does not apply" \
		"$gate" --base patched --results "$scratch/run" "$fix"
	contains "names the patch" "$(basename "$fix") does not apply"
	contains "names the file and hunk" "fs/xfs/xfs_iomap.c, hunk @@ -"
	[ "$(ls -A "$scratch/cache")" = "linux-$KREPRO_BRANCH" ] && [ ! -e "$scratch/run" ] &&
		ok "nothing built or run" || not_ok "nothing built or run: $(ls -A "$scratch/cache" | tr '\n' ' ')"
	bug=$(ls "$top"/kernel-patches/xfs-rmap-keys/bug-*.patch)
	check 0 "--dry-run of a series that applies" "$gate" --dry-run --base patched --results "$scratch/dry" "$bug"
	contains "the dry run names the culprit search" "each flipped row bisected inside the series"
	[ ! -e "$scratch/dry" ] && ok "the dry run writes no results" || not_ok "the dry run writes no results"
else
	echo "# no kernel tree in $KREPRO_TREE: series checks skipped"
fi
summary
