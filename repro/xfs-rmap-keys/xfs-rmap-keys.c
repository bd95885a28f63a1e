// SPDX-License-Identifier: GPL-2.0
/*
 * xfs-rmap-keys: the 5.9.9 regression. Seed 003 made the rmapbt key compare
 * include the offset's flag bits (attr fork, bmbt, unwritten). Correct kernels
 * leave node keys whose unwritten bit differs from their child's first record
 * (the record was converted to written; the masked compare called the key
 * equal and kept it). With 003 a lookup of that record goes to the wrong leaf
 * and XFS reports corruption on a filesystem xfs_repair calls clean, also in
 * log recovery, so at mount. Fix: the revert, eb8409071a1d. See README.md.
 *
 * The disk is made once by the patched (correct) kernel in prepare(); every
 * run gets a copy-on-write view of it (run-in-qemu.sh). It holds five 512 MiB
 * filesystems, one per case, so that one case's shutdown cannot touch the next.
 */
#define _GNU_SOURCE
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DISK		"/dev/vda"
#define BLK		KREPRO_XFS_BLK
#define FILE_BLOCKS	2048			/* 8 MiB: ~1,000 one-block records */
#define REGION		(512LL << 20)		/* one filesystem */
#define PRISTINE	"/tmp/krepro-rmap-pristine.img"
#define ATTEMPT		"/tmp/krepro-rmap-attempt.img"
#define ATTEMPTS	64

/* The disk's filesystems: the natural image three times, the same image with
 * a dirty log holding an unfinished rmap intent, and that log replayed. */
enum region { R_PUNCH, R_WRITE, R_REFLINK, R_DIRTY, R_REPLAYED, NREGIONS };

/* A root key whose unwritten bit disagrees with its leaf's first record. */
struct stale_key {
	unsigned int index, numrecs;
	uint64_t key_offset, rec_offset, owner, block;	/* block: file block */
	uint32_t agbno;		/* the AG block the record maps file block B to */
};

/* What one case has attached and mounted, for its own clean-up. nouuid: the
 * five filesystems are copies of one (and a case that failed may leave its
 * shut-down filesystem mounted). */
static struct krepro_loopfs fs = { .fstype = "xfs", .data = "nouuid" };

static int find_stale_key(const char *dev, struct stale_key *sk)
{
	unsigned char root[BLK], leaf[BLK];

	krepro_xfs_rmap_root(dev, root);
	sk->numrecs = krepro_be16(root + 6);
	for (unsigned int i = 0; krepro_be16(root + 4) == 1 && i < sk->numrecs; i++) {
		const unsigned char *key = root + KREPRO_XFS_BB_HDR + i * KREPRO_RMAP_KEY_PAIR;

		krepro_xfs_rmap_leaf(dev, root, i, leaf);
		sk->key_offset = krepro_be64(key + 12);
		sk->rec_offset = krepro_be64(leaf + KREPRO_XFS_BB_HDR + 16);
		sk->owner = krepro_be64(key + 4);
		sk->block = sk->rec_offset & ~KREPRO_RMAP_FLAGS;
		sk->agbno = krepro_be32(leaf + KREPRO_XFS_BB_HDR);
		if ((sk->key_offset & ~KREPRO_RMAP_FLAGS) == sk->block &&
		    (sk->key_offset & KREPRO_RMAP_UNWRITTEN) &&
		    !(sk->rec_offset & KREPRO_RMAP_UNWRITTEN)) {
			sk->index = i;
			return 0;
		}
	}
	return -1;
}

static void attach(const char *path, off_t offset, const char *name)
{
	char mnt[64];

	snprintf(mnt, sizeof(mnt), "/tmp/krepro-rmap-%s", name);
	krepro_loopfs_attach(&fs, path, offset, REGION, mnt);
}

/* ---- preparation (patched kernel) ---- */

/*
 * ~1,000 one-block unwritten records (fallocate 8 MiB, punch every other
 * block) make a two-level rmapbt; then write the block that starts a leaf in
 * the middle of the root, so that record turns written while its parent key
 * keeps the unwritten bit.
 */
