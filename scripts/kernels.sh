#!/usr/bin/env bash
# Build krepro's kernel flavours from Debian's linux-source-<branch>
# (KREPRO_BRANCH, a row of scripts/branches.tsv; default the first, 6.1).
#
#   kernels.sh tree              install and unpack the source as a git repo (tag: pristine)
#   kernels.sh series FLAVOUR    print the patches that make FLAVOUR, in order
#   kernels.sh build [FLAVOUR..] build the flavours that are missing or stale
#   kernels.sh stale FLAVOUR     print "stale" when FLAVOUR needs a build
#   kernels.sh stamp FLAVOUR     print the build stamp FLAVOUR's image will carry
#   kernels.sh check-patches     every patch applies; bug+fix is a no-op
#   kernels.sh check-series [-R] TREE BASE PATCH...
#                                PATCHes apply in order on commit BASE of git TREE
#                                (-R: in reverse, last first); nothing of TREE is
#                                written (names the patch and hunk that does not
#                                apply; exit 128)
#   kernels.sh build-series NAME TREE BASE PATCH...
#                                TREE at BASE + PATCHes, built as image NAME (not a
#                                flavour name): the gate's kernels
#   kernels.sh build-tree DIR    a user's own kernel tree, built out of tree; prints
#                                the image path (exit 125 when it is no kernel tree
#                                or does not build). The cache's tree is built in
#                                the flavours' object directory, as build-series
#                                builds it (the gate's culprit search)
#   kernels.sh obj-dir DIR       the object directory build-tree builds DIR in (the
#                                one place that layout is decided)
#   kernels.sh clean-bisect      remove the scratch clones of krepro bisect, fixcheck and the
#                                gate, and build-tree's copies of trees outside the
#                                cache (with their object directories); say what
#                                that freed; the flavours and ccache stay
#
# unpatched = pristine + every bug dir's context*, window*, bug* patches
# patched   = unpatched + every bug dir's fix* patches
# A bug dir is kernel-patches/<id>/ for the first branch, and its subdirectory
# named in scripts/branches.tsv for another (kernel-patches/<id>/6.12/).
# Both are built in one object directory: the second build recompiles only the
# files the fixes touch. Images land in $KREPRO_CACHE/kernels with the flavour in
# their name, with the .config and a build log beside them.
set -euo pipefail
. "$(dirname "$0")/common.sh"

PATCHES=${KREPRO_PATCHES:-$KREPRO_TOP/kernel-patches}
OBJ=${KREPRO_OBJ:-$KREPRO_CACHE/build/$KREPRO_BRANCH/$KREPRO_ARCH}
# Compile jobs: every core unless told (KREPRO_JOBS is the guests' count, not this).
JOBS=${KREPRO_BUILD_JOBS:-$(nproc)}

git_tree() { safe_git -C "$KREPRO_TREE" "$@"; }

cmd_tree() {
	if git_tree rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
		return 0
	fi
	local pkg tarball version
	pkg=$(branch_field package)
	need_pkgs "$pkg" git xz-utils
	tarball=$(ls "/usr/src/$pkg.tar.xz" 2>/dev/null) ||
		die "$pkg is installed but /usr/src/$pkg.tar.xz is missing"
	version=$(dpkg-query -W -f='${Version}' "$pkg")
	log "unpacking $pkg $version into $KREPRO_TREE"
	rm -rf "$KREPRO_TREE" "$KREPRO_TREE.tmp"
	mkdir -p "$KREPRO_TREE.tmp"
	tar -xJf "$tarball" -C "$KREPRO_TREE.tmp" --strip-components=1
	safe_git -C "$KREPRO_TREE.tmp" init -q -b krepro-pristine
	safe_git -C "$KREPRO_TREE.tmp" config user.name krepro
	safe_git -C "$KREPRO_TREE.tmp" config user.email krepro@localhost
	safe_git -C "$KREPRO_TREE.tmp" config gc.auto 0
	# The tarball's own .gitignore files would hide shipped files (e.g. generated
	# headers Debian includes); -f takes the tree exactly as Debian ships it.
	safe_git -C "$KREPRO_TREE.tmp" add -A -f .
	safe_git -C "$KREPRO_TREE.tmp" commit -q -m "Debian $pkg $version"
	safe_git -C "$KREPRO_TREE.tmp" tag pristine
	mv "$KREPRO_TREE.tmp" "$KREPRO_TREE"
}

