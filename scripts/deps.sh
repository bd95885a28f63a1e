#!/usr/bin/env bash
# Install the Debian packages krepro needs on the host (only the missing ones).
#   deps.sh        what building and running the reproducers needs
#   deps.sh lava   LAVA's dispatcher (lava-run) and lavacli, for --via lava-*
#   deps.sh --help this text
set -euo pipefail
. "$(dirname "$0")/common.sh"
help_header "${1:-}"
case $# in 0) ;; 1) [ "$1" = lava ] || usage_die "deps.sh: unknown argument '$1' (usage: deps.sh [lava]; --help for more)" ;;
*) usage_die "deps.sh takes at most one argument, lava (--help for more)" ;; esac
if [ "${1:-}" = lava ]; then
	# As Debian ships it, recommends included: the install lava-run was
	# proven with (about 270 packages, among them libguestfs and a kernel
	# image its guestfs support wants).
	KREPRO_APT_RECOMMENDS=1 need_pkgs lava-dispatcher lavacli python3-yaml qemu-utils
	exit 0
fi
need_pkgs \
	build-essential cmake pkg-config git xz-utils rsync python3 python3-yaml \
	linux-source-6.1 linux-source-6.12 bc bison flex libelf-dev libssl-dev ccache cpio kmod \
	qemu-system-x86 qemu-utils busybox-static \
	liburing-dev zlib1g-dev xfslibs-dev libbpf-dev libmnl-dev libnftnl-dev \
	xfsprogs iproute2 \
	python3-hypothesis
# The ARM guest: cross compilers, armhf libraries, qemu-system-arm.
KREPRO_ARCH=arm need_arch_pkgs
