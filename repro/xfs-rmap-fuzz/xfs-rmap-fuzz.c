// SPDX-License-Identifier: GPL-2.0
/*
 * xfs-rmap-fuzz: the xfs/371-style sweep that found seed 003, over the rmapbt
 * root's keys: per field and xfs_db fuzz verb, a fresh copy, the fuzz, then
 * operations through the key's leaf and xfs_repair -n. A robustness check,
 * not the 003 evidence: it fails on a kernel report, a hang or the control.
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
#include <sys/mount.h>
#include <unistd.h>

#define DISK		"/dev/vda"
#define MNT		"/tmp/krepro-fuzz"
#define BLK		KREPRO_XFS_BLK
#define FILE_BLOCKS	2048
#define FS_BYTES	(512LL << 20)
#define PRISTINE	"/tmp/krepro-fuzz-pristine.img"
#define FUZZED		"/tmp/krepro-fuzz.img"

#define NFIELDS		10
#define NVERBS		8

static const char *const fields[NFIELDS] = {
	"startblock", "owner", "offset", "attrfork", "bmbtblock",
	"startblock_hi", "owner_hi", "offset_hi", "attrfork_hi", "bmbtblock_hi",
};
/* xfs_db 6.1's fuzz verbs. "random" writes a fixed pseudo-random value: xfs_db
 * seeds its own from the clock, and both kernels must see the same bytes. */
static const char *const verbs[NVERBS] = {
	"zeroes", "ones", "firstbit", "middlebit", "lastbit", "add", "sub", "random",
};

/* A root key (xfs_db's index: keys[1] is first), three file blocks its leaf maps. */
struct target { unsigned int key; uint64_t block[3]; };

static uint64_t file_ino;	/* the file's: the owner of the middle root key */
static unsigned int nkeys;	/* in the rmapbt root */

static void prepare(void)
{
	unsigned char root[BLK];
	unsigned int keys = krepro_xfs_rmap_image(DISK, MNT, FILE_BLOCKS, root);

	if (krepro_xfs_repair_n(DISK, "of the pristine image", false))
		krepro_broken("the pristine image is not clean");
	krepro_pass("two-level rmapbt with %u root keys, made by this (correct) kernel", keys);
}

/* The first three data-fork records of the file in the leaf under `key`. */
static void find_target(unsigned int key, struct target *t)
{
	unsigned int n = krepro_xfs_rmap_leaf_blocks(PRISTINE, key - 1, file_ino, t->block, 3);

	if (n < 3)
		krepro_broken("the leaf under keys[%u] maps %u blocks of the file, want 3", key, n);
	t->key = key;
}

static void setup(void)
{
	unsigned char root[BLK];

	krepro_info("xfs_scrub: not in the guest image, and the kernels lack "
		    "CONFIG_XFS_ONLINE_SCRUB: the sweep checks with xfs_repair -n only");
	krepro_copy_nonzero(DISK, 0, PRISTINE, 0, FS_BYTES);
	krepro_xfs_rmap_root(PRISTINE, root);
	nkeys = krepro_be16(root + 6);
	file_ino = krepro_be64(root + KREPRO_XFS_BB_HDR + nkeys / 2 * KREPRO_RMAP_KEY_PAIR + 4);
	krepro_info("pristine image: %u root keys; the file is inode %llu", nkeys,
		    (unsigned long long)file_ino);
}

static void cleanup(void)
{
	umount(MNT);
	unlink(FUZZED);
	unlink(PRISTINE);
}

/* xfs_db's write of a fixed "random" value (splitmix64) to keys[key].field:
 * as many bits as the field has; owner positive (xfs_db takes "-" as option). */
static void write_random(const char *sel, const char *field, unsigned int key, char *cmd,
			 size_t size)
{
	uint64_t v = key * 131 + strlen(field) * 7 + (uint64_t)field[0] +
		     (strstr(field, "_hi") ? 1000 : 0) + 0x9e3779b97f4a7c15ULL;
	int bits = !strncmp(field, "startblock", 10) ? 32 : !strncmp(field, "owner", 5) ? 63 :
		   !strncmp(field, "offset", 6) ? 54 : 1;

	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
	v ^= v >> 31;
	if (bits == 63)
		v >>= 1;
	snprintf(cmd, size, "write -d %s %llu", sel, (unsigned long long)(v & ((1ULL << bits) - 1)));
}

/* Through the fuzzed key's leaf: GETFSMAP (the overlapped-interval compare),
 * punch its first file block, write its second (unwritten to written), share
 * its third into a new file, sync. */
