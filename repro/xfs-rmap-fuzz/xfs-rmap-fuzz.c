// SPDX-License-Identifier: GPL-2.0
/*
 * xfs-rmap-fuzz: an xfs/371-style sweep over the rmapbt root's keys, the
 * fuzzing that found seed 003 ("keys[1].attrfork = ones on xfs/371"). For each
 * key field and xfs_db fuzz verb: a fresh copy of a pristine two-level rmapbt
 * filesystem, the fuzz, then mount, a fixed set of operations through the
 * fuzzed key's leaf, unmount, xfs_repair -n; one table row per fuzz.
 *
 * A robustness check, not the 003 evidence (that is xfs-rmap-keys): it fails
 * only when the kernel oopses, warns, hits KASAN or hangs (the harness's kmsg
 * scan, taint check and time limit), on either kernel, or when the unfuzzed
 * control does not work. The tables show where the two kernels differ.
 */
#define _GNU_SOURCE
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/fsmap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define DISK		"/dev/vda"
#define MNT		"/tmp/krepro-fuzz"
#define BLK		KREPRO_XFS_BLK
#define FILE_BLOCKS	2048
#define FS_BYTES	(512LL << 20)
#define PRISTINE	"/tmp/krepro-fuzz-pristine.img"
#define FUZZED		"/tmp/krepro-fuzz.img"

static const char *const fields[] = {
	"startblock", "owner", "offset", "attrfork", "bmbtblock",
	"startblock_hi", "owner_hi", "offset_hi", "attrfork_hi", "bmbtblock_hi",
};
/* xfs_db 6.1's fuzz verbs. "random" is done as a write of a fixed
 * pseudo-random value: xfs_db seeds its own from the clock, and the two
 * kernels must see the same bytes. */
static const char *const verbs[] = {
	"zeroes", "ones", "firstbit", "middlebit", "lastbit", "add", "sub", "random",
};

/* A root key and three file blocks its leaf maps. */
struct target {
	unsigned int key;		/* xfs_db's index: keys[1] is the first */
	uint64_t block[3];
};

static uint64_t file_ino;
static unsigned int nkeys;

static void prepare(void)
{
	static const char *const mkfs[] = { "mkfs.xfs", "-q", "-f", "-m", "rmapbt=1,reflink=1",
					    NULL };
	unsigned char root[BLK];

	krepro_mkfs_mount(mkfs, DISK, "xfs", MNT);
	krepro_xfs_fragmented_file(MNT "/f", FILE_BLOCKS);
	SAFE(umount(MNT));
	krepro_xfs_rmap_root(DISK, root);
	if (krepro_be16(root + 4) != 1)
		krepro_broken("AG 0's rmapbt has level %u, want a two-level tree",
			      krepro_be16(root + 4));
	if (krepro_xfs_repair_n(DISK, "of the pristine image", false))
		krepro_broken("the pristine image is not clean");
	krepro_pass("two-level rmapbt with %u root keys, made by this (correct) kernel",
		    krepro_be16(root + 6));
}

/* The first three records of the file in the leaf under root key `key`. */
static void find_target(unsigned int key, struct target *t)
{
	unsigned char root[BLK], leaf[BLK];
	unsigned int n = 0, nrecs;

	krepro_xfs_rmap_root(PRISTINE, root);
	krepro_xfs_rmap_leaf(PRISTINE, root, key - 1, leaf);
	nrecs = krepro_be16(leaf + 6);
	t->key = key;
	for (unsigned int i = 0; i < nrecs && n < 3; i++) {
		const unsigned char *r = leaf + KREPRO_XFS_BB_HDR + i * KREPRO_RMAP_REC;

		uint64_t off = krepro_be64(r + 16);

		/* Data fork extents only: the file's bmbt blocks have records too. */
		if (krepro_be64(r + 8) == file_ino && !(off & (3ULL << 62)))
			t->block[n++] = off & ~KREPRO_RMAP_FLAGS;
	}
	if (n < 3)
		krepro_broken("the leaf under keys[%u] maps %u blocks of the file, want 3", key, n);
}

static void setup(void)
{
	unsigned char root[BLK];

	krepro_info("xfs_scrub: not in the guest image, and the kernels lack "
		    "CONFIG_XFS_ONLINE_SCRUB: the sweep checks with xfs_repair -n only");
	krepro_copy_nonzero(DISK, 0, PRISTINE, 0, FS_BYTES);
	krepro_xfs_rmap_root(PRISTINE, root);
	nkeys = krepro_be16(root + 6);
	/* The middle key's leaf starts with a record of the file. */
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

/* splitmix64: the fixed "random" values. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void random_value(const char *field, unsigned int key, char *buf, size_t size)
{
	uint64_t v = mix(key * 131 + strlen(field) * 7 + (uint64_t)field[0] +
			 (strstr(field, "_hi") ? 1000 : 0));

	if (!strncmp(field, "startblock", 10))
		snprintf(buf, size, "%llu", (unsigned long long)(v & 0xffffffffULL));
	else if (!strncmp(field, "owner", 5))
		/* Positive: xfs_db parses it signed and takes "-..." for an option. */
		snprintf(buf, size, "%lld", (long long)(v >> 1));
	else if (!strncmp(field, "offset", 6))
		snprintf(buf, size, "%llu", (unsigned long long)(v & ((1ULL << 54) - 1)));
	else
		snprintf(buf, size, "%llu", (unsigned long long)(v & 1));
}