# The bug dirs of this branch (a bug without patches for it has none here).
bug_dirs() {
	local d sub
	sub=$(branch_field patches)
	for d in "$PATCHES"/*/; do
		d=${d%/}
		[ "$(basename "$d")" = config ] && continue
		d=$d${sub:+/$sub}
		compgen -G "$d/*.patch" >/dev/null && echo "$d"
	done
	return 0
}

cmd_series() {
	local flavour=$1 d g f
	# unpatched: all bugs' context/window/bug; patched: the same, then all fixes.
	for g in context window bug $([ "$flavour" = patched ] && echo fix); do
		for d in $(bug_dirs); do
			for f in "$d"/"$g"*.patch; do [ -e "$f" ] && echo "$f"; done
		done
	done
	return 0
}

# A patch's code: its diffs, from the first "diff --git" to the mail's
# signature line, not its header or message, so rewording a patch's
# description leaves the kernel's stamp (and the rates recorded for it) alone.
patch_code_sums() {
	local p
	for p in "$@"; do
		printf '%s  %s\n' "$(sed -n '/^diff --git /,/^-- $/p' "$p" | sha256sum | cut -d' ' -f1)" \
			"${p#"$KREPRO_TOP"/}"
	done
}

# Hash of everything that decides a flavour's image. The source is named by
# its git tree (content only), so the stamp is the same on every machine: the
# recorded FAIL rates (repro/*/fail-rate.json) name the build by it.
flavour_stamp() {
	local flavour=$1 series
	mapfile -t series < <(cmd_series "$flavour")
	{
		git_tree rev-parse 'pristine^{tree}'
		echo "$KREPRO_ARCH"
		patch_code_sums "${series[@]}"
		config_fragments | xargs sha256sum | sed "s|$KREPRO_TOP/||"
	} | sha256sum | cut -d' ' -f1
}

# A fragment's arches: its "# krepro-arches:" line; without one, x86_64.
fragment_arches() {
	local a
	a=$(sed -n 's/^# krepro-arches://p' "$1")
	echo "${a:-x86_64}"
}

# base.config, the arch's own fragment, then every other fragment that names
# this arch (a bug's options go only into the kernels its reproducer runs on).
config_fragments() {
	local f a
	echo "$PATCHES/config/base.config"
	echo "$PATCHES/config/$KREPRO_ARCH.config"
	for f in "$PATCHES"/config/*.config; do
		case " base $KREPRO_ARCHES " in *" $(basename "$f" .config) "*) continue ;; esac
		a=$(fragment_arches "$f")
		case " $a " in *" $KREPRO_ARCH "*) echo "$f" ;; esac
	done
	return 0
}

# Put the tree on branch krepro-FLAVOUR = pristine + the flavour's series.
# Rebuilt from pristine only when the series changed, so an unchanged flavour
# costs a checkout of the files that differ and nothing else.
checkout_flavour() {
	local flavour=$1 branch=krepro-$1 want have series
	series=$(cmd_series "$flavour")
	want=$(printf '%s\n' "$series" | xargs -r sha256sum | sed "s|$KREPRO_TOP/||" | sha256sum | cut -d' ' -f1)
	have=$(git_tree config --get "krepro.$flavour-series" 2>/dev/null || true)
	git_tree am --abort >/dev/null 2>&1 || true
	if [ "$want" = "$have" ] && git_tree rev-parse -q --verify "$branch" >/dev/null; then
		git_tree checkout -q -f "$branch"
		return 0
	fi
	log "applying the $flavour series"
	git_tree checkout -q -f -B "$branch" pristine
	local p out
	for p in $series; do
		if ! out=$(git_tree am -q --no-3way "$p" 2>&1); then
			git_tree am --abort >/dev/null 2>&1 || true
			printf '%s\n' "$out" >&2
			die "patch ${p#"$KREPRO_TOP"/} does not apply to the $flavour tree (see the failing file and hunk above)"
		fi
	done
	git_tree config "krepro.$flavour-series" "$want"
}

# make_config [TREE OBJ STRICT]: allnoconfig + the fragments into OBJ/.config.
# STRICT (the flavours, the gate) stops when Kconfig drops a requested option;
# otherwise (a user's tree) it warns: the reproducers needing it will SKIP.
make_config() {
	local tree=${1:-$KREPRO_TREE} obj=${2:-$OBJ} strict=${3:-1} frags=() f
	mapfile -t frags < <(config_fragments)
	for f in "${frags[@]}"; do [ -f "$f" ] || die "missing config fragment ${f#"$KREPRO_TOP"/}"; done
	mkdir -p "$obj"
	# -n: start from allnoconfig, so only what the fragments ask for is built.
	# Kconfig asks the (cross) compiler what it supports: the same one as the build.
	(cd "$tree" && ARCH=$(kbuild_arch) CROSS_COMPILE=$(cross_compile) scripts/kconfig/merge_config.sh -n -O "$obj" "${frags[@]}") \
		>"$obj/merge_config.log" 2>&1 || {
		tail -20 "$obj/merge_config.log" >&2
		die "merge_config.sh failed; see $obj/merge_config.log"
	}
	# merge_config.sh only warns when Kconfig drops a requested option (an unmet
	# dependency); a reproducer would then SKIP or lie, so stop here instead.
	local line name val bad=()
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*)
			name=${line%%=*} val=${line#*=}
			grep -qxF "$name=$val" "$obj/.config" || bad+=("$line (got: $(grep -E "^(# )?$name[= ]" "$obj/.config" || echo unset))")
			;;
		"# CONFIG_"*" is not set")
			name=${line#"# "} name=${name%% *}
			grep -q "^$name=" "$obj/.config" && bad+=("$line (got: $(grep "^$name=" "$obj/.config"))")
			;;
		esac
	done < <(cat "${frags[@]}")
	if [ ${#bad[@]} -gt 0 ] && [ "$strict" = 0 ]; then
		log "warning: this tree's Kconfig dropped options krepro's fragments ask for;"
		log "reproducers that need them will SKIP and name them:"
		printf '  %s\n' "${bad[@]}" >&2
	elif [ ${#bad[@]} -gt 0 ]; then
		printf '  %s\n' "${bad[@]}" >&2
		die "the kernel config lacks options the fragments ask for (unmet dependencies?)"
	fi
}

# Object directory of a tree other than the cache's, one per path and arch
# (x86_64's keeps the name it had before there were other arches).
# A scratch tree of the cache laid out as the flavours' (ROOT/linux-B) gets
# ROOT/build/B/ARCH, so that ccache_paths finds the same relative paths.
tree_obj() {
	local h base cache
	base=$(basename "$1") cache=$(realpath -m "$KREPRO_CACHE")
	case $1 in "$cache"/*/linux-*)
		echo "$(dirname "$1")/build/${base#linux-}/$KREPRO_ARCH"
		return ;;
	esac
	h=$(echo "$1" | sha256sum | cut -c1-12)
	case $KREPRO_ARCH in
	x86_64) echo "$KREPRO_CACHE/build/tree-$h" ;;
	*) echo "$KREPRO_CACHE/build/tree-$KREPRO_ARCH-$h" ;;
	esac
}

