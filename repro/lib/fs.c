// SPDX-License-Identifier: GPL-2.0
/*
 * Loop devices and the filesystems on them (fs.h): attach, mkfs, mount,
 * sparse copies, extent layouts, O_DIRECT buffers. Setup helpers end the case
 * as BROKEN on error (with the caller's intent in the message).
 */
#define _GNU_SOURCE
#include "fs.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Attach fd (offset, size; 0 size: to its end) to a free loop device. */
static void loop_attach_fd(int fd, off_t offset, off_t size, char *dev, size_t devsize)
{
	struct loop_config cfg = { 0 };
	int ctl, nr, loopfd;

	ctl = SAFE(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
	nr = SAFE(ioctl(ctl, LOOP_CTL_GET_FREE));
	close(ctl);
	snprintf(dev, devsize, "/dev/loop%d", nr);
	loopfd = SAFE(open(dev, O_RDWR | O_CLOEXEC));
	/* No LO_FLAGS_AUTOCLEAR: it would detach at our close() below. */
	cfg.fd = (unsigned int)fd;
	cfg.info.lo_offset = (__u64)offset;
	cfg.info.lo_sizelimit = (__u64)size;
	SAFE(ioctl(loopfd, LOOP_CONFIGURE, &cfg));
	close(loopfd);
}

void krepro_loop_attach(off_t size, char *dev, size_t devsize)
{
	char backing[64];
	int fd;

	/* The backing file lives in tmpfs and is unlinked at once: sparse, and
	 * gone once the loop device lets go of it. */
	snprintf(backing, sizeof(backing), "/tmp/krepro-loop%d.img", getpid());
	fd = SAFE(open(backing, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
	SAFE(ftruncate(fd, size));
	SAFE(unlink(backing));
	loop_attach_fd(fd, 0, 0, dev, devsize);
	close(fd);
}

void krepro_loop_attach_file(const char *path, off_t offset, off_t size, char *dev,
			     size_t devsize)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		krepro_broken("open %s: %s", path, strerror(errno));
	loop_attach_fd(fd, offset, size, dev, devsize);
	close(fd);
}

void krepro_copy_nonzero(const char *from, off_t from_off, const char *to, off_t to_off,
			 off_t size)
{
	enum { CHUNK = 1 << 20, BLOCK = 4096 };
	static const char zero[BLOCK];
	char *buf = malloc(CHUNK);
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	off_t pos = 0;
	struct stat st;

	if (!buf || in < 0 || out < 0)
		krepro_broken("copying %s to %s: %s", from, to, strerror(errno));
	while (pos < size) {
		/* Skip holes where the source knows them (tmpfs); a block device
		 * says "all data" and the zero test below does the work. */
		off_t data = lseek(in, from_off + pos, SEEK_DATA);
		size_t len;
		ssize_t got;

		if (data < 0 && errno == ENXIO)
			break;
		if (data > from_off + pos)
			pos = data - from_off;
		if (pos >= size)
			break;
		len = size - pos < CHUNK ? (size_t)(size - pos) : CHUNK;
		got = pread(in, buf, len, from_off + pos);
		if (got <= 0)
			krepro_broken("reading %s at %lld: %s", from, (long long)(from_off + pos),
				      got < 0 ? strerror(errno) : "end of file");
		for (ssize_t b = 0; b < got; b += BLOCK) {
			size_t blen = got - b < BLOCK ? (size_t)(got - b) : BLOCK;

			if (!memcmp(buf + b, zero, blen))
				continue;
			if (pwrite(out, buf + b, blen, to_off + pos + b) != (ssize_t)blen)
				krepro_broken("writing %s at %lld: %s", to,
					      (long long)(to_off + pos + b), strerror(errno));
		}
		pos += got;
	}
	/* A file destination gets its full size, holes included. */
	if (fstat(out, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < to_off + size)
		SAFE(ftruncate(out, to_off + size));
	if (fsync(out) < 0 && errno != EINVAL)
		krepro_broken("fsync %s: %s", to, strerror(errno));
	close(in);
	close(out);
	free(buf);
}

void krepro_loop_detach(const char *dev)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	if (ioctl(fd, LOOP_CLR_FD, 0) < 0 && errno != ENXIO)
		krepro_info("detaching %s: %s", dev, strerror(errno));
	close(fd);
}

void krepro_mkfs_mount(const char *const mkfs_argv[], const char *dev,
		       const char *fstype, const char *dir)
{
	const char *argv[16];
	int n = 0;

	while (mkfs_argv[n] && n < 14) {
		argv[n] = mkfs_argv[n];
		n++;
	}
	argv[n++] = dev;
	argv[n] = NULL;
	krepro_must_run(argv);
	krepro_mount(dev, fstype, dir);
}

void krepro_mount(const char *dev, const char *fstype, const char *dir)
{
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		krepro_broken("mkdir %s: %s", dir, strerror(errno));
	if (mount(dev, dir, fstype, 0, NULL) < 0)
		krepro_broken("mount -t %s %s %s: %s", fstype, dev, dir, strerror(errno));
}

void *krepro_dio_buf(size_t size, int byte)
{
	void *buf = NULL;
	int err = posix_memalign(&buf, 4096, size);

	if (err)
		krepro_broken("posix_memalign %zu: %s", size, strerror(err));
	memset(buf, byte, size);
	return buf;
}

void krepro_loopfs_attach(struct krepro_loopfs *fs, const char *path, off_t offset, off_t size,
			  const char *mnt)
{
	krepro_loop_attach_file(path, offset, size, fs->dev, sizeof(fs->dev));
	snprintf(fs->mnt, sizeof(fs->mnt), "%s", mnt);
}

int krepro_loopfs_try_mount(struct krepro_loopfs *fs)
{
	if (mkdir(fs->mnt, 0755) < 0 && errno != EEXIST)
		krepro_broken("mkdir %s: %s", fs->mnt, strerror(errno));
	return mount(fs->dev, fs->mnt, fs->fstype, 0, fs->data);
}

void krepro_loopfs_mount(struct krepro_loopfs *fs)
{
	if (krepro_loopfs_try_mount(fs) < 0)
		krepro_broken("mount -t %s %s %s: %s", fs->fstype, fs->dev, fs->mnt,
			      strerror(errno));
}

void krepro_loopfs_umount(struct krepro_loopfs *fs)
{
	if (umount(fs->mnt) < 0)
		krepro_broken("umount %s: %s", fs->mnt, strerror(errno));
}

void krepro_loopfs_detach(struct krepro_loopfs *fs)
{
	krepro_loop_detach(fs->dev);
	fs->dev[0] = '\0';
}

void krepro_loopfs_release(struct krepro_loopfs *fs)
{
	if (!fs->dev[0])
		return;
	/* EINVAL: not mounted. */
	if (umount(fs->mnt) < 0 && errno != EINVAL && errno != ENOENT)
		krepro_info("umount %s: %s", fs->mnt, strerror(errno));
	krepro_loopfs_detach(fs);
}

int krepro_loopfs_open(const struct krepro_loopfs *fs, const char *name, int flags)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", fs->mnt, name);
	return (int)SAFE(open(path, flags | O_CLOEXEC, 0644));
}

void krepro_loopfs_write_block(const struct krepro_loopfs *fs, const char *name, uint64_t block,
			       int byte)
{
	enum { BLOCK = 4096 };
	void *buf = krepro_dio_buf(BLOCK, byte);
	int fd = krepro_loopfs_open(fs, name, O_RDWR | O_DIRECT);

	if (SAFE(pwrite(fd, buf, BLOCK, (off_t)block * BLOCK)) != BLOCK)
		krepro_broken("short write at file block %llu", (unsigned long long)block);
	SAFE(fsync(fd));
	close(fd);
	free(buf);
}

void krepro_expect_extents(int fd, off_t len, const off_t want[][2], unsigned int n)
{
	struct { struct fiemap fm; struct fiemap_extent ext[8]; } f = {
		.fm = { .fm_length = (__u64)len, .fm_flags = FIEMAP_FLAG_SYNC,
			.fm_extent_count = 8 } };
	const struct fiemap_extent *e = f.fm.fm_extents;
	const unsigned int odd = FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_DELALLOC;
	unsigned int i = 0;

	SAFE(ioctl(fd, FS_IOC_FIEMAP, &f.fm));
	while (i < n && i < f.fm.fm_mapped_extents && e[i].fe_logical == (__u64)want[i][0] &&
	       e[i].fe_length == (__u64)want[i][1] && !(e[i].fe_flags & odd))
		i++;
	if (i < n || f.fm.fm_mapped_extents != n)
		krepro_broken("wrong layout: %u extents; extent %u at %llu len %llu flags %#x, "
			      "want a written one at %lld len %lld", f.fm.fm_mapped_extents, i,
			      (unsigned long long)e[i].fe_logical,
			      (unsigned long long)e[i].fe_length, e[i].fe_flags,
			      (long long)want[i < n ? i : 0][0], (long long)want[i < n ? i : 0][1]);
}