static void make_natural_image(void)
{
	static const char *mkfs[] = { "mkfs.xfs", "-q", "-f", "-m", "rmapbt=1,reflink=1",
				      NULL, NULL };
	unsigned char root[BLK];
	struct stale_key sk;
	void *buf = krepro_dio_buf(BLK, 'W');
	unsigned int pick;
	uint64_t block;
	char path[128];
	int fd;

	mkfs[5] = fs.dev;
	krepro_must_run(mkfs);
	krepro_loopfs_mount(&fs);
	snprintf(path, sizeof(path), "%s/f", fs.mnt);
	krepro_xfs_fragmented_file(path, FILE_BLOCKS);
	krepro_loopfs_umount(&fs);

	/* Pick the middle key: refilling the AGFL can split the first leaves. */
	krepro_xfs_rmap_root(fs.dev, root);
	if (krepro_be16(root + 4) != 1 || krepro_be16(root + 6) < 3)
		krepro_broken("AG 0's rmapbt has level %u with %u keys, want a two-level tree",
			      krepro_be16(root + 4), krepro_be16(root + 6));
	pick = krepro_be16(root + 6) / 2;
	block = krepro_be64(root + KREPRO_XFS_BB_HDR + pick * KREPRO_RMAP_KEY_PAIR + 12);
	if (!(block & KREPRO_RMAP_UNWRITTEN))
		krepro_broken("root key %u is not an unwritten extent's (offset %#llx)", pick,
			      (unsigned long long)block);
	block &= ~KREPRO_RMAP_FLAGS;
	krepro_info("rmapbt: %u keys; key %u starts with file block %llu",
		    krepro_be16(root + 6), pick, (unsigned long long)block);

	krepro_loopfs_mount(&fs);
	fd = krepro_loopfs_open(&fs, "f", O_RDWR | O_DIRECT);
	if (SAFE(pwrite(fd, buf, BLK, (off_t)block * BLK)) != BLK)
		krepro_broken("short write at file block %llu", (unsigned long long)block);
	SAFE(fsync(fd));
	close(fd);
	krepro_loopfs_umount(&fs);
	free(buf);

	if (find_stale_key(fs.dev, &sk) < 0)
		krepro_broken("after the write no root key is stale: the layout changed");
	krepro_info("root key %u: raw offset %#llx (unwritten), its leaf's first record %#llx "
		    "(written)", sk.index, (unsigned long long)sk.key_offset,
		    (unsigned long long)sk.rec_offset);
	if (krepro_xfs_repair_n(fs.dev, "of the natural image", false))
		krepro_broken("the natural image is not clean");
}

/* The punch of one file block, as krepro_xfs_down_during() runs it. */
struct punch {
	int fd;
	uint64_t block;
};

static int punch(void *arg)
{
	struct punch *p = arg;

	return fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			 (off_t)p->block * BLK, BLK);
}

/*
 * One try at a log with an unfinished rmap intent for block B: punch B (its
 * transaction chain logs an RUI, then an RUD when the rmapbt is updated) and
 * shut down delay seconds in, so a transaction not yet committed never
 * reaches the log. delay < 0: no shutdown; returns how long the punch took.
 */
static double punch_and_go_down(uint64_t block, double delay)
{
	struct punch p = { .block = block };
	double took;
	bool ok;

	krepro_loopfs_mount(&fs);
	p.fd = krepro_loopfs_open(&fs, "f", O_RDWR);
	took = krepro_xfs_down_during(fs.mnt, punch, &p, delay, &ok);
	if (delay < 0 && !ok)
		krepro_broken("punching file block %llu failed on the correct kernel",
			      (unsigned long long)block);
	close(p.fd);
	krepro_loopfs_umount(&fs);
	return took;
}

/*
 * The dirty log: on copies of the natural image, punch the stale key's block
 * and shut down part-way, until the log holds the punch's RUI without its RUD.
 * The window is the time between the two commits; the delays sweep the
 * punch's measured duration four times at different scales, bounded by
 * ATTEMPTS. Under TCG the guest's clock is jiffies (4 ms), so a delay is
 * coarse and a sweep can miss the window: one 32-attempt sweep did, once.
 */
