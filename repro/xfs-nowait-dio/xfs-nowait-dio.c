// SPDX-License-Identifier: GPL-2.0
/*
 * xfs-nowait-dio: a RWF_NOWAIT direct write over a block and a hole must
 * report what it wrote. With the bug XFS writes the block, meets the hole and
 * returns EAGAIN (nothing written) anyway. An EAGAIN counts only from a write
 * shown to reach the iomap code. Upstream fix 883a790a8440. See README.md.
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "fs.h"
#include "xfs.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xfs/xfs.h>

#define BLK	4096
#define FSIZE	(1 << 20)	/* the write stays inside EOF: no size update */
#define MNT	"/tmp/krepro-xfs"
#define OLD	'A'
#define NEW	'B'
#define CTRL_DATA	'C'
#define CTRL_OFF	(4 * BLK)	/* the control's written extent, clear of blocks 0-1 */

static struct krepro_loopfs fs = { .fstype = "xfs", .mnt = MNT };

static void setup(void)
{
	krepro_loop_attach(320 << 20, fs.dev, sizeof(fs.dev)); /* mkfs.xfs minimum: 300 MiB */
	krepro_xfs_mkfs(fs.dev, NULL);
	krepro_loopfs_mount(&fs);
}

static void cleanup(void)
{
	krepro_loopfs_release(&fs);
}

/*
 * The file (block 0 OLD, block 1 a hole, the control's extent), reopened by
 * handle: since 6.0 a NOWAIT write that must update mtime fails before any
 * I/O, and open-by-handle sets FMODE_NOCMTIME (xfsdump's "invisible I/O").
 * All O_DIRECT: cached pages make NOWAIT bail out early.
 */
