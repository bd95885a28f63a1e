#!/usr/bin/env bash
# Install the Debian packages krepro needs on the host (only the missing ones).
set -euo pipefail
. "$(dirname "$0")/common.sh"
need_pkgs \
	build-essential cmake pkg-config git xz-utils python3 \
	linux-source-6.1 bc bison flex libelf-dev libssl-dev ccache cpio kmod \
	qemu-system-x86 busybox-static \
	liburing-dev zlib1g-dev xfslibs-dev libbpf-dev libmnl-dev libnftnl-dev \
	xfsprogs iproute2
# The ARM guest: cross compilers, armhf libraries, qemu-system-arm.
KREPRO_ARCH=arm need_arch_pkgs