static int make_dirty_image(const struct stale_key *sk)
{
	struct stale_key stale;
	double took;

	unlink(ATTEMPT);
	krepro_copy_nonzero(PRISTINE, 0, ATTEMPT, 0, REGION);
	attach(ATTEMPT, 0, "attempt");
	took = punch_and_go_down(sk->block, -1);
	krepro_loopfs_detach(&fs);
	krepro_info("punching file block %llu takes %.1f ms here", (unsigned long long)sk->block,
		    took * 1e3);
	for (int i = 0; i < ATTEMPTS; i++) {
		static const double scale[] = { 1.0, 1.5, 0.75, 1.25 };
		double delay = took * (i % 16) / 16 * scale[i / 16];
		int found;

		unlink(ATTEMPT);
		krepro_copy_nonzero(PRISTINE, 0, ATTEMPT, 0, REGION);
		attach(ATTEMPT, 0, "attempt");
		punch_and_go_down(sk->block, delay);
		krepro_loopfs_detach(&fs);
		found = krepro_xfs_log_unfinished(ATTEMPT, "RUI", "RUD") > 0;
		krepro_info("attempt %d: shut down %.2f ms after the punch began: %s", i + 1,
			    delay * 1e3, found ? "the log holds an unfinished RUI" :
			    "no unfinished RUI");
		if (!found)
			continue;
		/* Recovery must meet the stale key: the rmapbt on disk is still
		 * the one before the punch. */
		attach(ATTEMPT, 0, "attempt");
		found = !find_stale_key(fs.dev, &stale);
		krepro_loopfs_detach(&fs);
		if (found)
			return i + 1;
		krepro_info("attempt %d: but the rmapbt on disk no longer has the stale key",
			    i + 1);
	}
	return 0;
}

static void prepare(void)
{
	struct stale_key sk;
	int attempts;

	attach(DISK, 0, "prepare");
	make_natural_image();
	krepro_copy_nonzero(fs.dev, 0, PRISTINE, 0, REGION);
	find_stale_key(fs.dev, &sk);
	krepro_loopfs_detach(&fs);
	krepro_copy_nonzero(PRISTINE, 0, DISK, R_WRITE * REGION, REGION);
	krepro_copy_nonzero(PRISTINE, 0, DISK, R_REFLINK * REGION, REGION);

	attempts = make_dirty_image(&sk);
	if (!attempts)
		krepro_broken("no log with an unfinished rmap intent in %d attempts", ATTEMPTS);
	attach(ATTEMPT, 0, "attempt");
	krepro_xfs_repair_n(fs.dev, "of the dirty image (log not replayed)", false);
	krepro_loopfs_detach(&fs);
	krepro_copy_nonzero(ATTEMPT, 0, DISK, R_DIRTY * REGION, REGION);

	/* What a correct kernel makes of that log: replay it, keep the result. */
	attach(ATTEMPT, 0, "attempt");
	krepro_loopfs_mount(&fs);
	krepro_loopfs_umount(&fs);
	if (krepro_xfs_repair_n(fs.dev, "after the correct kernel replayed the log", false))
		krepro_broken("the correct kernel's log replay left a filesystem repair rejects");
	krepro_loopfs_detach(&fs);
	krepro_copy_nonzero(ATTEMPT, 0, DISK, R_REPLAYED * REGION, REGION);
	unlink(ATTEMPT);
	unlink(PRISTINE);
	krepro_pass("disk made by this (correct) kernel: the natural image (stale unwritten bit "
		    "in root key %u) and a dirty log from attempt %d", sk.index, attempts);
}

/* ---- the cases (either kernel) ---- */

static struct stale_key target;

/*
 * A step failed. The bug makes the rmap code find corruption on a filesystem
 * xfs_repair -n calls clean: the step fails with EUCLEAN (-EFSCORRUPTED) and
 * XFS reports an internal error in xfs_rmap.c. The report is the FAIL: it
 * names the rmap code. EUCLEAN alone (any XFS check may give it) or any
 * other failure is not shown to be this bug: BROKEN, naming the errnos.
 * The case's filesystem is let go of once the report is read.
 */
