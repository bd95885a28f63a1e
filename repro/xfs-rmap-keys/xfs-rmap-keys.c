// SPDX-License-Identifier: GPL-2.0
/*
 * xfs-rmap-keys: the 5.9.9 regression. Seed 003 made the rmapbt key compare
 * include the offset's flag bits (attr fork, bmbt, unwritten). Correct kernels
 * leave node keys whose unwritten bit differs from their child's first record
 * (the record was converted to written; the masked compare called the key
 * equal and kept it). With 003 a lookup of that record goes to the wrong leaf
 * and XFS reports corruption on a filesystem xfs_repair calls clean. Fix: the
 * revert, eb8409071a1d. See README.md.
 *
 * The disk is made once by the patched (correct) kernel in prepare(); every
 * run gets a copy-on-write view of it (run-in-qemu.sh).
 */
#define _GNU_SOURCE
#include "krepro.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define DISK		"/dev/vda"
#define MNT		"/tmp/krepro-rmap"
#define FILE_PATH	MNT "/f"
#define BLK		4096
#define FILE_BLOCKS	2048			/* 8 MiB: ~1,000 one-block records */
#define UNWRITTEN	(1ULL << 61)		/* XFS_RMAP_OFF_UNWRITTEN */
#define FLAGS		(7ULL << 61)		/* attr fork, bmbt, unwritten */
/* Short-form btree block with CRC: 56-byte header (xfs_format.h). */
#define BB_HDR		56
#define KEY_PAIR	40	/* rmap node entry: low key + high key, 20 bytes each */
#define REC		24	/* rmap leaf record */

/* A root key whose unwritten bit disagrees with its leaf's first record. */
struct stale_key {
	unsigned int index, level, numrecs;
	uint64_t key_offset, rec_offset, owner;
};

static int mounted;

static void pread_all(int fd, void *buf, size_t len, off_t off)
{
	if (SAFE(pread(fd, buf, len, off)) != (ssize_t)len)
		krepro_broken("short read of %zu bytes at %lld on " DISK, len, (long long)off);
}

static uint16_t be16_at(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return be16toh(v); }
static uint32_t be32_at(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }
static uint64_t be64_at(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }

/*
 * Read AG 0's rmapbt root from the unmounted disk and find the key that a
 * correct kernel left stale. Raw reads, because xfs_db's key fields do not
 * show the flag bits.
 */
/* AG 0's rmapbt root block, read from the unmounted disk. */
static void read_rmap_root(int fd, unsigned char root[BLK])
{
	unsigned char sb[512], agf[512];
	unsigned int rootbno;

	pread_all(fd, sb, sizeof(sb), 0);
	if (memcmp(sb, "XFSB", 4) || be32_at(sb + 4) != BLK)
		krepro_broken("not a 4 KiB-block XFS on " DISK);
	pread_all(fd, agf, sizeof(agf), be16_at(sb + 102));	/* AGF: sector 1 */
	rootbno = be32_at(agf + 24);				/* agf_roots[XFS_BTNUM_RMAPi] */
	pread_all(fd, root, BLK, (off_t)rootbno * BLK);
	if (memcmp(root, "RMB3", 4))
		krepro_broken("AG 0 rmapbt root at agbno %u has no RMB3 magic", rootbno);
}

static int find_stale_key(struct stale_key *sk)
{
	unsigned char root[BLK], leaf[BLK];
	unsigned int maxrecs;
	int fd = SAFE(open(DISK, O_RDONLY | O_CLOEXEC));

	read_rmap_root(fd, root);
	sk->level = be16_at(root + 4);
	sk->numrecs = be16_at(root + 6);
	maxrecs = (BLK - BB_HDR) / (KEY_PAIR + 4);
	for (unsigned int i = 0; sk->level == 1 && i < sk->numrecs; i++) {
		const unsigned char *key = root + BB_HDR + i * KEY_PAIR;
		uint32_t child = be32_at(root + BB_HDR + maxrecs * KEY_PAIR + i * 4);

		pread_all(fd, leaf, BLK, (off_t)child * BLK);
		sk->key_offset = be64_at(key + 12);
		sk->rec_offset = be64_at(leaf + BB_HDR + 16);
		sk->owner = be64_at(key + 4);
		if ((sk->key_offset & ~FLAGS) == (sk->rec_offset & ~FLAGS) &&
		    (sk->key_offset & UNWRITTEN) && !(sk->rec_offset & UNWRITTEN)) {
			sk->index = i;
			close(fd);
			return 0;
		}
	}
	close(fd);
	return -1;
}

/* xfs_repair -n's exit status: 0 is clean. */
static int repair_check(const char *when)
{
	static const char *const repair[] = { "xfs_repair", "-n", DISK, NULL };
	int rc = krepro_run_cmd(repair);

	krepro_info("xfs_repair -n %s: %s (exit %d)", when, rc ? "NOT clean" : "clean", rc);
	return rc;
}

static void repair_must_be_clean(const char *when)
{
	if (repair_check(when))
		krepro_broken("the filesystem is not clean %s", when);
}

static void do_mount(void)
{
	krepro_mount(DISK, "xfs", MNT);
	mounted = 1;
}

static void do_umount(void)
{
	SAFE(umount(MNT));
	mounted = 0;
}

/*
 * Preparatory boot, patched kernel: ~1,000 one-block unwritten records
 * (fallocate 8 MiB, punch every other block) make a two-level rmapbt; then
 * write the block that starts a leaf in the middle of the root, so that
 * record turns written while its parent key keeps the unwritten bit.
 */