# From scripts/arches.tsv, the table the host runner reads too.
kbuild_arch() { arch_field kbuild; }
cross_compile() { arch_field cross; }
cross_pkgs() { local c; c=$(cross_compile); [ -z "$c" ] || echo "gcc-${c%-}"; }
image_path_in_obj() { arch_field image; }


# make_kernel WHAT TREE OBJ LOG STAMP: the image, with a progress line every 30 s
# (files compiled so far against the last build in OBJ, elapsed time).
make_kernel() {
	local what=$1 tree=$2 obj=$3 logf=$4 ts=$5 pid t0 now last n i status
	last=$(cat "$obj/.krepro-compiled" 2>/dev/null || true)
	t0=$(date +%s)
	# A fixed build identity keeps init/version.c (and ccache) stable across builds.
	local cross
	cross=$(cross_compile)
	ccache_paths "$tree" "$obj"
	make -C "$tree" O="$obj" ARCH="$(kbuild_arch)" -j"$JOBS" \
		${cross:+CROSS_COMPILE="$cross"} CC="ccache ${cross}gcc" KBUILD_BUILD_USER=krepro KBUILD_BUILD_HOST=krepro \
		KBUILD_BUILD_TIMESTAMP="$ts" KCFLAGS="$KREPRO_KCFLAGS" \
		"$(basename "$(image_path_in_obj)")" >"$logf" 2>&1 &
	pid=$!
	i=0
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		i=$((i + 1))
		[ $((i % 30)) -eq 0 ] || continue
		now=$(date +%s)
		n=$(grep -c '^  CC ' "$logf" 2>/dev/null || true)
		log "building $what: ${n:-0} files compiled${last:+ (the last build here compiled $last)}, $(((now - t0) / 60))m$(((now - t0) % 60))s elapsed"
	done
	wait "$pid"
	status=$?
	[ "$status" -eq 0 ] && grep -c '^  CC ' "$logf" >"$obj/.krepro-compiled"
	return "$status"
}