static void step_failed(int kmsg, const struct krepro_steps *st, const char *what)
{
	char caller[128] = "";
	bool euclean = krepro_steps_gave(st, EUCLEAN),
	     report = krepro_xfs_internal_error(kmsg, fs.dev, "xfs_rmap.c", caller,
						sizeof(caller));

	krepro_loopfs_release(&fs);
	if (report)
		krepro_fail("%s: %s (XFS: internal error in xfs_rmap.c, caller %s)%s", what,
			    st->text, caller,
			    euclean ? "" : " without EUCLEAN");
	else
		krepro_broken("%s: %s: %s no corruption report from xfs_rmap.c%s, so not shown "
			      "to be this bug", what, st->text,
			      euclean ? "EUCLEAN but" : "no EUCLEAN and",
			      kmsg < 0 ? " (kmsg unreadable)" : "");
}

/*
 * The steps on file B is in are done: fsync and close it. If a step failed,
 * step_failed() on "<doing> file block B of a filesystem xfs_repair -n
 * called clean", and false.
 */
static bool steps_synced(int fd, int kmsg, struct krepro_steps *st, const char *doing)
{
	char what[160];
	int ret = fsync(fd);

	krepro_step(st, "fsync", ret == 0, errno);
	close(fd);
	if (!st->failed)
		return true;
	snprintf(what, sizeof(what), "%s file block %llu of a filesystem xfs_repair -n called "
		 "clean", doing, (unsigned long long)target.block);
	step_failed(kmsg, st, what);
	return false;
}

/* /dev/kmsg at its end, for the case's corruption report; -1 says so. */
static int kmsg_open(void)
{
	int fd = krepro_kmsg_open();

	if (fd < 0)
		krepro_info("open /dev/kmsg: %s: XFS's reports are not read", strerror(errno));
	return fd;
}

/* Attach the case's filesystem; check the stale key and that repair calls it
 * clean, then mount it. */
static void case_setup(enum region r, const char *name)
{
	attach(DISK, r * REGION, name);
	if (find_stale_key(fs.dev, &target) < 0)
		krepro_broken(DISK " has no stale rmapbt key: not the prepared disk");
	krepro_info("root key %u of %u: raw offset %#llx (unwritten bit set), leaf's first "
		    "record %#llx (written), owner %llu", target.index, target.numrecs,
		    (unsigned long long)target.key_offset, (unsigned long long)target.rec_offset,
		    (unsigned long long)target.owner);
	if (krepro_xfs_repair_n(fs.dev, "before mounting", false))
		krepro_broken("the filesystem is not clean before mounting");
	krepro_loopfs_mount(&fs);
}

/*
 * After the steps succeeded: unmount; repair must still call it clean, and
 * the rmapbt on disk must show the steps' own change (shown() says what it
 * found in evidence), or the code under test was not shown to run.
 */
static void case_finish(const char *what, bool (*shown)(char *evidence, size_t size))
{
	char evidence[256];

	krepro_loopfs_umount(&fs);
	if (krepro_xfs_repair_n(fs.dev, "after the steps", false)) {
		krepro_fail("%s succeeded but left a filesystem xfs_repair -n rejects", what);
	} else if (!shown(evidence, sizeof(evidence))) {
		krepro_loopfs_detach(&fs);
		krepro_broken("%s succeeded, but %s", what, evidence);
	} else {
		krepro_pass("%s; xfs_repair -n still clean; %s", what, evidence);
	}
	krepro_loopfs_detach(&fs);
}

/*
 * Punch, the reflink's remap and log recovery all unmap B: on disk, no
 * record maps file block B to its old AG block any more. Finding the record
 * to delete took a lookup of B's record, which goes through the stale key.
 */