static void prepare(void)
{
	static const char *const mkfs[] = { "mkfs.xfs", "-q", "-f", "-m", "rmapbt=1,reflink=1", NULL };
	struct stale_key sk;
	unsigned char root[BLK];
	void *buf = krepro_dio_buf(BLK, 'W');
	unsigned int pick;
	uint64_t block;
	int fd, dfd;

	krepro_mkfs_mount(mkfs, DISK, "xfs", MNT);
	mounted = 1;
	fd = SAFE(open(FILE_PATH, O_CREAT | O_RDWR | O_CLOEXEC, 0644));
	SAFE(fallocate(fd, 0, 0, (off_t)FILE_BLOCKS * BLK));
	for (off_t off = BLK; off < (off_t)FILE_BLOCKS * BLK; off += 2 * BLK)
		SAFE(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, BLK));
	SAFE(fsync(fd));
	close(fd);
	do_umount();

	/* Pick the middle key: refilling the AGFL can split the first leaves. */
	dfd = SAFE(open(DISK, O_RDONLY | O_CLOEXEC));
	read_rmap_root(dfd, root);
	close(dfd);
	if (be16_at(root + 4) != 1 || be16_at(root + 6) < 3)
		krepro_broken("AG 0's rmapbt has level %u with %u keys, want a two-level tree",
			      be16_at(root + 4), be16_at(root + 6));
	pick = be16_at(root + 6) / 2;
	block = be64_at(root + BB_HDR + pick * KEY_PAIR + 12);
	if (!(block & UNWRITTEN))
		krepro_broken("root key %u is not an unwritten extent's (offset %#llx)", pick,
			      (unsigned long long)block);
	block &= ~FLAGS;
	krepro_info("rmapbt: %u keys; key %u starts with file block %llu", be16_at(root + 6),
		    pick, (unsigned long long)block);

	do_mount();
	fd = SAFE(open(FILE_PATH, O_RDWR | O_DIRECT | O_CLOEXEC));
	if (SAFE(pwrite(fd, buf, BLK, (off_t)block * BLK)) != BLK)
		krepro_broken("short write at file block %llu", (unsigned long long)block);
	SAFE(fsync(fd));
	close(fd);
	do_umount();

	if (find_stale_key(&sk) < 0)
		krepro_broken("after the write no root key is stale: the layout changed");
	krepro_info("root key %u: raw offset %#llx (unwritten), its leaf's first record %#llx "
		    "(written)", sk.index, (unsigned long long)sk.key_offset,
		    (unsigned long long)sk.rec_offset);
	repair_must_be_clean("after preparation");
	free(buf);
	krepro_pass("disk made by this (correct) kernel, with a stale unwritten bit in root key %u",
		    sk.index);
}

static struct stale_key target;

static void setup(void)
{
	if (find_stale_key(&target) < 0)
		krepro_broken(DISK " has no stale rmapbt key: not the prepared disk");
	krepro_info("root key %u of %u: raw offset %#llx (unwritten bit set), leaf's first record "
		    "%#llx (written), owner %llu", target.index, target.numrecs,
		    (unsigned long long)target.key_offset, (unsigned long long)target.rec_offset,
		    (unsigned long long)target.owner);
	repair_must_be_clean("before mounting");
	do_mount();
}

static void cleanup(void)
{
	if (mounted && umount(MNT) < 0)
		krepro_info("umount " MNT ": %s", strerror(errno));
}

/* Punch the block whose record sits behind the stale key: the lookup of its
 * record must go through that key. */
static void run_punch(void)
{
	off_t off = (off_t)(target.rec_offset & ~FLAGS) * BLK;
	int fd = SAFE(open(FILE_PATH, O_RDWR | O_CLOEXEC));
	int ret = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, BLK);
	int err = errno;
	int sync = fsync(fd);
	int sync_err = errno;

	close(fd);
	if (ret < 0 || sync < 0) {
		krepro_fail("punching file block %lld: fallocate %s, fsync %s, on a filesystem "
			    "xfs_repair -n called clean", (long long)(off / BLK),
			    ret < 0 ? strerror(err) : "ok", sync < 0 ? strerror(sync_err) : "ok");
		return;
	}
	do_umount();
	if (repair_check("after the punch")) {
		krepro_fail("the punch succeeded but left a filesystem xfs_repair -n rejects");
		return;
	}
	do_mount();
	krepro_pass("punched file block %lld; fsync ok; xfs_repair -n still clean",
		    (long long)(off / BLK));
}

static const char *const kconfigs[] = { "CONFIG_XFS_FS", "CONFIG_VIRTIO_BLK", NULL };

static const struct krepro_case cases[] = {
	{ "punch", run_punch },
	{ NULL, NULL },
};

static const struct krepro_test test = {
	.name = "xfs-rmap-keys",
	.summary = "rmapbt key compare includes fork/bmbt/unwritten bits: false corruption on rmap+reflink filesystems",
	.fix_commit = "eb8409071a1d (\"xfs: revert 'xfs: fix rmap key and record comparison functions'\")",
	.bug_commit = "6ff646b2ceb0 (\"xfs: fix rmap key and record comparison functions\")",
	.seed = "003-patch-xfs-fix-rmap-key-and-record-comparison-functions.patch (bug), 011-commit-eb8409071a1d-... (fix)",
	.needs_kconfigs = kconfigs,
	.min_cpus = 1,
	.timeout = 240,
	.disk_mib = 512,
	.prepare = prepare,
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
