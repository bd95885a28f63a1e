// SPDX-License-Identifier: GPL-2.0
/*
 * xfs-nowait-dio: a RWF_NOWAIT direct write over one allocated block and a
 * hole must report what it wrote: EAGAIN means nothing was. With the bug, XFS
 * maps and writes the first block, meets the hole, and returns EAGAIN anyway:
 * the caller is told nothing happened, yet block 0 changed. An EAGAIN counts
 * as correct only from a write shown to reach the iomap code: a control write
 * that needs no allocation must succeed first, and XFS's extent lookup counter
 * must move during the write under test. Upstream fix 883a790a8440. See
 * README.md.
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
#define CTRL_DATA	'C'
#define CTRL_OFF	(4 * BLK)	/* the control's written extent, clear of blocks 0-1 */

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
 * Layout guard: a written 4 KiB extent at offset 0 with a hole over the second
 * block (the case under test), and one written 8 KiB extent at CTRL_OFF (the
 * control). Anything else would test something other than the bug.
 */
static void check_layout(int fd)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[8];
	} f = { .fm = { .fm_length = FSIZE, .fm_flags = FIEMAP_FLAG_SYNC,
			.fm_extent_count = 8 } };
	const struct fiemap_extent *e = f.fm.fm_extents;
	const unsigned int odd = FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_DELALLOC;

	SAFE(ioctl(fd, FS_IOC_FIEMAP, &f.fm));
	if (f.fm.fm_mapped_extents != 2 ||
	    e[0].fe_logical != 0 || e[0].fe_length != BLK || (e[0].fe_flags & odd) ||
	    e[1].fe_logical != CTRL_OFF || e[1].fe_length != 2 * BLK || (e[1].fe_flags & odd))
		krepro_broken("wrong layout: %u extents, at %llu len %llu flags %#x, at %llu len "
			      "%llu flags %#x (want written extents of %d bytes at 0 and %d at %d)",
			      f.fm.fm_mapped_extents, (unsigned long long)e[0].fe_logical,
			      (unsigned long long)e[0].fe_length, e[0].fe_flags,
			      (unsigned long long)e[1].fe_logical,
			      (unsigned long long)e[1].fe_length, e[1].fe_flags, BLK, 2 * BLK,
			      CTRL_OFF);
}

/*
 * A file whose block 0 holds OLD, whose block 1 is a hole, and whose blocks
 * at CTRL_OFF are one written extent, reopened by handle. Since 6.0 a NOWAIT
 * write that must update mtime returns EAGAIN before any I/O
 * (file_modified_flags()); XFS's open-by-handle sets FMODE_NOCMTIME, the
 * "invisible I/O" path xfsdump uses, so the write reaches the iomap code.
 * Everything goes through O_DIRECT: cached pages make NOWAIT bail out early.
 */