static void operations(const struct target *t, struct krepro_steps *st)
{
	void *buf;
	int f, g, ret = krepro_getfsmap_all(MNT);

	krepro_step(st, "fsmap", ret == 0, errno);
	f = open(MNT "/f", O_RDWR | O_DIRECT | O_CLOEXEC);
	if (f < 0) {
		krepro_step(st, "open", false, errno);
		return;
	}
	buf = krepro_dio_buf(BLK, 'z');
	ret = krepro_punch_block(f, (off_t)t->block[0] * BLK);
	krepro_step(st, "punch", ret == 0, errno);
	ret = (int)pwrite(f, buf, BLK, (off_t)t->block[1] * BLK);
	krepro_step(st, "write", ret == BLK, errno);
	g = open(MNT "/g", O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	ret = g < 0 ? -1 : krepro_clone_block(g, 0, f, (off_t)t->block[2] * BLK);
	krepro_step(st, "reflink", ret == 0, errno);
	if (g >= 0)
		close(g);
	ret = syncfs(f);
	krepro_step(st, "sync", ret == 0, errno);
	close(f);
	free(buf);
}

/* One table row (verb NULL: unfuzzed): 0 when every step worked, repair clean. */
static int one(const struct target *t, const char *field, const char *verb)
{
	/* nouuid: a row whose unmount failed must not stop the next mount. */
	static struct krepro_loopfs fs = { .fstype = "xfs", .data = "nouuid" };
	char value[48] = "-", sel[48] = "(none)", cmd[128];
	const char *const db[] = { "agf 0", "addr rmaproot", cmd, NULL };
	struct krepro_steps st = { 0 };
	int rc, ret;

	unlink(FUZZED);
	krepro_copy_nonzero(PRISTINE, 0, FUZZED, 0, FS_BYTES);
	if (verb) {
		/* -d: the bad value with a good CRC, as fstests does. */
		snprintf(sel, sizeof(sel), "keys[%u].%s", t->key, field);
		if (!strcmp(verb, "random"))
			write_random(sel, field, t->key, cmd, sizeof(cmd));
		else
			snprintf(cmd, sizeof(cmd), "fuzz -d %s %s", sel, verb);
		rc = krepro_xfs_db_x(FUZZED, db, sel, value, sizeof(value));
		if (rc) {
			krepro_info("| %s | %s | xfs_db exit %d | - | - |", sel, verb, rc);
			return 1;
		}
	}
	krepro_loopfs_attach(&fs, FUZZED, 0, 0, MNT);
	ret = krepro_loopfs_try_mount(&fs);
	krepro_step(&st, "mount", ret == 0, errno);
	if (ret == 0) {
		operations(t, &st);
		if (umount(MNT) < 0)
			krepro_step(&st, "umount", false, errno);
	}
	krepro_loopfs_detach(&fs);
	rc = krepro_xfs_repair_n(FUZZED, NULL, true);
	krepro_info("| %s | %s | %s | %s | %d |", sel, verb ? verb : "-", value, st.text, rc);
	return st.failed || rc;
}

static void sweep(unsigned int key)
{
	struct target t;
	unsigned int differ = 0;
	double t0 = krepro_elapsed();

	find_target(key, &t);
	krepro_info("keys[%u]: its leaf maps file blocks %llu, %llu, %llu", key,
		    (unsigned long long)t.block[0], (unsigned long long)t.block[1],
		    (unsigned long long)t.block[2]);
	krepro_info("| field | verb | new value | mount, fsmap, punch, write, reflink, sync | "
		    "xfs_repair -n |");
	krepro_info("|---|---|---|---|---|");
	for (int f = 0; f < NFIELDS; f++)
		for (int v = 0; v < NVERBS; v++)
			differ += (unsigned int)one(&t, fields[f], verbs[v]);
	krepro_pass("keys[%u]: %u fuzzes, %u with an error or a repair finding, no kernel "
		    "report so far; %.0f s", key, NFIELDS * NVERBS, differ, krepro_elapsed() - t0);
}

static void run_control(void)
{
	struct target t;

	find_target(nkeys / 2 + 1, &t);
	if (one(&t, NULL, NULL))
		krepro_fail("the unfuzzed filesystem did not take the operations cleanly");
	else
		krepro_pass("the unfuzzed filesystem takes every operation; repair clean");
}

static void run_first_key(void)
{
	sweep(1);
}

static void run_middle_key(void)
{
	sweep(nkeys / 2 + 1);
}

static const char *const kconfigs[] = { "CONFIG_XFS_FS", "CONFIG_VIRTIO_BLK",
					"CONFIG_BLK_DEV_LOOP", NULL };

static const struct krepro_case cases[] = {
	{ "control", run_control },
	{ "first-key", run_first_key },
	{ "middle-key", run_middle_key },
	{ NULL, NULL },
};

static const struct krepro_test test = {
	.name = "xfs-rmap-fuzz",
	.summary = "xfs/371-style fuzz of the rmapbt root keys: no oops, hang or KASAN report on either kernel",
	.fix_commit = "eb8409071a1d (\"xfs: revert 'xfs: fix rmap key and record comparison functions'\")",
	.bug_commit = "6ff646b2ceb0 (\"xfs: fix rmap key and record comparison functions\")",
	.seed = "003-patch-xfs-fix-rmap-key-and-record-comparison-functions.patch (bug), 011-commit-eb8409071a1d-... (fix)",
	/* No signatures: a sweep whose every kernel report is a finding (OTHER),
	 * never evidence of 003 (that is xfs-rmap-keys). */
	.not_in_matrix = "A sweep of 160 fuzzed filesystems per kernel (minutes per guest) "
			 "that passes on both kernels unless one crashes: not in the matrix. "
			 "Run it by name (make sweeps): ./run-in-qemu.sh --kernel unpatched "
			 "--kernel patched --repeat 1 xfs-rmap-fuzz",
	.needs_kconfigs = kconfigs,
	/* The control: the unfuzzed filesystem must take every operation. */
	.own_evidence = true,
	.min_cpus = 1,
	.timeout = 1200,
	.disk_mib = 512,
	.prepare = prepare,
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