static bool b_unmapped(char *evidence, size_t size)
{
	uint32_t agbno;
	bool unwritten, mapped = krepro_xfs_rmap_lookup(fs.dev, target.owner, target.block,
							&agbno, &unwritten) &&
				 agbno == target.agbno;

	snprintf(evidence, size, "the rmapbt %s the record mapping file block %llu to AG block "
		 "%u%s", mapped ? "still has" : "no longer has", (unsigned long long)target.block,
		 target.agbno, mapped ? ": the unmap under test did not happen" :
		 ": its lookup through the stale key found it");
	return !mapped;
}

/* Punch the block whose record sits behind the stale key: the lookup of its
 * record must go through that key. */
static void run_punch(void)
{
	struct krepro_steps st = { 0 };
	int fd, ret, kmsg;

	case_setup(R_PUNCH, "punch");
	kmsg = kmsg_open();
	fd = krepro_loopfs_open(&fs, "f", O_RDWR);
	ret = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)target.block * BLK, BLK);
	krepro_step(&st, "fallocate", ret == 0, errno);
	if (steps_synced(fd, kmsg, &st, "punching"))
			case_finish("punching the stale key's block", b_unmapped);
}

/*
 * Write into the unwritten extents next to the stale key's record: the last
 * record of the leaf before it (B-2), the second record of its leaf (B+2),
 * and the hole between (B+1, which the allocator may place right after B's
 * block, so that the new record merges with B's).
 */
static const int write_rel[] = { -2, 2, 1 };
#define WRITES	(sizeof(write_rel) / sizeof(write_rel[0]))

/* The written blocks have written records in the rmapbt: the conversions of
 * B-2 and B+2 and the allocation of B+1 reached it. */
static bool writes_recorded(char *evidence, size_t size)
{
	for (unsigned int i = 0; i < WRITES; i++) {
		uint64_t block = target.block + (uint64_t)(int64_t)write_rel[i];
		uint32_t agbno;
		bool unwritten;

		if (!krepro_xfs_rmap_lookup(fs.dev, target.owner, block, &agbno, &unwritten) ||
		    unwritten) {
			snprintf(evidence, size, "file block %llu (B%+d) has no written record in "
				 "the rmapbt: the rmap updates under test did not happen",
				 (unsigned long long)block, write_rel[i]);
			return false;
		}
	}
	snprintf(evidence, size, "file blocks B-2, B+2 and B+1 have written records in the "
		 "rmapbt");
	return true;
}

static void run_write(void)
{
	void *buf = krepro_dio_buf(BLK, 'w');
	struct krepro_steps st = { 0 };
	int fd, kmsg;

	case_setup(R_WRITE, "write");
	kmsg = kmsg_open();
	fd = krepro_loopfs_open(&fs, "f", O_RDWR | O_DIRECT);
	for (unsigned int i = 0; i < WRITES; i++) {
		off_t off = ((off_t)target.block + write_rel[i]) * BLK;
		ssize_t n = pwrite(fd, buf, BLK, off);
		char name[48];

		snprintf(name, sizeof(name), "block %lld (B%+d)", (long long)(off / BLK),
			 write_rel[i]);
		krepro_step(&st, name, n == BLK, n < 0 ? errno : 0);
	}
	free(buf);
	if (!steps_synced(fd, kmsg, &st, "O_DIRECT writes next to"))
		return;
	krepro_info("O_DIRECT writes: %s", st.text);
	krepro_loopfs_umount(&fs);
	{
		struct stale_key after;

		krepro_info("after the writes root key %u is %s", target.index,
			    find_stale_key(fs.dev, &after) ? "no longer stale: writing in its leaf "
			    "rewrote the leaf's keys" : "still stale");
	}
	krepro_loopfs_mount(&fs);
	case_finish("writing the unwritten blocks next to the stale key's record",
		    writes_recorded);
}

/*
 * Reflink onto the affected record: clone a written block of the same file
 * from far away (block 0, written here first; its record lives in the first
 * leaves) over file block B. The remap unmaps f's mapping of B first (f is
 * now a reflink inode: xfs_rmap_unmap_shared), and that lookup goes through
 * the stale key. Nothing may touch B's leaf before: any insert or update
 * there rewrites the leaf's keys and heals the stale bit (see the write case).
 */
