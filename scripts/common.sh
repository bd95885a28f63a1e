# Shared shell definitions for krepro's host scripts. Sourced, not run.
# shellcheck shell=bash

KREPRO_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KREPRO_CACHE=${KREPRO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/krepro}
KREPRO_ARCH=${KREPRO_ARCH:-x86_64}
# Guest architectures: the rows of scripts/arches.tsv (the host runner reads
# the same table); each has kernel-patches/config/<arch>.config.
KREPRO_ARCH_TABLE=$KREPRO_TOP/scripts/arches.tsv
KREPRO_ARCHES=$(awk -F'\t' '!/^#/ && NF { printf "%s%s", sep, $1; sep = " " }' "$KREPRO_ARCH_TABLE")
case " $KREPRO_ARCHES " in *" $KREPRO_ARCH "*) ;; *)
	printf 'krepro: error: KREPRO_ARCH=%s: known arches are %s\n' "$KREPRO_ARCH" "$KREPRO_ARCHES" >&2
	exit 128 ;;
esac
# Stable branches: the rows of scripts/branches.tsv; the first is the default.
KREPRO_BRANCH_TABLE=$KREPRO_TOP/scripts/branches.tsv
KREPRO_BRANCHES=$(awk -F'\t' '!/^#/ && NF { printf "%s%s", sep, $1; sep = " " }' "$KREPRO_BRANCH_TABLE")
KREPRO_BRANCH=${KREPRO_BRANCH:-${KREPRO_BRANCHES%% *}}
case " $KREPRO_BRANCHES " in *" $KREPRO_BRANCH "*) ;; *)
	printf 'krepro: error: KREPRO_BRANCH=%.40s: known branches are %s\n' "$KREPRO_BRANCH" "$KREPRO_BRANCHES" >&2
	exit 128 ;;
esac
# The branch's kernel tree: Debian's linux-source-<branch> as a git repository,
# so flavours are git branches and switching between them rewrites only the
# files that differ.
KREPRO_TREE=$KREPRO_CACHE/linux-$KREPRO_BRANCH
KREPRO_KERNELS=${KREPRO_KERNELS:-$KREPRO_CACHE/kernels}
KREPRO_FLAVOURS="unpatched patched"
export CCACHE_DIR=${CCACHE_DIR:-$KREPRO_CACHE/ccache}

# A kernel tree's VERSION.PATCHLEVEL from its top Makefile ("tree" if none).
tree_version() {
	awk -F' *= *' '$1 == "VERSION" { v = $2 } $1 == "PATCHLEVEL" { p = $2 }
		NR == 20 { exit } END { print (v != "" && p != "") ? v "." p : "tree" }' "$1/Makefile" 2>/dev/null || echo tree
}

# A message that may echo input, as one safe line: control characters (a
# newline, an escape) shown as '?', a word over 200 characters cut.
say() {
	printf '%s' "$*" | LC_ALL=C tr '\000-\037\177' '?' | LC_ALL=C awk '{
		for (i = 1; i <= NF; i++) if (length($i) > 200)
			$i = substr($i, 1, 100) "...(" length($i) " characters)..." substr($i, length($i) - 7)
		print }'
}

