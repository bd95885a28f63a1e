# Shared shell definitions for krepro's host scripts. Sourced, not run.
# shellcheck shell=bash

KREPRO_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KREPRO_CACHE=${KREPRO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/krepro}
KREPRO_ARCH=${KREPRO_ARCH:-x86_64}
# Guest architectures: each has kernel-patches/config/<arch>.config.
KREPRO_ARCHES="x86_64 arm"
case " $KREPRO_ARCHES " in *" $KREPRO_ARCH "*) ;; *)
	printf 'krepro: error: KREPRO_ARCH=%s: known arches are %s\n' "$KREPRO_ARCH" "$KREPRO_ARCHES" >&2
	exit 2 ;;
esac
# The kernel tree: Debian's linux-source-6.1 as a git repository, so flavours are
# branches and switching between them rewrites only the files that differ.
KREPRO_TREE=$KREPRO_CACHE/linux-6.1
KREPRO_KERNELS=${KREPRO_KERNELS:-$KREPRO_CACHE/kernels}
KREPRO_FLAVOURS="unpatched patched"
export CCACHE_DIR=${CCACHE_DIR:-$KREPRO_CACHE/ccache}

log() { printf 'krepro: %s\n' "$*" >&2; }
die() { printf 'krepro: error: %s\n' "$*" >&2; exit "${KREPRO_DIE_CODE:-1}"; }

# Install Debian packages that are missing; a no-op when all are there.
need_pkgs() {
	local missing=() p
	for p in "$@"; do
		# One status line per installed arch (zlib1g-dev: amd64 and armhf).
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qx 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		die "missing packages: ${missing[*]} (run: sudo apt-get install ${missing[*]})"
	fi
	log "installing ${missing[*]}"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		"${missing[@]}" >"$KREPRO_CACHE/apt.log" 2>&1; then
		apt-get update >>"$KREPRO_CACHE/apt.log" 2>&1
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			"${missing[@]}" >>"$KREPRO_CACHE/apt.log" 2>&1 ||
			die "apt-get install ${missing[*]} failed; see $KREPRO_CACHE/apt.log"
	fi
}

# Enable a Debian foreign architecture (armhf: the ARM guest's libraries and
# busybox). The next need_pkgs install fails on the stale lists, then updates.
need_foreign_arch() {
	dpkg --print-foreign-architectures | grep -qxF "$1" && return 0
	[ "$(id -u)" -eq 0 ] || die "Debian architecture $1 missing (run: sudo dpkg --add-architecture $1)"
	log "adding Debian architecture $1"
	dpkg --add-architecture "$1"
	apt-get update >>"$KREPRO_CACHE/apt.log" 2>&1 || die "apt-get update failed; see $KREPRO_CACHE/apt.log"
}

# Host packages for building and booting KREPRO_ARCH's guests.
need_arch_pkgs() {
	case $KREPRO_ARCH in
	x86_64) need_pkgs qemu-system-x86 busybox-static zlib1g-dev ;;
	arm)
		need_foreign_arch armhf
		need_pkgs qemu-system-arm gcc-arm-linux-gnueabihf libc6-dev-armhf-cross zlib1g-dev:armhf
		;;
	esac
}

# Image path of a built flavour.
kernel_image() {
	case $KREPRO_ARCH in
	arm) echo "$KREPRO_KERNELS/zImage-arm-$1" ;;
	*) echo "$KREPRO_KERNELS/bzImage-$KREPRO_ARCH-$1" ;;
	esac
}

mkdir -p "$KREPRO_CACHE"
