// SPDX-License-Identifier: GPL-2.0
/*
 * xfs-rmap-keys: the 5.9.9 regression. Seed 003 made the rmapbt key compare
 * include the offset's flag bits. Correct kernels leave node keys whose
 * unwritten bit differs from their child's first record; with 003 a lookup of
 * that record goes to the wrong leaf and XFS reports corruption on a
 * filesystem xfs_repair calls clean, also in log recovery. Fix: the revert,
 * eb8409071a1d. The patched kernel makes the disk in prepare(). See README.md.
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "fs.h"
#include "xfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* nouuid: the five filesystems are copies of one. */
static struct krepro_loopfs fs = { .fstype = "xfs", .data = "nouuid" };

/* Attach one filesystem of the disk or a file, to mount at mnt. */
#define MNT(name)	"/tmp/krepro-rmap-" name
#define attach(path, offset, mnt) krepro_loopfs_attach(&fs, path, offset, REGION, mnt)

/* ---- preparation (patched kernel) ---- */

/*
 * ~1,000 one-block unwritten records (krepro_xfs_rmap_image()) make a
 * two-level rmapbt; then write the block that starts a leaf in the middle of
 * the root (refilling the AGFL can split the first leaves), so that record
 * turns written while its parent key keeps the unwritten bit.
 */
static void make_natural_image(void)
{
	unsigned char root[BLK], leaf[BLK];
	struct krepro_rmap_stale_key sk;
	unsigned int pick = krepro_xfs_rmap_image(fs.dev, fs.mnt, FILE_BLOCKS, root) / 2;
	uint64_t key = krepro_be64(root + KREPRO_XFS_BB_HDR + pick * KREPRO_RMAP_KEY_PAIR + 12);
	uint64_t block;

	krepro_xfs_rmap_leaf(fs.dev, root, pick, leaf);
	block = krepro_be64(leaf + KREPRO_XFS_BB_HDR + 16);
	if (!(block & KREPRO_RMAP_UNWRITTEN))
		krepro_broken("root key %u's leaf does not start with an unwritten extent "
			      "(offset %#llx)", pick, (unsigned long long)block);
	block &= ~KREPRO_RMAP_FLAGS;
	krepro_loopfs_mount(&fs);
	krepro_loopfs_write_block(&fs, "f", block, 'W');
	krepro_loopfs_umount(&fs);
	if (krepro_xfs_rmap_stale_key(fs.dev, &sk) < 0 && !(key & KREPRO_RMAP_UNWRITTEN)) {
		/* Since upstream 08c987deca56 ("xfs: fix rm_offset flag handling
		 * in rmap keys", in 6.12, not in 6.1) node keys are written without
		 * the unwritten bit: this kernel never leaves a stale one. Users'
		 * filesystems carry them from older kernels: give the key the bit
		 * a 6.1 kernel leaves there (README, The natural image). */
		krepro_info("this kernel writes rmapbt keys without the unwritten bit: root key %u "
			    "gets it as a 6.1 kernel leaves it", pick);
		krepro_xfs_rmap_mark_key_unwritten(fs.dev, pick);
	}
	if (krepro_xfs_rmap_stale_key(fs.dev, &sk) < 0)
		krepro_broken("after the write no root key is stale: the layout changed");
	krepro_info("rmapbt: %u root keys; key %u: raw offset %#llx (unwritten), its leaf's "
		    "first record %#llx (written)", sk.numrecs, sk.index,
		    (unsigned long long)sk.key_offset, (unsigned long long)sk.rec_offset);
	if (krepro_xfs_repair_n(fs.dev, "of the natural image", false))
		krepro_broken("the natural image is not clean");
}

static struct krepro_rmap_stale_key target;	/* the prepared one, or the case's */

/* Punch the stale key's block B of the file open at *fd. */
static int punch(void *fd)
{
	return krepro_punch_block(*(int *)fd, (off_t)target.block * BLK);
}

/* Punch B (its transactions log an RUI, then the RUD) on a copy of the
 * natural image and shut down delay seconds in (< 0: never); returns how long
 * the punch took. */