# The packages a kernel build needs, the cross compiler included. Before
# make_config: Kconfig asks the (cross) compiler what it supports.
need_build_pkgs() {
	# shellcheck disable=SC2046
	need_pkgs build-essential bc bison flex libelf-dev libssl-dev ccache cpio kmod $(cross_pkgs)
}

# Is IMG built from what STAMP hashes, and is it what was installed?
image_current() { [ -f "$1" ] && [ "$(cat "$1.stamp" 2>/dev/null)" = "$2" ] && image_intact "$1"; }

# IMG's content against the hash written when it was installed (an image
# from before there were hashes has none: it is rebuilt once).
image_intact() {
	local want
	want=$(cat "$1.sha256" 2>/dev/null) || want=
	[ -n "$want" ] && [ "$want" = "$(sha256sum <"$1" | cut -d' ' -f1)" ] && return 0
	if [ -n "$want" ]; then
		log "$1 is damaged (its content does not match $1.sha256): it is rebuilt"
	fi
	return 1
}

# Builds configured TREE in OBJ and installs IMG with its .config, STAMP,
# build log and timing. DESC names the kernel in messages, LABEL in uname.
build_image() {
	local desc=$1 tree=$2 obj=$3 img=$4 stamp=$5 label=$6 t0 t1 logf=$4.build.log
	mkdir -p "$KREPRO_KERNELS"
	t0=$(date +%s)
	log "building $desc (make -j$JOBS, log: $logf)"
	if ! make_kernel "$desc" "$tree" "$obj" "$logf" "$label"; then
		grep -E 'error|Error' "$logf" | head -20 >&2
		die "kernel build failed; see $logf"
	fi
	t1=$(date +%s)
	cp "$obj/$(image_path_in_obj)" "$img"
	cp "$obj/.config" "$img.config"
	# The symbols of this very image, for gdb (run-in-qemu.sh --gdb): the
	# object directory's vmlinux is the last flavour built.
	cp "$obj/vmlinux" "$img.vmlinux"
	# The content's hash, then the stamp: an install cut short (a killed
	# build, a full disk) leaves no stamp, and a damaged image is caught by
	# its content (image_intact), not booted to BROKEN again and again.
	sha256sum <"$img" | cut -d' ' -f1 >"$img.sha256"
	echo "$stamp" >"$img.stamp"
	# For bench/: how long it took and how many files were compiled.
	printf 'seconds=%s compiled=%s ccache=%s\n' "$((t1 - t0))" \
		"$(grep -c '^  CC ' "$logf" || true)" "${CCACHE_DISABLE:+off}" >"$img.timing"
	log "$desc built in $((t1 - t0)) s: $img"
}

build_flavour() {
	local flavour=$1 img stamp
	img=$(kernel_image "$flavour")
	stamp=$(flavour_stamp "$flavour")
	if image_current "$img" "$stamp"; then
		log "$flavour kernel is up to date: $img"
		return 0
	fi
	need_build_pkgs
	checkout_flavour "$flavour"
	make_config
	build_image "the $flavour kernel" "$KREPRO_TREE" "$OBJ" "$img" "$stamp" "krepro $flavour"
}

# Builds hold the cache's machine lock exclusively; run-in-qemu.sh holds it
# shared while guests run: TCG guests stall beside a build (RCU stall reports),
# and two builds on 2 cores only slow each other.
machine_lock() {
	exec 9>"$KREPRO_CACHE/machine.lock"
	if ! flock -n 9; then
		log "waiting for guests or another build to finish (lock: $KREPRO_CACHE/machine.lock)"
		flock 9
	fi
}

# Every named flavour's image is current (the tree is unpacked and each
# stamp matches).
all_current() {
	local f
	git_tree rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1 || return 1
	for f; do
		image_current "$(kernel_image "$f")" "$(flavour_stamp "$f")" || return 1
	done
}

