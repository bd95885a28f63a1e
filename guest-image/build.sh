#!/usr/bin/env bash
# Build the guest initramfs: busybox, /init, the Debian programs named in
# userspace.list with their library closure, and the reproducers.
#   build.sh [--arch x86_64|arm] OUTPUT REPRO_BIN_DIR
# The image is an uncompressed newc cpio: the kernel unpacks it without a
# decompressor, which is the fastest way under TCG.
# Beside OUTPUT, repro/<id>.cpio is each reproducer's own image: busybox,
# /init, that reproducer and only the programs it declares (PROGRAMS in its
# CMakeLists.txt, REPRO_BIN_DIR/<id>.programs). The kernel unpacks the
# initramfs before /init runs, on the boot's critical path (19 MB of the
# whole image took 1.9 s of a 5.8 s boot under TCG and KASAN); a guest that
# runs one reproducer boots its own.
#
# The x86_64 image takes the host's busybox and programs. The arm image takes
# busybox from Debian's armhf busybox-static (downloaded, not installed: it
# cannot sit beside the host's) and no userspace.list programs, which are the
# host's x86_64 binaries; its reproducers are static armhf binaries.
set -euo pipefail
if [ "${1:-}" = --arch ]; then
	export KREPRO_ARCH=$2
	shift 2
fi
. "$(dirname "$0")/../scripts/common.sh"

copy_libs() {
	local lib
	for lib in $(ldd "$1" 2>/dev/null | grep -oE '/[^ ]+' || true); do
		[ -e "$stage$lib" ] && continue
		mkdir -p "$stage$(dirname "$lib")"
		cp -L "$lib" "$stage$lib"
	done
}
# A program and its libraries, at the same paths as on the host.
copy_with_libs() {
	mkdir -p "$stage$(dirname "$1")"
	cp -L "$1" "$stage$1"
	copy_libs "$1"
}
# The directory $1 as a newc cpio archive $2, reproducibly.
archive() {
	mkdir -p "$(dirname "$2")"
	(cd "$1" && find . -print0 | LC_ALL=C sort -z |
		cpio --null --reproducible -o -H newc --quiet) >"$2.tmp"
	mv "$2.tmp" "$2"
}

# --overlay STAGE OUT: a distribution kernel's modules, staged in STAGE by
# scripts/krepro/distro/kernel.py, as a cpio the runner appends to the guest image.
# A native guest gets kmod's modprobe (the distribution's modules are
# compressed); a foreign one uses busybox's, on modules distro/kernel.py decompressed.
if [ "${1:-}" = --overlay ]; then
	stage=$2
	need_pkgs cpio
	if [ "$(arch_field debarch)" = "$(dpkg --print-architecture)" ]; then
		need_pkgs kmod
		copy_with_libs "$(command -v modprobe || echo /sbin/modprobe)"
	fi
	archive "$stage" "$3"
	exit 0
fi

out=$1 bindir=$2
here=$KREPRO_TOP/guest-image
list=$here/userspace.list

pkgs=(cpio)
# The guest's Debian architecture (scripts/arches.tsv): the host's own, or a
# foreign one whose busybox is downloaded.
debarch=$(arch_field debarch)
native=0
[ "$debarch" = "$(dpkg --print-architecture)" ] && native=1
case $native in
1)
	pkgs+=(busybox-static)
	while read -r pkg prog; do
		case $pkg in "#"* | "") continue ;; esac
		pkgs+=("$pkg")
	done <"$list"
	need_pkgs "${pkgs[@]}"
	busybox=/bin/busybox
	;;
0)
	need_pkgs "${pkgs[@]}"
	busybox=$(foreign_deb busybox-static)/bin/busybox
	;;
esac

# Rebuilt only when an input changed: our files, the reproducers, and the
# versions of the Debian packages it copies from.
inputs() {
	sha256sum "$here/init" "$here/fstab" "$here/build.sh" "$list" "$busybox" "$bindir"/*
	dpkg-query -W -f='${Package} ${Version}\n' "${pkgs[@]}"
}
stamp=$(inputs | sha256sum | cut -d' ' -f1)
if [ -f "$out" ] && [ -d "$(dirname "$out")/repro" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,proc,sys,dev,tmp,run,mnt,repro,etc}
cp "$busybox" "$stage/bin/busybox"
if [ "$native" = 1 ]; then
	for applet in $("$stage/bin/busybox" --list); do
		[ -e "$stage/bin/$applet" ] || ln -s busybox "$stage/bin/$applet"
	done
else
	# A foreign busybox cannot list its applets here: /init installs them.
	ln -s busybox "$stage/bin/sh"
fi
install -m 0755 "$here/init" "$stage/init"
install -m 0644 "$here/fstab" "$stage/etc/fstab"

# The host path of a userspace.list program (dies when it is missing).
program_path() {
	local pkg p
	pkg=$(awk -v p="$1" '$1 !~ /^#/ && $2 == p { print $1 }' "$list")
	[ -n "$pkg" ] || die "$1 is not in $list"
	p=$(command -v "$1" || true)
	[ -n "$p" ] || p=$(dpkg -L "$pkg" | grep -E "/s?bin/$1\$" | head -1)
	[ -n "$p" ] && [ -x "$p" ] || die "$1 (package $pkg) not found on the host"
	echo "$p"
}
# A program and every library it loads, at the same paths as on the host.
# Busybox has applets of the same name (ip): the real one goes first in PATH.
add_program() {
	rm -f "$stage/bin/$1"
	copy_with_libs "$(program_path "$1")"
}
# A reproducer, with its libraries (none for a static one).
add_repro() {
	install -m 0755 "$1" "$stage/repro/$(basename "$1")"
	if [ "$native" = 1 ]; then
		copy_libs "$1"
	elif readelf -l "$1" 2>/dev/null | grep -q 'Requesting program interpreter'; then
		# The host's ldd cannot resolve a foreign closure: foreign guests'
		# reproducers are static (only x86_64 ones say DYNAMIC in their CMakeLists.txt).
		die "$1 is dynamically linked; the $KREPRO_ARCH guest carries no libraries"
	fi
}

base=$(mktemp -d)
trap 'rm -rf "$stage" "$base"' EXIT
cp -a "$stage/." "$base/"
rm -rf "$(dirname "$out")/repro"
mkdir -p "$(dirname "$out")/repro"

if [ "$native" = 1 ]; then
	while read -r pkg prog; do
		case $pkg in "#"* | "") continue ;; esac
		add_program "$prog"
	done <"$list"
fi
n=0
for r in "$bindir"/*; do
	[ -x "$r" ] || continue
	add_repro "$r"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || die "no reproducer binaries in $bindir"
archive "$stage" "$out"
all=$stage

# Each reproducer's own image.
for r in "$bindir"/*; do
	[ -x "$r" ] || continue
	id=$(basename "$r")
	stage=$(mktemp -d)
	cp -a "$base/." "$stage/"
	if [ "$native" = 1 ] && [ -f "$r.programs" ]; then
		for prog in $(cat "$r.programs"); do add_program "$prog"; done
	fi
	add_repro "$r"
	archive "$stage" "$(dirname "$out")/repro/$id.cpio"
	rm -rf "$stage"
done
stage=$all

echo "$stamp" >"$out.stamp"
log "guest image: $out ($(du -h "$out" | cut -f1), $n reproducers); each one's own:" \
	"$(cd "$(dirname "$out")/repro" && du -h ./*.cpio | sort -h | awk '{ sub("^./", "", $2); sub(".cpio$", "", $2); printf "%s%s %s", s, $2, $1; s = ", " }')"
