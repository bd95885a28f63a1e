// SPDX-License-Identifier: GPL-2.0
/*
 * xfs-nowait-dio: a RWF_NOWAIT direct write over one allocated block and a
 * hole must either write everything or return EAGAIN having written nothing.
 * With the bug, XFS maps and writes the first block, meets the hole, and
 * returns EAGAIN anyway: the caller is told nothing happened, yet block 0
 * changed. Upstream fix 883a790a8440. See README.md.
 */
#define _GNU_SOURCE
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xfs/xfs.h>

#define BLK	4096
#define FSIZE	(1 << 20)	/* the write stays inside EOF: no size update */
#define MNT	"/tmp/krepro-xfs"
#define OLD	'A'
#define NEW	'B'

static char dev[64];
static int mounted;

static void setup(void)
{
	static const char *const mkfs[] = { "mkfs.xfs", "-q", "-f", NULL };

	krepro_loop_attach(320 << 20, dev, sizeof(dev)); /* mkfs.xfs minimum: 300 MiB */
	krepro_mkfs_mount(mkfs, dev, "xfs", MNT);
	mounted = 1;
}

static void cleanup(void)
{
	if (mounted && umount(MNT) < 0)
		krepro_info("umount %s: %s", MNT, strerror(errno));
	if (dev[0])
		krepro_loop_detach(dev);
}

/*
 * Layout guard: exactly one written 4 KiB extent at offset 0 and a hole over
 * the second block. Anything else would test something other than the bug.
 */
static void check_layout(int fd)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[8];
	} f = { .fm = { .fm_length = FSIZE, .fm_flags = FIEMAP_FLAG_SYNC,
			.fm_extent_count = 8 } };
	struct fiemap_extent *e = &f.fm.fm_extents[0];

	SAFE(ioctl(fd, FS_IOC_FIEMAP, &f.fm));
	if (f.fm.fm_mapped_extents < 1 || e->fe_logical != 0 || e->fe_length != BLK ||
	    (e->fe_flags & (FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_DELALLOC)))
		krepro_broken("wrong layout: %u extents, first at %llu len %llu flags %#x "
			      "(want one written %d-byte block at 0)", f.fm.fm_mapped_extents,
			      (unsigned long long)e->fe_logical,
			      (unsigned long long)e->fe_length, e->fe_flags, BLK);
	if (f.fm.fm_mapped_extents > 1 && f.fm.fm_extents[1].fe_logical < 2 * BLK)
		krepro_broken("wrong layout: second extent at %llu, want a hole at %d",
			      (unsigned long long)f.fm.fm_extents[1].fe_logical, BLK);
}

/*
 * A file whose block 0 holds OLD and whose block 1 is a hole, reopened by
 * handle. Since 6.0 a NOWAIT write that must update mtime returns EAGAIN before
 * any I/O (file_modified_flags()); XFS's open-by-handle sets FMODE_NOCMTIME,
 * the "invisible I/O" path xfsdump uses, so the write reaches the iomap code.
 * Everything goes through O_DIRECT: cached pages make NOWAIT bail out early.
 */
