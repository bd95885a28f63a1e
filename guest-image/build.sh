#!/usr/bin/env bash
# Build the guest initramfs: busybox, /init, the Debian programs named in
# userspace.list with their library closure, and the reproducers.
#   build.sh OUTPUT REPRO_BIN_DIR
# The image is an uncompressed newc cpio: the kernel unpacks it without a
# decompressor, which is the fastest way under TCG.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

out=$1 bindir=$2
here=$KREPRO_TOP/guest-image
list=$here/userspace.list

pkgs=(busybox-static cpio)
while read -r pkg prog; do
	case $pkg in "#"* | "") continue ;; esac
	pkgs+=("$pkg")
done <"$list"
need_pkgs "${pkgs[@]}"

# Rebuilt only when an input changed: our files, the reproducers, and the
# versions of the Debian packages it copies from.
inputs() {
	sha256sum "$here/init" "$here/build.sh" "$list" /bin/busybox "$bindir"/*
	dpkg-query -W -f='${Package} ${Version}\n' "${pkgs[@]}"
}
stamp=$(inputs | sha256sum | cut -d' ' -f1)
if [ -f "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,proc,sys,dev,tmp,run,mnt,repro,etc}
cp /bin/busybox "$stage/bin/busybox"
for applet in $("$stage/bin/busybox" --list); do
	[ -e "$stage/bin/$applet" ] || ln -s busybox "$stage/bin/$applet"
done
install -m 0755 "$here/init" "$stage/init"

# Every library a program loads, at the same paths as on the host (none for
# a static program).
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
while read -r pkg prog; do
	case $pkg in "#"* | "") continue ;; esac
	p=$(command -v "$prog" || true)
	[ -n "$p" ] || p=$(dpkg -L "$pkg" | grep -E "/s?bin/$prog\$" | head -1)
	[ -n "$p" ] && [ -x "$p" ] || die "$prog (package $pkg) not found on the host"
	# Busybox has applets of the same name (ip): the real one goes first in PATH.
	rm -f "$stage/bin/$prog"
	copy_with_libs "$p"
done <"$list"

n=0
for r in "$bindir"/*; do
	[ -x "$r" ] || continue
	install -m 0755 "$r" "$stage/repro/$(basename "$r")"
	copy_libs "$r"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || die "no reproducer binaries in $bindir"

mkdir -p "$(dirname "$out")"
(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
	cpio --null --reproducible -o -H newc --quiet) >"$out.tmp"
mv "$out.tmp" "$out"
echo "$stamp" >"$out.stamp"
log "guest image: $out ($(du -h "$out" | cut -f1), $n reproducers)"
