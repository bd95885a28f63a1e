#!/usr/bin/env bash
# The stable-candidate gate: build BASE and BASE+SERIES, run every reproducer on
# both, and name what changed.
#
# usage: gate.sh [--branch B] [--base B] [--repeat N] [--results DIR] [--repros "a b"]
#                [--no-bisect] [--dry-run] SERIES...
#
# Every option takes its value as --opt VALUE or --opt=VALUE.
#
#   SERIES          patch files (git format-patch mails), or directories whose
#                   *.patch files are taken in name order; applied in the order given
#   --branch B      stable branch of the flavours --base names: 6.1 | 6.12 (default
#                   6.1, or KREPRO_BRANCH)
#   --base B        unpatched | patched (krepro's flavours; default patched) | PATH
#                   to a git kernel tree (its HEAD commit; the tree is not touched:
#                   the gate works in a clone under the cache)
#   --miss P        target miss probability of a clean row (default: run-in-qemu.sh's):
#                   each row runs until its verdict is that sure (run-in-qemu.sh --miss)
#   --repeat N      a fixed N guests per reproducer and kernel instead
#   --arch A        guest arch: x86_64 | arm (default x86_64, or KREPRO_ARCH);
#                   the kernels are built and booted for it
#   --repros "a b"  reproducers to run (default: all of --arch's, run-in-qemu.sh --list)
#   --results DIR   run directory (default results/gate-<time>)
#   --no-bisect     name no culprit patch: compare the two kernels and stop
#   --dry-run       check the options and that the series applies, say what
#                   would be built, run and bisected; build, boot, unpack and
#                   clone nothing (only the cache directory is made, if
#                   missing). With no flavour tree in the cache yet, it says
#                   so: a run checks the series after the one unpack
#
# Prints the reproducers that went PASS->FAIL or PASS->OTHER (regressions: a
# FAIL, or a kernel report that is not the reproducer's bug, on BASE+SERIES),
# FAIL->PASS (fixes), unchanged, and undecided (BROKEN, SKIP, HANG or undecided
# on one side); writes gate.md and the usual reports into the run directory.
# Then each flipped row is bisected inside the series, in the gate's own tree
# and object directory (python3 -m krepro help gate): gate.md names the patch
# that broke it (for a fix, the first that cures it), or why none was named.
#
# Exit status: 0 no regression, 1 a regression, 125 no regression but a row
# undecided, 128 bad input (an unknown option or reproducer, a value out of
# range, a missing patch, a series patch that does not apply: the patch and
# hunk are named, with git's "patch failed: FILE:LINE"; nothing is built or
# cloned, and nothing unpacked but a flavour's tree the cache lacked, to
# check the series on), 130 interrupted (the culprit search included).
# A culprit changes none of these:
# a regression is 1 whether its patch was named, named with doubts, or not
# named (gate.md says why).
set -uo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/scripts/common.sh"
KREPRO_DIE_CODE=128
KERNELS=$TOP/scripts/kernels.sh

usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; }

base=patched repeat= miss= results= repros= items=() bisect=1 dry=
parse_opts "base: repeat: miss: results: repros: arch: branch: no-bisect dry-run" "$@"
set -- "${OPTS[@]}"
while [ $# -gt 0 ]; do
	case $1 in
	--base) base=$2; shift ;;
	--repeat) repeat=$2; shift ;;
	--miss) miss=$2; shift ;;
	--results) results=$2; shift ;;
	--repros) repros=$2; shift ;;
	--arch) KREPRO_ARCH=$2; shift ;;
	--branch) KREPRO_BRANCH=$2; shift ;;
	--no-bisect) bisect= ;;
	--dry-run) dry=1 ;;
	--help) usage; exit 0 ;;
	--) shift; items+=("$@"); break ;;
	*) items+=("$1") ;;
	esac
	shift