static int prepare_file(const char *name, int *plain_fd)
{
	char path[128];
	void *buf = krepro_dio_buf(BLK, OLD);
	char handle[256];
	__u32 hlen = sizeof(handle);
	xfs_fsop_handlereq_t hreq = { 0 };
	int fd, mntfd, hfd;

	snprintf(path, sizeof(path), MNT "/%s", name);
	fd = SAFE(open(path, O_CREAT | O_TRUNC | O_RDWR | O_DIRECT | O_CLOEXEC, 0644));
	SAFE(ftruncate(fd, FSIZE));
	if (SAFE(pwrite(fd, buf, BLK, 0)) != BLK)
		krepro_broken("short write preparing block 0");
	SAFE(fsync(fd));
	/* Drop any post-EOF or speculative allocation beyond block 0. */
	SAFE(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, BLK, FSIZE - BLK));
	check_layout(fd);
	free(buf);

	mntfd = SAFE(open(MNT, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	hreq.path = path;
	hreq.ohandle = handle;
	hreq.ohandlen = &hlen;
	SAFE(ioctl(mntfd, XFS_IOC_PATH_TO_HANDLE, &hreq));
	memset(&hreq, 0, sizeof(hreq));
	hreq.oflags = O_RDWR | O_DIRECT;
	hreq.ihandle = handle;
	hreq.ihandlen = hlen;
	hfd = SAFE(ioctl(mntfd, XFS_IOC_OPEN_BY_HANDLE, &hreq));
	close(mntfd);
	*plain_fd = fd;
	return hfd;
}

/* Compare what the file holds with what the write's result says happened. */
static void judge(const char *how, long ret, int err, int fd)
{
	char *got = krepro_dio_buf(2 * BLK, 0);
	long changed = -1, expect_new;

	if (SAFE(pread(fd, got, 2 * BLK, 0)) != 2 * BLK)
		krepro_broken("short read back");
	if (ret < 0 && err != EAGAIN)
		krepro_broken("%s: unexpected error %s", how, strerror(err));
	expect_new = ret < 0 ? 0 : ret; /* bytes the kernel says it wrote */
	for (long i = 0; i < BLK; i++) {
		char want = i < expect_new ? NEW : OLD;

		if (got[i] != want) {
			changed = i;
			break;
		}
	}
	if (changed >= 0)
		krepro_fail("%s returned %ld (%s) but block 0 byte %ld reads %#x, expected %#x: "
			    "data was written although the call reported %s", how, ret,
			    ret < 0 ? strerror(err) : "bytes written", changed,
			    (unsigned char)got[changed], expect_new > changed ? NEW : OLD,
			    ret < 0 ? "nothing written" : "fewer bytes");
	else if (ret < 0)
		krepro_pass("%s returned EAGAIN and block 0 is unchanged", how);
	else
		krepro_pass("%s wrote %ld bytes and the data matches", how, ret);
	free(got);
}

static void run_pwritev2(void)
{
	int plain, fd = prepare_file("pwritev2", &plain);
	struct iovec iov = { krepro_dio_buf(2 * BLK, NEW), 2 * BLK };
	ssize_t ret = pwritev2(fd, &iov, 1, 0, RWF_NOWAIT);

	judge("pwritev2(RWF_NOWAIT, 8 KiB at 0)", ret, errno, plain);
	free(iov.iov_base);
	close(fd);
	close(plain);
}

static void run_io_uring(void)
{
	int plain, fd = prepare_file("io_uring", &plain);
	struct iovec iov = { krepro_dio_buf(2 * BLK, NEW), 2 * BLK };
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret = io_uring_queue_init(4, &ring, 0);

	if (ret < 0) {
		if (ret == -ENOSYS)
			krepro_skip("io_uring not available");
		krepro_broken("io_uring_queue_init: %s", strerror(-ret));
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_writev(sqe, fd, &iov, 1, 0);
	/* RWF_NOWAIT makes io_uring return EAGAIN instead of retrying in a worker. */
	sqe->rw_flags = RWF_NOWAIT;
	ret = io_uring_submit(&ring);
	if (ret != 1)
		krepro_broken("io_uring_submit: %d", ret);
	ret = io_uring_wait_cqe(&ring, &cqe);
	if (ret < 0)
		krepro_broken("io_uring_wait_cqe: %s", strerror(-ret));
	ret = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	judge("io_uring writev(RWF_NOWAIT, 8 KiB at 0)", ret < 0 ? -1 : ret,
	      ret < 0 ? -ret : 0, plain);
	free(iov.iov_base);
	close(fd);
	close(plain);
}

static const char *const kconfigs[] = { "CONFIG_XFS_FS", "CONFIG_IO_URING",
					"CONFIG_BLK_DEV_LOOP", NULL };

static const struct krepro_case cases[] = {
	{ "pwritev2", run_pwritev2 },
	{ "io_uring", run_io_uring },
	{ NULL, NULL },
};

static const struct krepro_test test = {
	.name = "xfs-nowait-dio",
	.summary = "pwritev2(RWF_NOWAIT) over extent+hole returns EAGAIN after writing part of the data",
	.fix_commit = "883a790a8440 (\"xfs: don't allow NOWAIT DIO across extent boundaries\")",
	.bug_commit = "not named upstream (the fix carries no Fixes: tag)",
	.seed = "001-patch-xfs-don-t-allow-nowait-dio-across-extent-boundaries.patch",
	.needs_kconfigs = kconfigs,
	.min_cpus = 1,
	.timeout = 120,
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
