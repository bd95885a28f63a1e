/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loop devices and the filesystems on them (fs.c): attach, mkfs, mount,
 * sparse copies of images, a file's extent layout, O_DIRECT buffers. Setup
 * helpers end the case as BROKEN on error.
 */
#ifndef KREPRO_FS_H
#define KREPRO_FS_H

#include "krepro.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A sparse file of `size` bytes in the guest's tmpfs attached to a free loop
 * device; the device path goes to dev. Detached by krepro_loop_detach(). */
void krepro_loop_attach(off_t size, char *dev, size_t devsize);
/* Attach size bytes (0: to the end) of an existing file or block device from
 * offset to a free loop device. */
void krepro_loop_attach_file(const char *path, off_t offset, off_t size, char *dev,
			     size_t devsize);
void krepro_loop_detach(const char *dev);
/*
 * A filesystem image (a file, or a region of a file or disk) on a loop
 * device, for a reproducer that attaches, mounts and lets go of several.
 * Set fstype and data (mount(2)'s, e.g. "nouuid"; may be NULL) first.
 */
struct krepro_loopfs {
	const char *fstype, *data;
	char dev[32];		/* "" when not attached */
	char mnt[64];		/* where it mounts (created at mount) */
};
/* Attach size bytes (0: to the end) of path from offset. BROKEN on error. */
void krepro_loopfs_attach(struct krepro_loopfs *fs, const char *path, off_t offset, off_t size,
			  const char *mnt);
/* Mount it: 0, or -1 with errno (a mount under test). */
int krepro_loopfs_try_mount(struct krepro_loopfs *fs);
/* Mount, unmount: BROKEN on error. */
void krepro_loopfs_mount(struct krepro_loopfs *fs);
void krepro_loopfs_umount(struct krepro_loopfs *fs);
void krepro_loopfs_detach(struct krepro_loopfs *fs);
/* Let go of it whatever its state (unmount if mounted, detach if
 * attached); never BROKEN: after a failed step, and in cleanup. */
void krepro_loopfs_release(struct krepro_loopfs *fs);
/* Open name under the mount point (O_CLOEXEC added, mode 0644). BROKEN on error. */
int krepro_loopfs_open(const struct krepro_loopfs *fs, const char *name, int flags);
/* Write file block `block` (4 KiB blocks) of name under the mount point, all
 * `byte`, by O_DIRECT, and fsync. BROKEN on error. */
void krepro_loopfs_write_block(const struct krepro_loopfs *fs, const char *name, uint64_t block,
			       int byte);
/* Copy size bytes of from (at from_off) to to (at to_off, created if missing),
 * writing only the 4 KiB blocks that are not all zero: a sparse copy onto a
 * destination that is zero there. */
void krepro_copy_nonzero(const char *from, off_t from_off, const char *to, off_t to_off,
			 off_t size);

/* BROKEN unless the first len bytes of fd's file are mapped by exactly the n
 * (at most 7) written extents want[i] = { offset, length }, after a sync: a
 * guard for a case whose bug needs that layout. */
void krepro_expect_extents(int fd, off_t len, const off_t want[][2], unsigned int n);
/* Mount dev at dir (created if missing). BROKEN on error. */
void krepro_mount(const char *dev, const char *fstype, const char *dir);
/* mkfs (argv after the device, e.g. {"mkfs.xfs", "-f", NULL}), then mount at
 * dir (created). BROKEN on error. */
void krepro_mkfs_mount(const char *const mkfs_argv[], const char *dev,
		       const char *fstype, const char *dir);

/* Allocate `size` bytes aligned for O_DIRECT and filled with `byte`. */
void *krepro_dio_buf(size_t size, int byte);

#endif