done
case " $KREPRO_ARCHES " in *" $KREPRO_ARCH "*) ;; *) die "--arch is one of: $KREPRO_ARCHES" ;; esac
case " $KREPRO_BRANCHES " in *" $KREPRO_BRANCH "*) ;; *) die "--branch is one of: $KREPRO_BRANCHES" ;; esac
KREPRO_TREE=$KREPRO_CACHE/linux-$KREPRO_BRANCH
# kernels.sh and run-in-qemu.sh take the arch and branch from the environment.
export KREPRO_ARCH KREPRO_BRANCH
[ ${#items[@]} -gt 0 ] || die "no SERIES given (patch files or directories; see --help)"
[ -z "$repeat" ] || [[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat wants a positive number, not '$repeat'"
if [ -n "$results" ] && [ -e "$results/run.json" ]; then
	die "--results $results holds a past run (run.json): give a new directory"
fi

# A series is input from someone else: a directory's *.patch entries are
# each a regular file of its own (a link, a FIFO or a device is refused, not
# skipped or read), every patch holds a diff and is of a patch's size.
patches=()
for it in "${items[@]}"; do
	if [ -d "$it" ]; then
		mapfile -t found < <(find "$it" -maxdepth 1 -name '*.patch' | LC_ALL=C sort)
		[ ${#found[@]} -gt 0 ] || die "SERIES directory $it holds no *.patch files"
		for p in "${found[@]}"; do
			[ -f "$p" ] && [ ! -L "$p" ] ||
				die "SERIES $p: not a regular file (a link, a FIFO or a device is not read)"
		done
		patches+=("${found[@]}")
	elif [ -f "$it" ]; then
		patches+=("$it")
	elif [ -e "$it" ]; then
		die "SERIES $it: not a regular file or a directory"
	else
		die "SERIES: no such patch file or directory: $it"
	fi
done
for p in "${patches[@]}"; do
	[ "$(stat -L -c %s -- "$p")" -le $((64 << 20)) ] || die "SERIES $p: more than 64 MiB, not a patch"
	grep -qm1 -e '^diff ' -e '^--- ' -- "$p" || die "SERIES $p: no diff in it (a patch, git format-patch's mail)"
done
for i in "${!patches[@]}"; do patches[i]=$(realpath "${patches[$i]}"); done

if [ -z "$repros" ]; then repros=$("$TOP/run-in-qemu.sh" --list) || exit 128; fi
# shellcheck disable=SC2206
repro_list=($repros)
[ ${#repro_list[@]} -gt 0 ] || die "--repros names no reproducer"
# The run's own checks (names, --miss, --repeat, --results), before the tree is unpacked
# or anything is built: the dry run reads files only.
"$TOP/run-in-qemu.sh" --dry-run --kernel unpatched ${results:+--results "$results" --replace} ${miss:+--miss "$miss"} ${repeat:+--repeat "$repeat"} \
	"${repro_list[@]}" >/dev/null || exit 128
case $base in
unpatched | patched) ;;
*)
	[ -d "$base" ] && safe_git -C "$base" rev-parse -q --verify HEAD >/dev/null 2>&1 ||
		die "--base $base: not unpatched, patched or a git kernel tree"
	;;
esac

# The base: a flavour's series on the cache tree, or a user's tree at HEAD.
# The series is checked on it in git's objects (kernels.sh check-series
# writes nothing of the tree) before anything is unpacked, cloned or built;
# a flavour's tree that is not unpacked yet is checked after its one unpack.
base_patches=()
checked=1
case $base in
unpatched | patched)
	tree=$KREPRO_TREE src=$KREPRO_TREE ref=pristine name=$base
	mapfile -t base_patches < <("$KERNELS" series "$base")
	if ! safe_git -C "$tree" rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
		if [ -n "$dry" ]; then
			checked=
		else
			KREPRO_DIE_CODE=125 "$KERNELS" tree || exit 125
		fi
	fi
	;;
*)
	src=$(realpath "$base")
	ref=$(safe_git -C "$src" rev-parse HEAD)
	# Laid out as the flavours' trees (ROOT/linux-X.Y), so that its build
	# takes from ccache what it shares with them (kernels.sh tree_obj).
	tree=$KREPRO_CACHE/gate/trees/$(echo "$src" | sha256sum | cut -c1-12)/linux-$(tree_version "$src")
	name=tree
	;;
esac
if [ -n "$checked" ]; then
	"$KERNELS" check-series "$src" "$ref" "${base_patches[@]}" "${patches[@]}" || exit 128
	[ -n "$dry" ] || log "${#patches[@]} patch(es) apply on $base"
fi

if [ -n "$dry" ]; then
	n=${#patches[@]} steps=0
	while [ $((1 << steps)) -le "$n" ]; do steps=$((steps + 1)); done
	echo "gate: dry run: nothing is built, booted, unpacked or cloned"
	if [ -n "$checked" ]; then
		echo "series: $n patch(es) apply on $base"
	else
		echo "series: not checked: no $KREPRO_BRANCH tree in $KREPRO_CACHE yet; a run unpacks it once,"
		echo "  then checks that the series applies before anything is built"
	fi
	echo "builds: BASE ($base) and BASE+SERIES ($n patch(es)) in $tree"
	echo "rows: ${#repro_list[@]} reproducer(s) on both: ${repro_list[*]}"
	if [ -n "$bisect" ]; then
		echo "culprits: each flipped row bisected inside the series in $tree: the series' tip (built"
		echo "  already), BASE, about $steps search steps, the culprit again and a revert: about"
		echo "  $((steps + 4)) builds for the first row; a commit built for one row is not built again"
	else
		echo "culprits: none searched (--no-bisect)"
	fi
	exit 0
fi

if [ "$name" = tree ]; then
	# The user's tree at HEAD, fetched into a clone of the gate's own so
	# their checkout stays as it is.
	[ -z "$(safe_git -C "$src" status --porcelain --untracked-files=no)" ] ||
		log "warning: $src has uncommitted changes: the gate builds its HEAD commit only"
	if [ ! -d "$tree/.git" ]; then
		log "cloning $src into $tree (shared objects, nothing written to $src)"
		safe_git clone -q --shared --no-checkout "$src" "$tree" || die "cannot clone $src"
	fi
	safe_git -C "$tree" fetch -q "$src" "$ref" 2>/dev/null || safe_git -C "$tree" fetch -q "$src" HEAD ||
		die "cannot fetch $ref from $src"
fi

if [ -z "$results" ]; then
	results=$TOP/results/gate-$(date +%Y%m%d-%H%M%S)
	[ -e "$results" ] && results=$results-$$
fi
mkdir -p "$results/kernels" || die "cannot create $results"
results=$(realpath "$results")
printf '%s\n' "${patches[@]}" >"$results/series.txt"

# The gate's images live apart from the flavours' (never overwritten by it);
# the cache tree's object directory is shared, so a build is incremental.
export KREPRO_KERNELS=$KREPRO_CACHE/gate/kernels
t0=$(date +%s)
log "building BASE ($base)"
KREPRO_DIE_CODE=125 "$KERNELS" build-series "gate-$name" "$tree" "$ref" "${base_patches[@]}" || exit 125
log "building BASE+SERIES ($base + ${#patches[@]} patch(es))"
KREPRO_DIE_CODE=125 "$KERNELS" build-series "gate-$name-series" "$tree" "$ref" "${base_patches[@]}" "${patches[@]}" || exit 125
ln -sfn "$(kernel_image "gate-$name")" "$results/kernels/base"
ln -sfn "$(kernel_image "gate-$name-series")" "$results/kernels/base+series"
log "kernels built in $(($(date +%s) - t0)) s; running ${#repro_list[@]} reproducer(s) on both"
unset KREPRO_KERNELS

# --replace: the directory is the gate's own, with its kernels and series in it.
"$TOP/run-in-qemu.sh" --results "$results" --replace ${miss:+--miss "$miss"} ${repeat:+--repeat "$repeat"} \
	--kernel "$results/kernels/base" --kernel "$results/kernels/base+series" "${repro_list[@]}"
status=$?
[ "$status" -eq 130 ] && { log "interrupted: what finished is in $results"; exit 130; }
[ "$status" -ge 128 ] && die "run-in-qemu.sh refused its arguments (exit $status, see above)"
echo
# The series as commits: GOOD (BASE) is the commit before the first series
# patch on the series branch; the gate's Python checks each commit against
# its patch before it builds anything.
culprit_args=()
if [ -n "$bisect" ]; then
	if bad=$(safe_git -C "$tree" rev-parse -q --verify "krepro-x-gate-$name-series^{commit}") &&
		good=$(safe_git -C "$tree" rev-parse -q --verify "$bad~${#patches[@]}^{commit}"); then
		culprit_args=(--tree "$tree" --good "$good" --bad "$bad")
	else
		log "warning: no branch krepro-x-gate-$name-series with ${#patches[@]} commits in $tree: no culprit search"
	fi
fi
PYTHONPATH="$TOP/scripts" python3 -m krepro gate "$results" base base+series "${culprit_args[@]}"