static int prepare_file(const char *name, int *plain_fd)
{
	char path[128];
	void *buf = krepro_dio_buf(2 * BLK, OLD);
	char handle[256];
	__u32 hlen = sizeof(handle);
	xfs_fsop_handlereq_t hreq = { 0 };
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

/*
 * Extent lookups XFS has made on this filesystem: xfs_bmapi_read() calls, the
 * first number of the blk_map line of its per-mount stats. A NOWAIT direct
 * write that reaches xfs_direct_write_iomap_begin() makes at least one before
 * the fix's check; one that stops earlier (lock trylock, mtime, cached pages)
 * makes none.
 */
static unsigned long extent_lookups(void)
{
	char path[96], line[256];
	unsigned long n;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/fs/xfs/%s/stats/stats", strrchr(dev, '/') + 1);
	f = fopen(path, "re");
	if (!f)
		krepro_broken("open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "blk_map %lu", &n) == 1) {
			fclose(f);
			return n;
		}
	fclose(f);
	krepro_broken("%s has no blk_map line", path);
}

/* A case's way of making a NOWAIT write: bytes written, or -1 with *err. */
typedef long (*nowait_write_fn)(int fd, void *buf, size_t len, off_t off, int *err);

/*
 * The positive control: a NOWAIT write of 8 KiB of CTRL_DATA over the written
 * extent at CTRL_OFF, through the same descriptor and the same call as the
 * case, just before it. It meets every check of the descriptor and the inode
 * that the case's write meets before the fix's (the iolock and ilock
 * trylocks, the mtime update, extents read in) and needs no allocation, so it
 * must write everything on either kernel; if it does not, the case's EAGAIN
 * would prove nothing: BROKEN. Cached pages are checked per range: for the
 * case's range the lookup counter answers. It touches neither block 0 nor
 * block 1, allocates nothing and leaves size and mtime.
 */
static void control(const char *call, nowait_write_fn nowait_write, int fd, int plain)
{
	char *buf = krepro_dio_buf(2 * BLK, CTRL_DATA), *got = krepro_dio_buf(2 * BLK, 0);
	unsigned long before = extent_lookups(), lookups;
	char how[96];
	int err = 0;
	long ret;

	snprintf(how, sizeof(how), "%s(RWF_NOWAIT, 8 KiB at %d KiB)", call, CTRL_OFF / 1024);
	ret = nowait_write(fd, buf, 2 * BLK, CTRL_OFF, &err);
	lookups = extent_lookups() - before;
	if (ret != 2 * BLK)
		krepro_broken("control did not reach iomap: %s over a written extent returned "
			      "%ld (%s); a NOWAIT write that needs no allocation stopped early, so "
			      "an EAGAIN from the case would prove nothing", how, ret,
			      ret < 0 ? strerror(err) : "short");
	if (SAFE(pread(plain, got, 2 * BLK, CTRL_OFF)) != 2 * BLK ||
	    memcmp(got, buf, 2 * BLK))
		krepro_broken("control: %s returned %ld but the extent does not hold its data",
			      how, ret);
	if (!lookups)
		krepro_broken("control: %s wrote 8 KiB but XFS's blk_map counter did not move: "
			      "it cannot show whether a write reached the iomap code", how);
	krepro_info("control: %s over a written extent wrote 8 KiB (extent lookups +%lu)",
		    how, lookups);
	free(buf);
	free(got);
}

/*
 * Compare what the file holds with what the write's result says happened:
 * the first `ret` bytes NEW (none for EAGAIN), the rest of block 0 OLD, the
 * rest of block 1 a hole. NEW beyond the reported count is the bug. A short
 * count whose data matches is the truth told, not the bug: like a full write
 * or an EAGAIN with nothing written, it PASSes once the write was shown to
 * reach the iomap code (lookups).
 */
static void judge(const char *how, long ret, int err, unsigned long lookups, int fd)
{
	char *got = krepro_dio_buf(2 * BLK, 0);
	long reported = ret < 0 ? 0 : ret, bad = -1;

	if (ret < 0 && err != EAGAIN)
		krepro_broken("%s: unexpected error %s", how, strerror(err));
	if (ret > 2 * BLK)
		krepro_broken("%s returned %ld, more than the %d bytes asked", how, ret, 2 * BLK);
	if (SAFE(pread(fd, got, 2 * BLK, 0)) != 2 * BLK)
		krepro_broken("short read back");
	krepro_info("%s returned %ld (%s); extent lookups during it: +%lu", how, ret,
		    ret < 0 ? strerror(err) : "bytes written", lookups);
	for (long i = reported; i < 2 * BLK; i++)
		if (got[i] == NEW) {
			krepro_fail("%s returned %ld (%s) but block %ld byte %ld reads %#x, expected "
				    "%#x: data was written although the call reported %s", how, ret,
				    ret < 0 ? strerror(err) : "bytes written", i / BLK, i % BLK,
				    (unsigned char)got[i], i < BLK ? OLD : 0,
				    ret < 0 ? "nothing written" : "fewer bytes");
			free(got);
			return;
		}
	for (long i = 0; i < 2 * BLK && bad < 0; i++)
		if (got[i] != (i < reported ? NEW : i < BLK ? OLD : 0))
			bad = i;
	if (bad >= 0)
		krepro_broken("%s returned %ld but block %ld byte %ld reads %#x, neither the old "
			      "content nor the new", how, ret, bad / BLK, bad % BLK,
			      (unsigned char)got[bad]);
	if (!lookups)
		krepro_broken("%s returned %ld (%s) with no extent lookup: it stopped before "
			      "xfs_direct_write_iomap_begin(), nothing was tested", how, ret,
			      ret < 0 ? strerror(err) : "bytes written");
	if (ret < 0)
		krepro_pass("%s returned EAGAIN and block 0 is unchanged; the write reached "
			    "xfs_direct_write_iomap_begin() (extent lookups +%lu), as the control "
			    "write over a written extent did", how, lookups);
	else
		krepro_pass("%s wrote %ld of %d bytes and exactly those reached the file "
			    "(extent lookups +%lu)", how, ret, 2 * BLK, lookups);
	free(got);
}

/* The control, then the write under test with its extent lookups counted. */
static void run_nowait(const char *name, const char *call, nowait_write_fn nowait_write)
{
	int plain, fd = prepare_file(name, &plain), err = 0;
	void *buf = krepro_dio_buf(2 * BLK, NEW);
	unsigned long before;
	char how[96];
	long ret;

	snprintf(how, sizeof(how), "%s(RWF_NOWAIT, 8 KiB at 0)", call);
	control(call, nowait_write, fd, plain);
	before = extent_lookups();
	ret = nowait_write(fd, buf, 2 * BLK, 0, &err);
	judge(how, ret, err, extent_lookups() - before, plain);
	free(buf);
	close(fd);
	close(plain);
}

static long pwritev2_nowait(int fd, void *buf, size_t len, off_t off, int *err)
{
	struct iovec iov = { buf, len };
	long ret = pwritev2(fd, &iov, 1, off, RWF_NOWAIT);

	*err = errno;
	return ret;
}

static struct io_uring ring;

static long io_uring_nowait(int fd, void *buf, size_t len, off_t off, int *err)
{
	struct iovec iov = { buf, len };
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_prep_writev(sqe, fd, &iov, 1, (__u64)off);
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
	*err = ret < 0 ? -ret : 0;
	return ret < 0 ? -1 : ret;
}

static void run_pwritev2(void)
{
	run_nowait("pwritev2", "pwritev2", pwritev2_nowait);
}

static void run_io_uring(void)
{
	int ret = io_uring_queue_init(4, &ring, 0);

	if (ret < 0) {
		if (ret == -ENOSYS)
			krepro_skip("io_uring not available");
		krepro_broken("io_uring_queue_init: %s", strerror(-ret));
	}
	run_nowait("io_uring", "io_uring writev", io_uring_nowait);
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