# ccache_paths TREE OBJ: what lets one tree's objects serve another's build.
# kbuild names the sources by TREE's absolute path, so ccache would key every
# object on where the tree is. Where TREE and OBJ share a root in the cache
# (ROOT/linux-B and ROOT/build/B/ARCH: the flavours' trees, and the scratch
# trees of bisect and the gate, which copy that layout), CCACHE_BASEDIR=ROOT
# makes the paths relative, the same for every such tree: a tree with the
# flavours' sources builds from the cache. The debug info gets tree-relative
# names (decoded traces say kernel/fork.c, not one tree's path); ccache makes
# these maps relative too, so they key alike in every such tree, and
# NOHASHDIR keeps the object directory out of the key.
ccache_paths() {
	local tree obj root rel
	tree=$(realpath "$1") obj=$(realpath -m "$2")
	root=$tree
	while [ "$root" != / ] && [ "${obj#"$root"/}" = "$obj" ]; do root=$(dirname "$root"); done
	rel=$(realpath -m --relative-to="$obj" "$tree")
	unset CCACHE_BASEDIR
	case $root/ in "$(realpath -m "$KREPRO_CACHE")"/*) export CCACHE_BASEDIR=$root ;; esac
	export CCACHE_NOHASHDIR=1
	# kbuild maps only the absolute tree out of __FILE__ (BUG and WARN lines);
	# with the relative paths it must map those too.
	KREPRO_KCFLAGS="-fmacro-prefix-map=$rel/= -fdebug-prefix-map=$obj=. -fdebug-prefix-map=$tree/= -fdebug-prefix-map=$rel/="
}

# Every git krepro runs: nothing of the repository's configuration runs on
# its own (its hooks, an fsmonitor hook, an ssh command: a --base or a
# user's tree is someone else's, its .git/config too), no optional lock is
# taken (a status never rewrites a tree's index), and what krepro commits
# in its own trees is krepro's. The host runner's safe_git
# (scripts/krepro/untrusted.py) passes the same.
safe_git() {
	git --no-optional-locks -c core.fsmonitor= -c core.hooksPath=/dev/null -c core.sshCommand=false \
		-c user.name=krepro -c user.email=krepro@localhost "$@"
}

log() { printf 'krepro: %s\n' "$(say "$*")" >&2; }
die() { printf 'krepro: error: %s\n' "$(say "$*")" >&2; exit "${KREPRO_DIE_CODE:-1}"; }
# Bad input before any work: one line and 128 (git bisect run stops).
usage_die() { KREPRO_DIE_CODE=128 die "$*"; }

# help_header "$1": when it is -h or --help, the running script's header
# comment (its usage, from after the #! line to the first line that is no
# comment) on stdout, and exit 0 having done nothing else.
help_header() {
	case ${1:-} in -h | --help) ;; *) return 0 ;; esac
	awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"
	exit 0
}

# nearest WORD CANDIDATE...: the candidate WORD was meant to be, for "did you
# mean": the one it is a prefix of (at least 3 characters), else the nearest
# by edit distance when that is at most a third of its length; case ignored.
nearest() {
	local w=${1:0:100}
	w=${w//[^[:print:]]/}
	w=${w//\\/}
	shift
	printf '%s\n' "$@" | LC_ALL=C awk -v w="$w" '
		function min3(x, y, z) { return x < y ? (x < z ? x : z) : (y < z ? y : z) }
		# Edit distance, a swap of two letters counted as one typo.
		function dist(a, b,   i, j, d, x) {
			for (i = 0; i <= length(a); i++) d[i, 0] = i
			for (j = 0; j <= length(b); j++) d[0, j] = j
			for (i = 1; i <= length(a); i++) for (j = 1; j <= length(b); j++) {
				x = min3(d[i - 1, j] + 1, d[i, j - 1] + 1,
					d[i - 1, j - 1] + (substr(a, i, 1) != substr(b, j, 1)))
				if (i > 1 && j > 1 && substr(a, i - 1, 2) == substr(b, j, 1) substr(b, j - 1, 1) &&
					d[i - 2, j - 2] + 1 < x)
					x = d[i - 2, j - 2] + 1
				d[i, j] = x
			}
			return d[length(a), length(b)]
		}
		BEGIN { w = tolower(w); lim = int(length(w) / 3); if (lim < 1) lim = 1 }
		length(w) >= 3 && index(tolower($0), w) == 1 && pre == "" { pre = $0 }
		{ k = dist(w, tolower($0)); if (best == "" || k < bk) { best = $0; bk = k } }
		END { if (pre != "") print pre; else if (best != "" && bk <= lim) print best }'
}

# parse_opts SPEC ARG...: the arguments into the array OPTS as every entry
# point takes them: "--opt value" and "--opt=value" alike (both become
# "--opt" "value"), -h for --help, and the rest in their order. SPEC names the
# options, "name:" one that takes a value; an unknown option is refused with
# the nearest known one, before any work. After "--" every argument is kept.
parse_opts() {
	local spec=" $1 " a name s known=(--help)
	shift
	for s in $spec; do known+=("--${s%:}"); done
	OPTS=()
	while [ $# -gt 0 ]; do
		a=$1
		shift
		case $a in
		--) OPTS+=(-- "$@"); return 0 ;;
		-h | --help) OPTS+=(--help) ;;
		--help=*) usage_die "--help takes no value" ;;
		--*)
			name=${a%%=*}
			name=${name#--}
			[[ $name =~ ^[a-z][a-z0-9-]*$ ]] || name=
			case $spec in
			*" $name: "*)
				if [[ $a == *=* ]]; then
					OPTS+=("--$name" "${a#*=}")
				elif [ $# -gt 0 ]; then
					OPTS+=("--$name" "$1")
					shift
				else
					usage_die "--$name needs a value"
				fi
				# An empty value would pass for the option not given.
				[ -n "${OPTS[-1]}" ] || usage_die "--$name wants a value, not an empty one" ;;
			*" $name "*)
				[[ $a == *=* ]] && usage_die "--$name takes no value, not '${a#*=}'"
				OPTS+=("--$name") ;;
			*) unknown_option "$a" "${known[@]}" ;;
			esac ;;
		-?*) unknown_option "$a" "${known[@]}" ;;
		*) OPTS+=("$a") ;;
		esac
	done
}

# unknown_option ARG KNOWN...: the usage error for ARG, with the option meant.
unknown_option() {
	local a=${1%%=*} near
	shift
	near=$(nearest "$a" "$@")
	usage_die "unknown option $a${near:+; did you mean $near? (options are never abbreviated)} (see --help)"
}

# Install Debian packages that are missing; a no-op when all are there.
need_pkgs() {
	local missing=() p
	for p in "$@"; do
		# One status line per installed arch (a library of two arches).
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qx 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		die "missing packages: ${missing[*]} (run: sudo apt-get install ${missing[*]})"
	fi
	log "installing ${missing[*]}"
	local rec=--no-install-recommends
	[ -n "${KREPRO_APT_RECOMMENDS:-}" ] && rec=
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y $rec \
		"${missing[@]}" >"$KREPRO_CACHE/apt.log" 2>&1; then
		apt_update
		DEBIAN_FRONTEND=noninteractive apt-get install -y $rec \
			"${missing[@]}" >>"$KREPRO_CACHE/apt.log" 2>&1 ||
			die "apt-get install ${missing[*]} failed; see $KREPRO_CACHE/apt.log"
	fi
}

# Enable a Debian foreign architecture (armhf: the ARM guest's busybox and
# Debian's armmp kernel, downloaded, never installed). The next need_pkgs
# install fails on the stale lists, then updates.
need_foreign_arch() {
	dpkg --print-foreign-architectures | grep -qxF "$1" && return 0
	[ "$(id -u)" -eq 0 ] || die "Debian architecture $1 missing (run: sudo dpkg --add-architecture $1)"
	log "adding Debian architecture $1"
	dpkg --add-architecture "$1"
	apt_update
}

# apt-get update, tried three times. A mirror in mid-sync serves an index
# whose size disagrees with its Release file ("Mirror sync in progress?")
# for a minute or two. If every try fails, go on with the lists apt has:
# the install that follows names any package they cannot give.
apt_update() {
	local try
	for try in 1 2 3; do
		apt-get -o Acquire::Retries=3 update >>"$KREPRO_CACHE/apt.log" 2>&1 && return 0
		if [ "$try" -lt 3 ]; then
			log "apt-get update failed (try $try of 3), again in $((try * 30)) s; see $KREPRO_CACHE/apt.log"
			sleep $((try * 30))
		fi
	done
	log "warning: apt-get update failed 3 times; installing from the package lists apt has (see $KREPRO_CACHE/apt.log)"
}

# Debian package PKG of KREPRO_ARCH's Debian architecture, downloaded (never
# installed) and unpacked once per version under $KREPRO_CACHE/<debarch>/;
# prints the directory it is unpacked in. Installing a foreign library would
# tie it to the host's version of the same library (multiarch lockstep).
foreign_deb() {
	local pkg=$1 debarch ver dir
	debarch=$(arch_field debarch)
	need_foreign_arch "$debarch"
	ver=$(apt-cache policy "$pkg:$debarch" | sed -n 's/^ *Candidate: //p')
	[ -n "$ver" ] && [ "$ver" != "(none)" ] || die "no $pkg:$debarch in the apt lists"
	# No colon (an epoch) in the path: it lands in make dependencies.
	dir=$KREPRO_CACHE/$debarch/${pkg}_${ver//:/_}
	if [ ! -d "$dir" ]; then
		log "fetching $pkg:$debarch $ver"
		rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
		(cd "$dir.tmp" && apt-get download "$pkg:$debarch=$ver" >/dev/null 2>&1 &&
			dpkg-deb -x ./*.deb root) || die "apt-get download $pkg:$debarch failed"
		mv "$dir.tmp/root" "$dir" && rm -rf "$dir.tmp"
	fi
	echo "$dir"
}

# table_field TABLE FIRST KEY COL: column COL of row KEY of one of krepro's
# tab-separated tables, whose header line is "#FIRST\t..." ("-" prints
# nothing); the host runner reads them too (scripts/krepro/tables.py).
table_field() {
	awk -F'\t' -v first="#$2" -v key="$3" -v col="$4" '
		$1 == first { for (i = 1; i <= NF; i++) if (i == 1 ? "#" col == first : $i == col) c = i; next }
		/^#/ || !NF { next }
		$1 == key && c { v = $c; if (v == "-") v = ""; print v; found = 1 }
		END { exit !(c && found) }' "$1" ||
		die "${1#"$KREPRO_TOP"/} has no column $4 for $3"
}

# A column of KREPRO_ARCH's row of scripts/arches.tsv.
arch_field() { table_field "$KREPRO_ARCH_TABLE" arch "$KREPRO_ARCH" "$1"; }

# Host packages for building and booting KREPRO_ARCH's guests.
need_arch_pkgs() {
	local deb
	deb=$(arch_field debarch)
	if [ "$deb" = "$(dpkg --print-architecture)" ]; then
		need_pkgs "$(arch_field qemu_pkg)" busybox-static zlib1g-dev
	else
		need_foreign_arch "$deb"
		need_pkgs "$(arch_field qemu_pkg)" "gcc-$(arch_field cross | sed 's/-$//')" \
			"libc6-dev-$deb-cross"
	fi
}

# A column of KREPRO_BRANCH's row of scripts/branches.tsv.
branch_field() { table_field "$KREPRO_BRANCH_TABLE" branch "$KREPRO_BRANCH" "$1"; }

# Image path of a built flavour: <image name>-<branch>-<arch>-<flavour>.
kernel_image() {
	echo "$KREPRO_KERNELS/$(basename "$(arch_field image)")-$KREPRO_BRANCH-$KREPRO_ARCH-$1"
}

# The cache is used from here on (the scripts and make change directory):
# an absolute path this user can make and write, or one line and 128.
case $KREPRO_CACHE in /*) ;; *) usage_die "KREPRO_CACHE=$KREPRO_CACHE: not an absolute path" ;; esac
[ ! -e "$KREPRO_CACHE" ] || [ -d "$KREPRO_CACHE" ] ||
	usage_die "KREPRO_CACHE=$KREPRO_CACHE: not a directory (krepro keeps its kernels, disks and locks there)"
mkdir -p "$KREPRO_CACHE" 2>/dev/null && [ -w "$KREPRO_CACHE" ] ||
	usage_die "KREPRO_CACHE=$KREPRO_CACHE: cannot make or write it"