static double punch_and_go_down(double delay)
{
	double took;
	bool ok;
	int fd;

	unlink(ATTEMPT);
	krepro_copy_nonzero(PRISTINE, 0, ATTEMPT, 0, REGION);
	attach(ATTEMPT, 0, MNT("attempt"));
	krepro_loopfs_mount(&fs);
	fd = krepro_loopfs_open(&fs, "f", O_RDWR);
	took = krepro_xfs_down_during(fs.mnt, punch, &fd, delay, &ok);
	if (delay < 0 && !ok)
		krepro_broken("punching file block %llu failed on the correct kernel",
			      (unsigned long long)target.block);
	close(fd);
	krepro_loopfs_umount(&fs);
	krepro_loopfs_detach(&fs);
	return took;
}

/*
 * The dirty log: punch the stale key's block and shut down part-way until the
 * log holds the punch's RUI without its RUD. The delays sweep the punch's
 * duration four times at different scales: under TCG the clock is jiffies
 * (4 ms), and one 32-attempt sweep once missed the window.
 */
static int make_dirty_image(void)
{
	struct krepro_rmap_stale_key stale;
	double took = punch_and_go_down(-1);

	krepro_info("punching file block %llu takes %.1f ms here",
		    (unsigned long long)target.block, took * 1e3);
	for (int i = 0; i < ATTEMPTS; i++) {
		static const double scale[] = { 1.0, 1.5, 0.75, 1.25 };
		double delay = took * (i % 16) / 16 * scale[i / 16];
		int found;

		punch_and_go_down(delay);
		found = krepro_xfs_log_unfinished(ATTEMPT, "RUI", "RUD") > 0;
		krepro_info("attempt %d: shut down %.2f ms after the punch began: %s", i + 1,
			    delay * 1e3, found ? "the log holds an unfinished RUI" :
			    "no unfinished RUI");
		if (!found)
			continue;
		/* Recovery must meet the stale key still on disk. */
		attach(ATTEMPT, 0, MNT("attempt"));
		found = !krepro_xfs_rmap_stale_key(fs.dev, &stale);
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
	int attempts;

	attach(DISK, 0, MNT("prepare"));
	make_natural_image();
	krepro_copy_nonzero(fs.dev, 0, PRISTINE, 0, REGION);
	krepro_xfs_rmap_stale_key(fs.dev, &target);
	krepro_loopfs_detach(&fs);
	krepro_copy_nonzero(PRISTINE, 0, DISK, R_WRITE * REGION, REGION);
	krepro_copy_nonzero(PRISTINE, 0, DISK, R_REFLINK * REGION, REGION);

	attempts = make_dirty_image();
	if (!attempts)
		krepro_broken("no log with an unfinished rmap intent in %d attempts", ATTEMPTS);
	attach(ATTEMPT, 0, MNT("attempt"));
	krepro_xfs_repair_n(fs.dev, "of the dirty image (log not replayed)", false);
	krepro_copy_nonzero(ATTEMPT, 0, DISK, R_DIRTY * REGION, REGION);
	/* What a correct kernel makes of that log: replay it, keep the result. */
	krepro_loopfs_mount(&fs);
	krepro_loopfs_umount(&fs);
	if (krepro_xfs_repair_n(fs.dev, "after the correct kernel replayed the log", false))
		krepro_broken("the correct kernel's log replay left a filesystem repair rejects");
	krepro_loopfs_detach(&fs);
	krepro_copy_nonzero(ATTEMPT, 0, DISK, R_REPLAYED * REGION, REGION);
	unlink(ATTEMPT);
	unlink(PRISTINE);
	krepro_pass("disk made by this (correct) kernel: the natural image (stale unwritten bit "
		    "in root key %u) and a dirty log from attempt %d", target.index, attempts);
}

/* ---- the cases (either kernel) ---- */

/*
 * The steps are done (fd >= 0: fsync and close it first; doing is done to
 * file block B). False when one failed: FAIL on XFS's internal error report
 * from xfs_rmap.c, the rmap code finding corruption where xfs_repair -n found
 * none; else BROKEN.
 */
static bool steps_done(int fd, int kmsg, struct krepro_steps *st, const char *doing)
{
	char what[160];
	int ret;

	snprintf(what, sizeof(what), "%s", doing);
	if (fd >= 0) {
		ret = fsync(fd);
		krepro_step(st, "fsync", ret == 0, errno);
		close(fd);
		snprintf(what, sizeof(what), "%s file block %llu of a filesystem xfs_repair -n "
			 "called clean", doing, (unsigned long long)target.block);
	}
	if (st->failed)
		krepro_xfs_steps_failed(kmsg, &fs, "xfs_rmap.c", st, what);
	return !st->failed;
}

/* Attach the case's filesystem and find its stale key; unless it holds a
 * dirty log, check that repair calls it clean and mount it. Returns
 * /dev/kmsg at its end, for the corruption report (-1: unreadable). */
static int case_setup(enum region r, const char *mnt)
{
	int kmsg;

	attach(DISK, r * REGION, mnt);
	if (krepro_xfs_rmap_stale_key(fs.dev, &target) < 0)
		krepro_broken(DISK " has no stale rmapbt key: not the prepared disk");
	krepro_info("root key %u of %u: raw offset %#llx (unwritten), leaf's first record %#llx "
		    "(written), owner %llu", target.index, target.numrecs,
		    (unsigned long long)target.key_offset, (unsigned long long)target.rec_offset,
		    (unsigned long long)target.owner);
	if (r != R_DIRTY) {
		if (krepro_xfs_repair_n(fs.dev, "before mounting", false))
			krepro_broken("the filesystem is not clean before mounting");
		krepro_loopfs_mount(&fs);
	}
	kmsg = krepro_kmsg_open();
	if (kmsg < 0)
		krepro_info("open /dev/kmsg: %s: XFS's reports are not read", strerror(errno));
	return kmsg;
}

/*
 * After the steps succeeded: unmount; repair must still call it clean, and
 * the rmapbt on disk must show the steps' own change (shown() says what it
 * found), or the code under test was not shown to run. Repair rejecting it
 * is this bug only with the rmap code's own report for it in kmsg (read from
 * the case's start): repair's verdict alone does not name the code.
 */
static void case_finish(int kmsg, const char *what,
			bool (*shown)(char *evidence, size_t size))
{
	char evidence[256], caller[128];

	krepro_loopfs_umount(&fs);
	if (krepro_xfs_repair_n(fs.dev, "after the steps", false)) {
		bool report = krepro_xfs_internal_error(kmsg, fs.dev, "xfs_rmap.c", caller,
							sizeof(caller));

		krepro_loopfs_detach(&fs);
		if (!report)
			krepro_broken("%s succeeded but left a filesystem xfs_repair -n rejects, "
				      "with no corruption report from xfs_rmap.c%s: not shown to be "
				      "this bug", what, kmsg < 0 ? " (kmsg unreadable)" : "");
		krepro_fail("%s succeeded but left a filesystem xfs_repair -n rejects (XFS: "
			    "internal error in xfs_rmap.c, caller %s)", what, caller);
		return;
	} else if (!shown(evidence, sizeof(evidence))) {
		krepro_loopfs_detach(&fs);
		krepro_broken("%s succeeded, but %s", what, evidence);
	} else {
		krepro_pass("%s; xfs_repair -n still clean; %s", what, evidence);
	}
	krepro_loopfs_detach(&fs);
}

/* Punch, the reflink's remap and log recovery all unmap B: no record maps
 * file block B to its old AG block any more. Finding the record to delete
 * took a lookup of B's record, through the stale key. */
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

/* Punch B: the lookup of its record goes through the stale key. */
static void run_punch(void)
{
	struct krepro_steps st = { 0 };
	int kmsg = case_setup(R_PUNCH, MNT("punch")), fd = krepro_loopfs_open(&fs, "f", O_RDWR),
	    ret = krepro_punch_block(fd, (off_t)target.block * BLK);

	krepro_step(&st, "fallocate", ret == 0, errno);
	if (steps_done(fd, kmsg, &st, "punching"))
		case_finish(kmsg, "punching the stale key's block", b_unmapped);
}

/* Write the unwritten blocks next to B's record: the last record of the leaf
 * before (B-2), the second of B's leaf (B+2), and the hole B+1 (its record may
 * merge with B's). Informative: their lookups avoid the stale key (README). */
static const int write_rel[] = { -2, 2, 1 };
#define WRITES	(sizeof(write_rel) / sizeof(write_rel[0]))

/* The conversions of B-2 and B+2 and the allocation of B+1 reached the rmapbt. */
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
	snprintf(evidence, size, "file blocks B-2, B+2 and B+1 have written records");
	return true;
}

