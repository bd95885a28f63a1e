#!/usr/bin/env bash
# gate.sh's bad input: no series, missing patches, a bad --repeat, and a series
# that does not apply (named by patch and hunk, exit 128, nothing built,
# unpacked or cloned: on a user's tree of the test's own, and on the flavours'
# tree when the cache has it; without it those checks are skipped).
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

# Nothing unpacked, cloned or written before the series is checked, in a
# cache of the test's own. tar and apt-get fail loudly here: a gate that
# would unpack linux-source (or install it) stops at once instead.
mkdir -p "$scratch/shim" "$scratch/own"
for t in tar apt-get; do
	printf '#!/bin/sh\necho "%s called: the gate unpacks or installs" >&2\nexit 99\n' "$t" >"$scratch/shim/$t"
	chmod +x "$scratch/shim/$t"
done
in_own() { KREPRO_CACHE=$scratch/own PATH=$scratch/shim:$PATH "$@"; }
own_empty() { # description
	[ -z "$(ls -A "$scratch/own")" ] && ok "$1" || not_ok "$1: $(ls -A "$scratch/own" | tr '\n' ' ')"
}
check 0 "--dry-run on a cache without the tree" in_own "$gate" --dry-run --base patched --repros xfs-rmap-keys \
	"$top/kernel-patches/xfs-rmap-keys"
contains "the dry run says the series is not checked" "series: not checked: no $KREPRO_BRANCH tree"
own_empty "the dry run unpacks no tree"
# A user's tree: the series is checked in its objects, before it is cloned.
user=$scratch/user
mkdir -p "$user/fs"
printf 'VERSION = 6\nPATCHLEVEL = 1\n' >"$user/Makefile"
printf 'one\ntwo\nthree\nfour\nfive\n' >"$user/fs/a.c"
git -C "$user" init -q && git -C "$user" add -A &&
	git -C "$user" -c user.name=t -c user.email=t@t commit -qm base
cat >"$scratch/stale.patch" <<'PATCH'
diff --git a/fs/a.c b/fs/a.c
--- a/fs/a.c
+++ b/fs/a.c
@@ -1,3 +1,3 @@
 one
-not in the tree
+two
 three
PATCH
sed 's/^-not in the tree$/-two/;s/^+two$/+zwei/' "$scratch/stale.patch" >"$scratch/fits.patch"
objects() { find "$user/.git/objects" -type f | LC_ALL=C sort | sha256sum; }
before=$(objects)
check 128 "a patch that does not apply on a user's tree" in_own "$gate" --base "$user" --repros xfs-rmap-keys \
	--results "$scratch/run" "$scratch/stale.patch"
contains "git's words name the file and line" "patch failed: fs/a.c:1"
contains "the hunk is named" "hunk @@ -1,3 +1,3 @@"
[ "$(wc -l <<<"$LAST")" -eq 1 ] && ok "the refusal is one line" || not_ok "the refusal is one line: $LAST"
own_empty "no clone of the tree made" && [ ! -e "$scratch/run" ] && ok "no run directory made" ||
	not_ok "no run directory made"
check 0 "--dry-run of a series that applies on a user's tree" in_own "$gate" --dry-run --base "$user" \
	--repros xfs-rmap-keys "$scratch/fits.patch"
contains "the dry run says the series applies" "series: 1 patch(es) apply on $user"
own_empty "the dry run clones nothing"
[ "$(objects)" = "$before" ] && ok "nothing written into the user's tree" ||
	not_ok "nothing written into the user's tree"

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
	contains "names the file and hunk" "patch failed: fs/xfs/xfs_iomap.c:"
	contains "names the hunk" ", hunk @@ -"
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