cmd_build() {
	local f
	[ $# -gt 0 ] || set -- $KREPRO_FLAVOURS
	# Nothing to build takes no lock: `make kernels` before a run does not
	# wait for other runs' guests to finish.
	if all_current "$@"; then
		for f in "$@"; do log "$f kernel is up to date: $(kernel_image "$f")"; done
		return 0
	fi
	machine_lock
	cmd_tree
	for f in "$@"; do build_flavour "$f"; done
}

# For every bug, pristine + context + window + bug + fix must equal
# pristine + context + window in every file. Checked in git's object store with a
# scratch index, so the work tree (and the build's mtimes) stay untouched.
cmd_check_patches() {
	cmd_tree
	local idx fails=0 d base full p
	idx=$(mktemp)
	trap 'rm -f "$idx" "$idx.lock"' RETURN
	apply_all() { # tree-ish patches... -> prints resulting tree id
		local start=$1 q
		shift
		GIT_INDEX_FILE=$idx git_tree read-tree "$start"
		for q in "$@"; do
			GIT_INDEX_FILE=$idx git_tree apply --cached "$q" 2>"$idx.err" || {
				echo "  ${q#"$KREPRO_TOP"/}: does not apply:" >&2
				sed 's/^/    /' "$idx.err" >&2
				return 1
			}
		done
		GIT_INDEX_FILE=$idx git_tree write-tree
	}
	for d in $(bug_dirs); do
		local id ctx=() bug=() fix=()
		id=${d#"$PATCHES"/}
		for p in "$d"/context*.patch "$d"/window*.patch; do [ -e "$p" ] && ctx+=("$p"); done
		for p in "$d"/bug*.patch; do [ -e "$p" ] && bug+=("$p"); done
		for p in "$d"/fix*.patch; do [ -e "$p" ] && fix+=("$p"); done
		if [ ${#bug[@]} -eq 0 ] || [ ${#fix[@]} -eq 0 ]; then
			echo "not ok - $id: needs at least one bug*.patch and one fix*.patch"
			fails=$((fails + 1))
			continue
		fi
		for p in "${ctx[@]}" "${bug[@]}" "${fix[@]}"; do
			grep -qE '^(Upstream|Context-of|Reverts): ' "$p" && grep -q '^Seed: ' "$p" || {
				echo "not ok - $id: ${p#"$KREPRO_TOP"/} lacks an 'Upstream:' and 'Seed:' header"
				fails=$((fails + 1))
				continue 2
			}
		done
		if ! base=$(apply_all pristine "${ctx[@]}") ||
			! full=$(apply_all pristine "${ctx[@]}" "${bug[@]}" "${fix[@]}"); then
			echo "not ok - $id: patches do not apply to pristine $KREPRO_BRANCH"
			fails=$((fails + 1))
			continue
		fi
		if [ "$base" != "$full" ]; then
			echo "not ok - $id: bug + fix is not a no-op; differences:"
			git_tree diff --stat "$base" "$full" | sed 's/^/    /'
			fails=$((fails + 1))
			continue
		fi
		if [ "$(apply_all pristine "${ctx[@]}" "${bug[@]}")" = "$base" ]; then
			echo "not ok - $id: the bug patch changes nothing"
			fails=$((fails + 1))
			continue
		fi
		echo "ok - $id: applies; context+bug+fix == context"
	done
	# The flavours as built: every bug's patches together, in series order.
	local fl
	for fl in $KREPRO_FLAVOURS; do
		# shellcheck disable=SC2046
		if apply_all pristine $(cmd_series "$fl") >/dev/null; then
			echo "ok - series $fl applies"
		else
			echo "not ok - series $fl does not apply"
			fails=$((fails + 1))
		fi
	done
	[ "$fails" -eq 0 ]
}

# Prints "stale" when FLAVOUR's image is missing or older than its inputs.
cmd_stale() {
	local img
	img=$(kernel_image "$1")
	if ! git_tree rev-parse -q --verify pristine >/dev/null 2>&1 ||
		! image_current "$img" "$(flavour_stamp "$1")"; then
		echo stale
	fi
}

# The stamp FLAVOUR's image will carry (the key of the recorded FAIL rates).
cmd_stamp() {
	git_tree rev-parse -q --verify pristine >/dev/null 2>&1 || cmd_tree >&2
	flavour_stamp "$1"
}

# --- triage builds: the gate's series and a user's own tree ---

# Apply PATCHes on BASE in a scratch index and a scratch object directory
# that reads TREE's objects (git's alternates): nothing of TREE is written,
# not a blob, so a dry run, or a user's tree before it is cloned, is checked
# as it is. With -R, the PATCHes reversed, last first (a fix in the tree
# already). On a patch that does not apply, one line names it with git's
# "patch failed: FILE:LINE" and the hunk, and the exit status is 128.
cmd_check_series() {
	local rev=
	[ "${1:-}" = -R ] && { rev=-R; shift; }
	[ $# -ge 2 ] || usage_error "check-series takes [-R] TREE BASE PATCH..."
	# A subshell: its EXIT trap removes the scratch directory however it ends.
	(check_series_in_scratch "$rev" "$@") || exit $?
}

check_series_in_scratch() {
	# scratch is not local: the subshell's EXIT trap reads it after the return.
	local rev=$1 tree=$2 base=$3 objs p i where file line hunk said
	shift 3
	local patches=("$@")
	objs=$(safe_git -C "$tree" rev-parse --path-format=absolute --git-path objects 2>/dev/null) ||
		usage_die "$tree: not a git repository"
	scratch=$(mktemp -d)
	trap 'rm -rf "$scratch"' EXIT
	mkdir "$scratch/objects"
	sgit() {
		GIT_INDEX_FILE=$scratch/index GIT_OBJECT_DIRECTORY=$scratch/objects \
			GIT_ALTERNATE_OBJECT_DIRECTORIES=$objs safe_git -C "$tree" "$@"
	}
	sgit read-tree "$base" 2>/dev/null || usage_die "no commit '$base' in $tree"
	for p in "${patches[@]}"; do [ -f "$p" ] || usage_die "no such patch: $p"; done
	if [ -n "$rev" ]; then
		for ((i = ${#patches[@]} - 1; i >= 0; i--)); do
			sgit apply --cached -R "$(realpath "${patches[i]}")" 2>"$scratch/err" ||
				usage_die "patch ${patches[i]} does not apply in reverse: $(grep -m1 . "$scratch/err")"
		done
		return 0
	fi
	for p in "${patches[@]}"; do
		sgit apply --cached "$(realpath "$p")" 2>"$scratch/err" && continue
		# "error: patch failed: FILE:LINE" names the hunk by its old start line.
		where=$(sed -n 's/^error: patch failed: //p' "$scratch/err" | head -1)
		if [ -z "$where" ]; then
			said=$(grep -m1 . "$scratch/err" || true)
			usage_die "patch $p does not apply: ${said#error: }"
		fi
		file=${where%:*} line=${where##*:}
		hunk=$(awk -v f="$file" -v l="$line" '
			/^diff --git / { in_f = ($3 == "a/" f) }
			in_f && /^@@ / { split($2, a, ","); if (substr(a[1], 2) == l) { print; exit } }' "$p")
		usage_die "patch $p does not apply: patch failed: $where, hunk ${hunk:-at line $line}"
	done
}

cmd_build_series() {
	local name=$1 tree=$2 base=$3 img stamp obj strict p
	shift 3
	case $name in "" | unpatched | patched | */*) die "build-series: '$name' is not a name for a series image (flavour names are taken)" ;; esac
	machine_lock
	[ "$tree" != "$KREPRO_TREE" ] || cmd_tree
	img=$(kernel_image "$name")
	stamp=$({
		safe_git -C "$tree" rev-parse "$base^{commit}"
		echo "$KREPRO_ARCH"
		for p in "$@"; do sha256sum <"$p"; done
		config_fragments | xargs sha256sum | cut -d' ' -f1
	} | sha256sum | cut -d' ' -f1)
	if image_current "$img" "$stamp"; then
		log "$name kernel is up to date: $img"
		return 0
	fi
	cmd_check_series "$tree" "$base" "$@"
	safe_git -C "$tree" am --abort >/dev/null 2>&1 || true
	safe_git -C "$tree" checkout -q -f -B "krepro-x-$name" "$base"
	for p in "$@"; do
		safe_git -C "$tree" am -q --no-3way "$(realpath "$p")" ||
			die "patch $p does not apply on $base (checked a moment ago?)"
	done
	# The cache tree shares the flavours' object directory (incremental); any
	# other tree gets its own, and only warns about options its Kconfig lacks.
	if [ "$tree" = "$KREPRO_TREE" ]; then
		obj=$OBJ strict=1
	else
		obj=$(tree_obj "$(realpath "$tree")") strict=0
	fi
	need_build_pkgs
	make_config "$tree" "$obj" "$strict"
	build_image "the $name kernel ($base + $# patches)" "$tree" "$obj" "$img" "$stamp" "krepro $name"
}

# A user's tree, as it is on disk (committed or not), built with krepro's
# fragments in an object directory of its own under the cache, from a copy
# there when it lies outside (tree_copy): nothing is written into the tree.
# Prints the image path; its build log is in the object directory. Exit 125
# (git bisect's "skip") when it is no kernel tree or fails.
# The object directory build-tree uses for the tree at the absolute path $1.
build_tree_obj() {
	# The cache's tree keeps its one object directory, whoever builds it:
	# the gate bisects its series there, and BAD is then the build just made.
	if [ -d "$KREPRO_TREE" ] && [ "$1" = "$(realpath "$KREPRO_TREE")" ]; then
		echo "$OBJ"
	else
		tree_obj "$(tree_copy "$1")"
	fi
}

# What build-tree builds for the tree at the absolute path $1: the tree
# itself inside the cache; a tree outside it, a copy laid out as the
# flavours' trees are (ROOT/linux-B, objects in ROOT/build/B/ARCH). kbuild
# names the sources by the tree's real path (a symlink would not do: it
# resolves it), and only that layout lets ccache serve the sources the tree
# shares with the flavours: minutes, not a cold build.
tree_copy() {
	local cache h
	cache=$(realpath -m "$KREPRO_CACHE")
	case $1 in "$cache"/*)
		echo "$1"
		return ;;
	esac
	h=$(echo "$1" | sha256sum | cut -c1-12)
	echo "$cache/trees/$h/linux-$(tree_version "$1")"
}

cmd_build_tree() {
	local src copy obj logf t0 t1
	[ -d "${1:-}" ] || KREPRO_DIE_CODE=125 die "--tree ${1:-}: no such directory"
	src=$(realpath "$1")
	obj=$(build_tree_obj "$src")
	mkdir -p "$obj"
	logf=$obj/krepro-build.log
	# What the runner checks before any work too (kernels.py tree_problem).
	if [ ! -f "$src/Makefile" ] || [ "$(tree_version "$src")" = tree ] || [ ! -d "$src/arch/$(kbuild_arch)" ] ||
		[ ! -x "$src/scripts/kconfig/merge_config.sh" ]; then
		echo "$src: no Makefile with VERSION and PATCHLEVEL, arch/$(kbuild_arch)/ or scripts/kconfig/merge_config.sh: not a kernel tree" >"$logf"
		KREPRO_DIE_CODE=125 die "$src is not a kernel tree (build log: $logf)"
	fi
	machine_lock
	need_build_pkgs
	copy=$(tree_copy "$src")
	if [ "$copy" != "$src" ]; then
		# rsync keeps the times of the files it leaves alone: kbuild then
		# rebuilds what changed in the tree since the last copy, no more.
		need_pkgs rsync
		log "copying $src to $copy (ccache serves a copy in the flavours' layout)"
		mkdir -p "$copy"
		rsync -a --delete --exclude=/.git "$src"/ "$copy"/ >"$logf" 2>&1 ||
			{ cat "$logf" >&2; die "copying $src to $copy failed (log: $logf)"; }
	fi
	if ! (make_config "$copy" "$obj" 0) >"$logf" 2>&1; then
		cat "$logf" >&2
		KREPRO_DIE_CODE=125 die "configuring $src failed (build log: $logf)"
	fi
	cat "$logf" >&2
	t0=$(date +%s)
	log "building $src in $obj (make -j$JOBS, build log: $logf)"
	if ! make_kernel "$src" "$copy" "$obj" "$logf.make" "krepro tree"; then
		cat "$logf.make" >>"$logf"
		grep -E 'error|Error' "$logf.make" | head -20 >&2
		KREPRO_DIE_CODE=125 die "building $src failed (build log: $logf)"
	fi
	cat "$logf.make" >>"$logf"
	t1=$(date +%s)
	log "built $src in $((t1 - t0)) s, $(grep -c '^  CC ' "$logf.make" || true) files compiled"
	echo "$obj/$(image_path_in_obj)"
}

# A Debian kernel package as Debian's archive has it today, downloaded (never
# installed) into the cache: PKG is a metapackage (linux-image-cloud-amd64)
# or a real one. Prints the .deb's path, for run-in-qemu.sh --kernel.
cmd_fetch_debian() {
	local pkg=${1:?package} real dir deb f debarch
	# The guest's Debian architecture (KREPRO_ARCH=arm: armhf).
	debarch=$(arch_field debarch)
	[ "$debarch" = "$(dpkg --print-architecture)" ] || need_foreign_arch "$debarch"
	case $pkg in *:*) ;; *) pkg=$pkg:$debarch ;; esac
	real=$(apt-cache depends "$pkg" 2>/dev/null | sed -n 's/^  Depends: \(linux-image-[^ :]*\).*$/\1/p' | head -1)
	[ -n "$real" ] || real=${pkg%%:*}
	dir=$KREPRO_CACHE/distro/debs
	mkdir -p "$dir"
	deb=
	for f in "$dir/${real}"_*_"$debarch".deb; do [ -f "$f" ] && deb=$f; done
	if [ -z "$deb" ]; then
		log "downloading $real:$debarch ($pkg) from Debian's archive"
		(cd "$dir" && apt-get download "$real:$debarch" >/dev/null 2>&1) ||
			{ apt_update && (cd "$dir" && apt-get download "$real:$debarch" >/dev/null 2>&1); } ||
			die "apt-get download $real:$debarch failed"
		deb=$(ls "$dir/${real}"_*_"$debarch".deb | tail -1)
	fi
	echo "$deb"
}

USAGE="usage: kernels.sh tree | series FLAVOUR | build [FLAVOUR...] | stale FLAVOUR | stamp FLAVOUR | check-patches | check-series [-R] TREE BASE PATCH... | build-series NAME TREE BASE PATCH... | build-tree DIR | obj-dir DIR | fetch-debian PKG | clean-bisect
(KREPRO_BRANCH: $KREPRO_BRANCHES; KREPRO_ARCH: $KREPRO_ARCHES; FLAVOUR: $KREPRO_FLAVOURS)"

# Bad input before any work (no lock taken, nothing unpacked or built): one
# line and 128, with the command that was meant where it is close.
# The scratch trees of krepro bisect ($KREPRO_CACHE/bisect/tree-*: a root
# with linux-X.Y and build/ in it, or a clone whose objects are in
# build/tree-<hash of its path>), of the gate's user trees, and of fixcheck's
# clones and snapshots, and build-tree's copies of trees outside the cache.
cmd_clean_bisect() {
	local d dirs=() h before after
	machine_lock
	for d in "$KREPRO_CACHE"/bisect/tree-* "$KREPRO_CACHE"/gate/trees/* "$KREPRO_CACHE"/fixcheck/trees/* "$KREPRO_CACHE"/fixcheck/clones/* \
		"$KREPRO_CACHE"/fixcheck/snapshots/* "$KREPRO_CACHE"/trees/*; do
		[ -d "$d" ] || continue
		dirs+=("$d")
		if [ -d "$d/.git" ]; then
			h=$(echo "$(realpath "$d")" | sha256sum | cut -c1-12)
			dirs+=("$KREPRO_CACHE"/build/tree-"$h" "$KREPRO_CACHE"/build/tree-*-"$h")
		fi
	done
	[ ${#dirs[@]} -gt 0 ] || { log "no scratch trees in $KREPRO_CACHE"; return 0; }
	before=$(df -Pk "$KREPRO_CACHE" | awk 'NR == 2 { print $4 }')
	for d in "${dirs[@]}"; do [ ! -e "$d" ] || { log "removing $d"; rm -rf "$d"; }; done
	after=$(df -Pk "$KREPRO_CACHE" | awk 'NR == 2 { print $4 }')
	log "freed $(((after - before) / 1024)) MiB"
}

usage_error() { usage_die "$1 (usage: kernels.sh --help)"; }

check_flavours() {
	local f
	for f; do
		case " $KREPRO_FLAVOURS " in *" $f "*) ;; *)
			usage_error "unknown flavour '${f:0:40}' (known: $KREPRO_FLAVOURS)" ;;
		esac
	done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
-h | --help | help) echo "$USAGE"; exit 0 ;;
tree) cmd_tree ;;
fetch-debian) [ $# -eq 1 ] || usage_error "fetch-debian takes one PKG"; cmd_fetch_debian "$1" ;;
check-series) cmd_check_series "$@" ;;
build-series) [ $# -ge 3 ] || usage_error "build-series takes NAME TREE BASE PATCH..."; cmd_build_series "$@" ;;
build-tree) [ $# -eq 1 ] || usage_error "build-tree takes one DIR"; cmd_build_tree "$1" ;;
obj-dir) [ $# -eq 1 ] || usage_error "obj-dir takes one DIR"; build_tree_obj "$(realpath -m -- "$1")" ;;
stale | stamp | series)
	[ $# -eq 1 ] || usage_error "$cmd takes one FLAVOUR"
	check_flavours "$1"
	"cmd_$cmd" "$1" ;;
build) check_flavours "$@"; cmd_build "$@" ;;
check-patches) [ $# -eq 0 ] || usage_error "check-patches takes no argument"; cmd_check_patches ;;
clean-bisect) [ $# -eq 0 ] || usage_error "clean-bisect takes no argument"; cmd_clean_bisect ;;
"") usage_error "a command is needed" ;;
*)
	near=$(nearest "$cmd" tree series build stale stamp check-patches check-series build-series build-tree obj-dir fetch-debian clean-bisect)
	usage_error "unknown command '${cmd:0:40}'${near:+; did you mean $near?}" ;;
esac