static void run_reflink(void)
{
	void *buf = krepro_dio_buf(BLK, 'd');
	struct krepro_steps st = { 0 };
	int fd, dio, ret, kmsg;

	case_setup(R_REFLINK, "reflink");
	kmsg = kmsg_open();
	dio = krepro_loopfs_open(&fs, "f", O_RDWR | O_DIRECT);
	if (SAFE(pwrite(dio, buf, BLK, 0)) != BLK)
		krepro_broken("short write to file block 0");
	SAFE(fsync(dio));
	close(dio);
	free(buf);
	fd = krepro_loopfs_open(&fs, "f", O_RDWR);
	ret = krepro_clone_block(fd, (off_t)target.block * BLK, fd, 0);
	krepro_step(&st, "FICLONERANGE", ret == 0, errno);
	if (steps_synced(fd, kmsg, &st, "cloning file block 0 over"))
		case_finish("cloning file block 0 over the stale key's block", b_unmapped);
}

/*
 * The log a correct kernel left when it went down part-way through punching
 * B: recovery must finish the punch's rmap intent, and that lookup goes
 * through the stale key. The same log replayed by the correct kernel (made
 * in prepare()) is the reference xfs_repair -n checks, because repair cannot
 * judge a filesystem whose log is still to be replayed.
 */
static void run_mount_replay(void)
{
	struct krepro_steps st = { 0 };
	int ret, kmsg;

	attach(DISK, R_REPLAYED * REGION, "replayed");
	if (krepro_xfs_repair_n(fs.dev, "of the same log as replayed by the correct kernel",
				false))
		krepro_broken("the correct kernel's replay is not clean: not the prepared disk");
	krepro_loopfs_detach(&fs);

	attach(DISK, R_DIRTY * REGION, "replay");
	if (find_stale_key(fs.dev, &target) < 0)
		krepro_broken(DISK " has no stale rmapbt key: not the prepared disk");
	krepro_info("dirty log; on disk root key %u still has raw offset %#llx, its leaf's "
		    "first record %#llx", target.index, (unsigned long long)target.key_offset,
		    (unsigned long long)target.rec_offset);
	kmsg = kmsg_open();
	ret = krepro_loopfs_try_mount(&fs);
	krepro_step(&st, "mount (log recovery)", ret == 0, errno);
	if (st.failed) {
		step_failed(kmsg, &st, "replaying a log that the correct kernel replays to a "
			    "filesystem xfs_repair -n calls clean");
		return;
	}
	case_finish("mounting and replaying the log", b_unmapped);
}

static void cleanup(void)
{
	/* Each case tidies up after itself; this is for one that stopped early. */
	krepro_loopfs_release(&fs);
}

static const char *const kconfigs[] = { "CONFIG_XFS_FS", "CONFIG_VIRTIO_BLK",
					"CONFIG_BLK_DEV_LOOP", NULL };

static const struct krepro_case cases[] = {
	{ "mount-replay", run_mount_replay },
	{ "punch", run_punch },
	{ "write", run_write },
	{ "reflink", run_reflink },
	{ NULL, NULL },
};

static const struct krepro_test test = {
	.name = "xfs-rmap-keys",
	.summary = "rmapbt key compare includes fork/bmbt/unwritten bits: false corruption on rmap+reflink filesystems",
	.fix_commit = "eb8409071a1d (\"xfs: revert 'xfs: fix rmap key and record comparison functions'\")",
	.bug_commit = "6ff646b2ceb0 (\"xfs: fix rmap key and record comparison functions\")",
	.seed = "003-patch-xfs-fix-rmap-key-and-record-comparison-functions.patch (bug), 011-commit-eb8409071a1d-... (fix)",
	.needs_kconfigs = kconfigs,
	/* XFS's internal error report from xfs_rmap.c, read in kmsg, on a
	 * filesystem repair calls clean: XFS checks its btrees and says so
	 * without a debug option. */
	.own_evidence = true,
	.min_cpus = 1,
	.timeout = 240,
	.disk_mib = NREGIONS * 512,
	.prepare = prepare,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