/* xfs_db's "keys[N].field = value" line. */
static void take_value(const char *line, void *ctx)
{
	const char *eq = strstr(line, " = ");

	if (strstr(line, "keys[") && eq)
		snprintf(ctx, 48, "%s", eq + 3);
}

/* Fuzz the copy at FUZZED; its new value goes to value. 0 on success. */
static int fuzz(unsigned int key, const char *field, const char *verb, char value[48])
{
	char sel[64], cmd[128], rnd[32];
	const char *argv[] = { "xfs_db", "-x", "-c", "agf 0", "-c", "addr rmaproot",
			       "-c", cmd, FUZZED, NULL };

	snprintf(sel, sizeof(sel), "keys[%u].%s", key, field);
	if (!strcmp(verb, "random")) {
		random_value(field, key, rnd, sizeof(rnd));
		snprintf(cmd, sizeof(cmd), "write -d %s %s", sel, rnd);
	} else {
		snprintf(cmd, sizeof(cmd), "fuzz -d %s %s", sel, verb);
	}
	strcpy(value, "?");
	return krepro_run_lines(argv, take_value, value);
}

static int step_fsmap(void)
{
	enum { N = 128 };
	struct fsmap_head *h = calloc(1, sizeof(*h) + N * sizeof(struct fsmap));
	int fd = open(MNT, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	h->fmh_keys[1].fmr_device = UINT32_MAX;
	h->fmh_keys[1].fmr_physical = UINT64_MAX;
	h->fmh_keys[1].fmr_owner = UINT64_MAX;
	h->fmh_keys[1].fmr_offset = UINT64_MAX;
	h->fmh_keys[1].fmr_flags = UINT32_MAX;
	h->fmh_count = N;
	while (fd >= 0 && (ret = ioctl(fd, FS_IOC_GETFSMAP, h)) == 0 && h->fmh_entries) {
		struct fsmap *last = &h->fmh_recs[h->fmh_entries - 1];

		if (last->fmr_flags & FMR_OF_LAST)
			break;
		h->fmh_keys[0] = *last;
	}
	if (fd < 0)
		ret = -1;
	else
		close(fd);
	free(h);
	return ret;
}

/*
 * The fixed operations, through the fuzzed key's leaf: GETFSMAP over the
 * whole filesystem (a ranged rmapbt query: the overlapped-interval key
 * compare), punch the leaf's first file block, write its second (unwritten
 * to written), share its third into a new file, sync.
 */
static void operations(const struct target *t, struct krepro_steps *st)
{
	void *buf = krepro_dio_buf(BLK, 'z');
	int f, g, ret;

	ret = step_fsmap();
	krepro_step(st, "fsmap", ret == 0, errno);
	f = open(MNT "/f", O_RDWR | O_DIRECT | O_CLOEXEC);
	if (f < 0) {
		krepro_step(st, "open", false, errno);
		free(buf);
		return;
	}
	ret = fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)t->block[0] * BLK, BLK);
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

/* One row: fresh copy, fuzz (verb NULL: none), mount, operations, repair.
 * Returns 0 when every step worked and repair called the result clean. */
static int one(const struct target *t, const char *field, const char *verb)
{
	/* nouuid: a row whose unmount failed must not stop the next mount. */
	static struct krepro_loopfs fs = { .fstype = "xfs", .data = "nouuid" };
	char value[48] = "-", sel[48] = "(none)";
	struct krepro_steps st = { 0 };
	int rc, ret;

	if (verb)
		snprintf(sel, sizeof(sel), "keys[%u].%s", t->key, field);
	unlink(FUZZED);
	krepro_copy_nonzero(PRISTINE, 0, FUZZED, 0, FS_BYTES);
	if (verb && (rc = fuzz(t->key, field, verb, value))) {
		krepro_info("| %s | %s | xfs_db exit %d | - | - |", sel, verb, rc);
		return 1;
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
	unsigned int rows = 0, differ = 0;
	double t0 = krepro_elapsed();

	find_target(key, &t);
	krepro_info("keys[%u]: its leaf maps file blocks %llu, %llu, %llu", key,
		    (unsigned long long)t.block[0], (unsigned long long)t.block[1],
		    (unsigned long long)t.block[2]);
	krepro_info("| field | verb | new value | mount, fsmap, punch, write, reflink, sync | "
		    "xfs_repair -n |");
	krepro_info("|---|---|---|---|---|");
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
		for (size_t v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++) {
			differ += (unsigned int)one(&t, fields[f], verbs[v]);
			rows++;
		}
	krepro_pass("keys[%u]: %u fuzzes, %u with an error or a repair finding, no kernel "
		    "report so far; %.0f s", key, rows, differ, krepro_elapsed() - t0);
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
	.not_in_matrix = "This reproducer is a sweep of 160 fuzzed filesystems per kernel "
			 "(minutes per guest), and it passes on both kernels when neither "
			 "crashes: it is not part of the FAIL-on-unpatched / PASS-on-patched "
			 "matrix. Run it by name (make sweeps): ./run-in-qemu.sh --kernel "
			 "unpatched --kernel patched --repeat 1 xfs-rmap-fuzz",
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