static int prepare_file(const char *name, int *plain_fd)
{
	char path[128], handle[256];
	void *buf = krepro_dio_buf(2 * BLK, OLD);
	__u32 hlen = sizeof(handle);
	xfs_fsop_handlereq_t hreq = { .path = path, .ohandle = handle, .ohandlen = &hlen };
	int fd, mntfd, hfd;

	snprintf(path, sizeof(path), MNT "/%s", name);
	fd = SAFE(open(path, O_CREAT | O_TRUNC | O_RDWR | O_DIRECT | O_CLOEXEC, 0644));
	SAFE(ftruncate(fd, FSIZE));
	if (SAFE(pwrite(fd, buf, BLK, 0)) != BLK ||
	    SAFE(pwrite(fd, buf, 2 * BLK, CTRL_OFF)) != 2 * BLK)
		krepro_broken("short write preparing the file");
	SAFE(fsync(fd));
	/* Drop any post-EOF or speculative allocation around the two extents. */
	SAFE(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, BLK, CTRL_OFF - BLK));
	SAFE(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, CTRL_OFF + 2 * BLK,
		       FSIZE - CTRL_OFF - 2 * BLK));
	/* Written 4 KiB at 0, a hole after it (the case) and the control's written
	 * 8 KiB: any other layout tests something else. */
	krepro_expect_extents(fd, FSIZE, (const off_t[][2]){ { 0, BLK }, { CTRL_OFF, 2 * BLK } },
			      2);
	free(buf);

	mntfd = SAFE(open(MNT, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	SAFE(ioctl(mntfd, XFS_IOC_PATH_TO_HANDLE, &hreq));
	hreq = (xfs_fsop_handlereq_t){ .oflags = O_RDWR | O_DIRECT, .ihandle = handle,
				       .ihandlen = hlen };
	hfd = SAFE(ioctl(mntfd, XFS_IOC_OPEN_BY_HANDLE, &hreq));
	close(mntfd);
	*plain_fd = fd;
	return hfd;
}

static struct io_uring ring;
static bool uring;	/* the io_uring case: write through the ring */

/*
 * 8 KiB of `fill` at off, RWF_NOWAIT (in io_uring: EAGAIN, not a worker's
 * retry): bytes written, or -1 with *err. *lookups: xfs_bmapi_read() calls
 * meanwhile; a write reaching xfs_direct_write_iomap_begin() makes one before
 * the fix's check, one stopped earlier (trylocks, mtime, cache) makes none.
 */
static long nowait_write(int fd, char fill, off_t off, int *err, unsigned long *lookups)
{
	struct iovec iov = { krepro_dio_buf(2 * BLK, fill), 2 * BLK };
	unsigned long before = krepro_xfs_stat(fs.dev, "blk_map");
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	long ret;

	if (!uring) {
		ret = pwritev2(fd, &iov, 1, off, RWF_NOWAIT);
		*err = errno;
	} else {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_writev(sqe, fd, &iov, 1, (__u64)off);
		sqe->rw_flags = RWF_NOWAIT;
		if (io_uring_submit_and_wait(&ring, 1) != 1 || io_uring_peek_cqe(&ring, &cqe))
			krepro_broken("io_uring: the write was not submitted or did not complete");
		ret = cqe->res < 0 ? -1 : cqe->res;
		*err = cqe->res < 0 ? -cqe->res : 0;
		io_uring_cqe_seen(&ring, cqe);
	}
	*lookups = krepro_xfs_stat(fs.dev, "blk_map") - before;
	free(iov.iov_base);
	return ret;
}

/* The positive control, just before the case, by the same descriptor and call:
 * over the written extent at CTRL_OFF it meets every check the case's write
 * meets before the fix's and needs no allocation, so it must write it all. */
static void control(const char *call, int fd, int plain)
{
	char *got = krepro_dio_buf(2 * BLK, 0), how[96];
	unsigned long lookups;
	int err = 0;
	long ret = nowait_write(fd, CTRL_DATA, CTRL_OFF, &err, &lookups);

	snprintf(how, sizeof(how), "%s(RWF_NOWAIT, 8 KiB at %d KiB)", call, CTRL_OFF / 1024);
	if (ret != 2 * BLK || !lookups)
		krepro_broken("control: %s over a written extent returned %ld (%s), extent "
			      "lookups +%lu: an EAGAIN from the case would prove nothing", how, ret,
			      ret < 0 ? strerror(err) : "bytes written", lookups);
	if (SAFE(pread(plain, got, 2 * BLK, CTRL_OFF)) != 2 * BLK || got[0] != CTRL_DATA ||
	    memcmp(got, got + 1, 2 * BLK - 1))
		krepro_broken("control: %s returned %ld but the extent does not hold its data",
			      how, ret);
	krepro_info("control: %s over a written extent wrote 8 KiB (extent lookups +%lu)",
		    how, lookups);
	free(got);
}

/* The write under test, then the file against its result: NEW in the first
 * `ret` bytes (none for EAGAIN), then OLD, then block 1's hole. NEW beyond the
 * count is the bug; a true count, short or not, PASSes once the write reached
 * the iomap code. */
static void judge(const char *how, int fd, int plain)
{
	char *got = krepro_dio_buf(2 * BLK, 0), *new;
	unsigned long lookups;
	int err = 0;
	long ret = nowait_write(fd, NEW, 0, &err, &lookups), reported = ret < 0 ? 0 : ret,
	     bad = -1;
	const char *said = ret < 0 ? strerror(err) : "bytes written";

	if (ret < 0 && err != EAGAIN)
		krepro_broken("%s: unexpected error %s", how, said);
	if (ret > 2 * BLK)
		krepro_broken("%s returned %ld, more than the %d bytes asked", how, ret, 2 * BLK);
	if (SAFE(pread(plain, got, 2 * BLK, 0)) != 2 * BLK)
		krepro_broken("short read back");
	new = memchr(got + reported, NEW, (size_t)(2 * BLK - reported));
	for (long i = 0; !new && i < 2 * BLK && bad < 0; i++)
		if (got[i] != (i < reported ? NEW : i < BLK ? OLD : 0))
			bad = i;
	if (new)
		krepro_fail("%s returned %ld (%s) but block %ld byte %ld reads %#x, expected %#x: "
			    "data was written although the call reported %s (extent lookups +%lu)",
			    how, ret, said, (new - got) / BLK, (new - got) % BLK, NEW,
			    new - got < BLK ? OLD : 0, ret < 0 ? "nothing written" : "fewer bytes",
			    lookups);
	else if (bad >= 0)
		krepro_broken("%s returned %ld but block %ld byte %ld reads %#x, neither the old "
			      "content nor the new", how, ret, bad / BLK, bad % BLK,
			      (unsigned char)got[bad]);
	else if (!lookups)
		krepro_broken("%s returned %ld (%s) with no extent lookup: it stopped before "
			      "xfs_direct_write_iomap_begin(), nothing was tested", how, ret, said);
	else
		krepro_pass("%s returned %ld (%s) and exactly that reached the file; the write "
			    "reached xfs_direct_write_iomap_begin() (extent lookups +%lu), as the "
			    "control did", how, ret, said, lookups);
	free(got);
}

/* The control, then the write under test. */
static void run_nowait(const char *name, const char *call)
{
	int plain, fd = prepare_file(name, &plain);
	char how[96];

	snprintf(how, sizeof(how), "%s(RWF_NOWAIT, 8 KiB at 0)", call);
	control(call, fd, plain);
	judge(how, fd, plain);
	close(fd);
	close(plain);
}

static void run_pwritev2(void)
{
	run_nowait("pwritev2", "pwritev2");
}

static void run_io_uring(void)
{
	int ret = io_uring_queue_init(4, &ring, 0);

	if (ret == -ENOSYS)
		krepro_skip("io_uring not available");
	if (ret < 0)
		krepro_broken("io_uring_queue_init: %s", strerror(-ret));
	uring = true;
	run_nowait("io_uring", "io_uring writev");
	io_uring_queue_exit(&ring);
}

/* SYSFS: XFS's per-mount stats, the extent lookup counter. */
static const char *const kconfigs[] = { "CONFIG_XFS_FS", "CONFIG_IO_URING",
					"CONFIG_BLK_DEV_LOOP", "CONFIG_SYSFS", NULL };

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
	/* Data on disk beyond what the write reported: read back. */
	.own_evidence = true,
	.min_cpus = 1,
	.timeout = 120,
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