static void run_write(void)
{
	void *buf = krepro_dio_buf(BLK, 'w');
	struct krepro_steps st = { 0 };
	struct krepro_rmap_stale_key after;
	int kmsg = case_setup(R_WRITE, MNT("write")), fd = krepro_loopfs_open(&fs, "f",
									 O_RDWR | O_DIRECT);

	for (unsigned int i = 0; i < WRITES; i++) {
		off_t off = ((off_t)target.block + write_rel[i]) * BLK;
		ssize_t n = pwrite(fd, buf, BLK, off);
		char name[48];

		snprintf(name, sizeof(name), "block %lld (B%+d)", (long long)(off / BLK),
			 write_rel[i]);
		krepro_step(&st, name, n == BLK, n < 0 ? errno : 0);
	}
	free(buf);
	if (!steps_done(fd, kmsg, &st, "O_DIRECT writes next to"))
		return;
	krepro_info("O_DIRECT writes: %s", st.text);
	krepro_loopfs_umount(&fs);
	krepro_info("after the writes root key %u is %s", target.index,
		    krepro_xfs_rmap_stale_key(fs.dev, &after) ? "no longer stale: writing in its "
		    "leaf rewrote the leaf's keys" : "still stale");
	krepro_loopfs_mount(&fs);
	case_finish(kmsg, "writing the unwritten blocks next to the stale key's record",
		    writes_recorded);
}

/*
 * Clone file block 0 (written here first; its record lives in the first
 * leaves) over B. The remap first unmaps B (f is now a reflink inode:
 * xfs_rmap_unmap_shared), through the stale key. Nothing may touch B's leaf
 * before: an insert or update there rewrites its keys and heals the stale bit.
 */
static void run_reflink(void)
{
	struct krepro_steps st = { 0 };
	int kmsg = case_setup(R_REFLINK, MNT("reflink")), fd, ret;

	krepro_loopfs_write_block(&fs, "f", 0, 'd');
	fd = krepro_loopfs_open(&fs, "f", O_RDWR);
	ret = krepro_clone_block(fd, (off_t)target.block * BLK, fd, 0);
	krepro_step(&st, "FICLONERANGE", ret == 0, errno);
	if (steps_done(fd, kmsg, &st, "cloning file block 0 over"))
		case_finish(kmsg, "cloning file block 0 over the stale key's block", b_unmapped);
}

/* The log a correct kernel left going down mid-punch of B: recovery finishes
 * the punch's rmap intent through the stale key. Repair cannot judge a log
 * not yet replayed: its reference is the same log the correct kernel replayed. */
static void run_mount_replay(void)
{
	struct krepro_steps st = { 0 };
	int kmsg, ret;

	attach(DISK, R_REPLAYED * REGION, MNT("replayed"));
	if (krepro_xfs_repair_n(fs.dev, "of the same log as replayed by the correct kernel",
				false))
		krepro_broken("the correct kernel's replay is not clean: not the prepared disk");
	krepro_loopfs_detach(&fs);
	kmsg = case_setup(R_DIRTY, MNT("replay"));
	ret = krepro_loopfs_try_mount(&fs);
	krepro_step(&st, "mount (log recovery)", ret == 0, errno);
	if (steps_done(-1, kmsg, &st, "replaying a log that the correct kernel replays to a "
		       "filesystem xfs_repair -n calls clean"))
		case_finish(kmsg, "mounting and replaying the log", b_unmapped);
}

static void cleanup(void)
{
	krepro_loopfs_release(&fs);	/* for a case that stopped early */
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
