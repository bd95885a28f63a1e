// SPDX-License-Identifier: GPL-2.0
/*
 * XFS helpers the reproducers share: mkfs and the rmapbt image, the raw
 * on-disk rmapbt of AG 0 (xfs_db's key fields lack the unwritten bit), xfs_db,
 * xfs_repair -n, logprint, GETFSMAP, stats, the clone and punch of a block
 * and a case's steps.
 */
#define _GNU_SOURCE
#include "xfs.h"
#include "sys.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/fsmap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

uint16_t krepro_be16(const void *p) { uint16_t v; memcpy(&v, p, 2); return be16toh(v); }
uint32_t krepro_be32(const void *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }
uint64_t krepro_be64(const void *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }

static void pread_all(int fd, void *buf, size_t len, off_t off, const char *dev)
{
	if (SAFE(pread(fd, buf, len, off)) != (ssize_t)len)
		krepro_broken("short read of %zu bytes at %lld on %s", len, (long long)off, dev);
}

unsigned int krepro_xfs_rmap_root(const char *dev, unsigned char root[KREPRO_XFS_BLK])
{
	unsigned char sb[512], agf[512];
	unsigned int rootbno;
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		krepro_broken("open %s: %m", dev);
	pread_all(fd, sb, sizeof(sb), 0, dev);
	if (memcmp(sb, "XFSB", 4) || krepro_be32(sb + 4) != KREPRO_XFS_BLK)
		krepro_broken("not a 4 KiB-block XFS on %s", dev);
	pread_all(fd, agf, sizeof(agf), krepro_be16(sb + 102), dev);	/* AGF: sector 1 */
	rootbno = krepro_be32(agf + 24);			/* agf_roots[XFS_BTNUM_RMAPi] */
	pread_all(fd, root, KREPRO_XFS_BLK, (off_t)rootbno * KREPRO_XFS_BLK, dev);
	if (memcmp(root, "RMB3", 4))
		krepro_broken("AG 0 rmapbt root at agbno %u on %s has no RMB3 magic", rootbno, dev);
	close(fd);
	return rootbno;
}

/* CRC32C (Castagnoli), which XFS checksums its v5 metadata blocks with. */
static uint32_t crc32c(const unsigned char *p, size_t n)
{
	uint32_t crc = ~0u;

	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
	}
	return ~crc;
}

void krepro_xfs_rmap_mark_key_unwritten(const char *dev, unsigned int i)
{
	unsigned char root[KREPRO_XFS_BLK];
	unsigned int rootbno = krepro_xfs_rmap_root(dev, root);
	unsigned char *off = root + KREPRO_XFS_BB_HDR + i * KREPRO_RMAP_KEY_PAIR + 12;
	uint64_t v = htobe64(krepro_be64(off) | KREPRO_RMAP_UNWRITTEN);
	uint32_t crc;
	int fd;

	if (i >= krepro_be16(root + 6))
		krepro_broken("rmapbt root on %s has no key %u", dev, i);
	memcpy(off, &v, sizeof(v));
	/* The short-form header's CRC (byte 52, little-endian) covers the block
	 * with itself zeroed. */
	memset(root + 52, 0, 4);
	crc = htole32(crc32c(root, sizeof(root)));
	memcpy(root + 52, &crc, 4);
	fd = open(dev, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || pwrite(fd, root, sizeof(root), (off_t)rootbno * KREPRO_XFS_BLK) != sizeof(root) ||
	    fsync(fd))
		krepro_broken("rewriting the rmapbt root of %s: %m", dev);
	close(fd);
}

void krepro_xfs_read_block(const char *dev, unsigned int agbno, unsigned char buf[KREPRO_XFS_BLK])
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		krepro_broken("open %s: %m", dev);
	pread_all(fd, buf, KREPRO_XFS_BLK, (off_t)agbno * KREPRO_XFS_BLK, dev);
	close(fd);
}

void krepro_xfs_mkfs(const char *dev, const char *meta)
{
	const char *argv[] = { "mkfs.xfs", "-q", "-f", dev, NULL, NULL, NULL };

	if (meta)
		argv[3] = "-m", argv[4] = meta, argv[5] = dev;
	krepro_must_run(argv);
}

int krepro_xfs_repair_n(const char *dev, const char *when, bool quiet)
{
	static const char *argv[] = { "xfs_repair", "-n", NULL, NULL };
	int rc;

	argv[2] = dev;
	rc = quiet ? krepro_run_lines(argv, NULL, NULL) : krepro_run_cmd(argv);
	if (when)
		krepro_info("xfs_repair -n %s: %s (exit %d)", when, rc ? "NOT clean" : "clean", rc);
	return rc;
}

void krepro_xfs_fragmented_file(const char *path, unsigned int blocks)
{
	int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0644);

	if (fd < 0)
		krepro_broken("create %s: %m", path);
	SAFE(fallocate(fd, 0, 0, (off_t)blocks * KREPRO_XFS_BLK));
	for (off_t off = KREPRO_XFS_BLK; off < (off_t)blocks * KREPRO_XFS_BLK;
	     off += 2 * KREPRO_XFS_BLK)
		SAFE(krepro_punch_block(fd, off));
	SAFE(fsync(fd));
	close(fd);
}

unsigned int krepro_xfs_rmap_image(const char *dev, const char *mnt, unsigned int blocks,
				   unsigned char root[KREPRO_XFS_BLK])
{
	char path[160];

	krepro_xfs_mkfs(dev, "rmapbt=1,reflink=1");
	krepro_mount(dev, "xfs", mnt);
	snprintf(path, sizeof(path), "%s/f", mnt);
	krepro_xfs_fragmented_file(path, blocks);
	SAFE(umount(mnt));
	krepro_xfs_rmap_root(dev, root);
	if (krepro_be16(root + 4) != 1 || krepro_be16(root + 6) < 3)
		krepro_broken("AG 0's rmapbt has level %u with %u keys, want a two-level tree",
			      krepro_be16(root + 4), krepro_be16(root + 6));
	return krepro_be16(root + 6);
}

unsigned int krepro_xfs_rmap_leaf(const char *dev, const unsigned char root[KREPRO_XFS_BLK],
				  unsigned int i, unsigned char leaf[KREPRO_XFS_BLK])
{
	/* The node's key pairs fill the block before its pointers. */
	unsigned int maxrecs = (KREPRO_XFS_BLK - KREPRO_XFS_BB_HDR) / (KREPRO_RMAP_KEY_PAIR + 4);
	unsigned int agbno = krepro_be32(root + KREPRO_XFS_BB_HDR +
					 maxrecs * KREPRO_RMAP_KEY_PAIR + i * 4);

	krepro_xfs_read_block(dev, agbno, leaf);
	if (memcmp(leaf, "RMB3", 4))
		krepro_broken("rmapbt leaf %u (AG block %u) on %s has no RMB3 magic", i, agbno, dev);
	return agbno;
}

int krepro_xfs_rmap_stale_key(const char *dev, struct krepro_rmap_stale_key *sk)
{
	unsigned char root[KREPRO_XFS_BLK], leaf[KREPRO_XFS_BLK];

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

struct db_value {
	const char *field;
	char *buf;
	size_t size;
};

/* xfs_db's "<field> = <value>" line: the value. */
static void take_value(const char *line, void *ctx)
{
	struct db_value *out = ctx;
	const char *eq = strstr(line, " = ");

	if (eq && strstr(line, out->field))
		snprintf(out->buf, out->size, "%s", eq + 3);
}

int krepro_xfs_db_x(const char *img, const char *const cmds[], const char *field, char *value,
		    size_t size)
{
	const char *argv[20] = { "xfs_db", "-x" };
	struct db_value out = { field, value, size };
	int n = 2;

	for (int i = 0; cmds[i] && n < 17; i++) {
		argv[n++] = "-c";
		argv[n++] = cmds[i];
	}
	argv[n] = img;
	snprintf(value, size, "?");
	return krepro_run_lines(argv, take_value, &out);
}

int krepro_getfsmap_all(const char *mnt)
{
	enum { N = 128 };
	struct fsmap_head *h = SAFE_PTR(calloc(1, sizeof(*h) + N * sizeof(struct fsmap)));
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = -1;

	h->fmh_keys[1] = (struct fsmap){ .fmr_device = UINT32_MAX, .fmr_physical = UINT64_MAX,
					 .fmr_owner = UINT64_MAX, .fmr_offset = UINT64_MAX,
					 .fmr_flags = UINT32_MAX };
	h->fmh_count = N;
	while (fd >= 0 && (ret = ioctl(fd, FS_IOC_GETFSMAP, h)) == 0 && h->fmh_entries) {
		struct fsmap *last = &h->fmh_recs[h->fmh_entries - 1];

		if (last->fmr_flags & FMR_OF_LAST)
			break;
		h->fmh_keys[0] = *last;
	}
	if (fd >= 0)
		close(fd);
	free(h);
	return ret;
}

int krepro_clone_block(int dst, off_t dst_off, int src, off_t src_off)
{
	struct file_clone_range fcr = {
		.src_fd = src, .src_offset = (__u64)src_off, .src_length = KREPRO_XFS_BLK,
		.dest_offset = (__u64)dst_off,
	};

	return ioctl(dst, FICLONERANGE, &fcr);
}

int krepro_punch_block(int fd, off_t off)
{
	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, KREPRO_XFS_BLK);
}

void krepro_step(struct krepro_steps *s, const char *name, bool ok, int err)
{
	size_t used = strlen(s->text);
	const char *word = "ok";

	if (!ok) {
		word = err ? strerrorname_np(err) : "short";
		word = word ? word : "E?";
		s->failed = true;
		if (s->nerrs < sizeof(s->errs) / sizeof(s->errs[0]))
			s->errs[s->nerrs++] = err;
	}
	snprintf(s->text + used, sizeof(s->text) - used, "%s%s %s", used ? ", " : "", name, word);
}

bool krepro_steps_gave(const struct krepro_steps *s, int err)
{
	for (unsigned int i = 0; i < s->nerrs; i++)
		if (s->errs[i] == err)
			return true;
	return false;
}

/* Does rec (a raw rmapbt record) map file block `block` of owner's data fork? */
static bool rec_maps(const unsigned char *rec, uint64_t owner, uint64_t block)
{
	uint64_t off = krepro_be64(rec + 16), start = off & ~KREPRO_RMAP_FLAGS;

	/* Not another owner, nor the attr fork or a bmbt block. */
	return krepro_be64(rec + 8) == owner &&
	       !(off & KREPRO_RMAP_FLAGS & ~KREPRO_RMAP_UNWRITTEN) &&
	       block >= start && block < start + krepro_be32(rec + 4);
}

unsigned int krepro_xfs_rmap_leaf_blocks(const char *dev, unsigned int i, uint64_t owner,
					 uint64_t *blocks, unsigned int n)
{
	unsigned char root[KREPRO_XFS_BLK], leaf[KREPRO_XFS_BLK];
	unsigned int found = 0;

	krepro_xfs_rmap_root(dev, root);
	krepro_xfs_rmap_leaf(dev, root, i, leaf);
	for (unsigned int r = 0; r < krepro_be16(leaf + 6) && found < n; r++) {
		const unsigned char *rec = leaf + KREPRO_XFS_BB_HDR + r * KREPRO_RMAP_REC;
		uint64_t start = krepro_be64(rec + 16) & ~KREPRO_RMAP_FLAGS;

		if (rec_maps(rec, owner, start))
			blocks[found++] = start;
	}
	return found;
}

bool krepro_xfs_rmap_lookup(const char *dev, uint64_t owner, uint64_t block, uint32_t *agbno,
			    bool *unwritten)
{
	unsigned char root[KREPRO_XFS_BLK], leaf[KREPRO_XFS_BLK];
	unsigned int level, nleaves;

	krepro_xfs_rmap_root(dev, root);
	level = krepro_be16(root + 4);
	if (level > 1)
		krepro_broken("AG 0's rmapbt has %u levels; this reads two at most", level + 1);
	nleaves = level ? krepro_be16(root + 6) : 1;
	for (unsigned int i = 0; i < nleaves; i++) {
		const unsigned char *b = root;

		if (level) {
			krepro_xfs_rmap_leaf(dev, root, i, leaf);
			b = leaf;
		}
		for (unsigned int r = 0; r < krepro_be16(b + 6); r++) {
			const unsigned char *rec = b + KREPRO_XFS_BB_HDR + r * KREPRO_RMAP_REC;

			if (!rec_maps(rec, owner, block))
				continue;
			*agbno = krepro_be32(rec) + (uint32_t)(block - (krepro_be64(rec + 16) &
									~KREPRO_RMAP_FLAGS));
			*unwritten = krepro_be64(rec + 16) & KREPRO_RMAP_UNWRITTEN;
			return true;
		}
	}
	return false;
}

bool krepro_xfs_internal_error(int kmsg, const char *dev, const char *file, char *caller,
			       size_t size)
{
	char msg[1024], prefix[64], at[64];
	const char *c, *name = strrchr(dev, '/');

	if (kmsg < 0)
		return false;
	snprintf(prefix, sizeof(prefix), "XFS (%s): Internal error ", name ? name + 1 : dev);
	snprintf(at, sizeof(at), "%s.", file);
	while (krepro_kmsg_next(kmsg, msg, sizeof(msg))) {
		if (strncmp(msg, prefix, strlen(prefix)) || !strstr(msg, at))
			continue;
		c = strstr(msg, "Caller ");
		snprintf(caller, size, "%.*s", c ? (int)strcspn(c + 7, "+ ") : 1, c ? c + 7 : "?");
		return true;
	}
	return false;
}

void krepro_xfs_steps_failed(int kmsg, struct krepro_loopfs *fs, const char *file,
			     const struct krepro_steps *st, const char *what)
{
	char caller[128] = "";
	bool report = krepro_xfs_internal_error(kmsg, fs->dev, file, caller, sizeof(caller));

	krepro_loopfs_release(fs);
	/* An errno (EUCLEAN included: any XFS check gives it) names no code. */
	if (report)
		krepro_fail("%s: %s (XFS: internal error in %s, caller %s)", what, st->text, file,
			    caller);
	else
		krepro_broken("%s: %s: no corruption report from %s%s, so not shown to be this bug",
			      what, st->text, file, kmsg < 0 ? " (kmsg unreadable)" : "");
}

struct log_items {
	const char *intent, *done;
	int intents, dones;
};

/* xfs_logprint's lines for the items ("RUI:  #regs: ..." and the extent
 * "(s: 0x..., l: 1, own: 131, off: 992, f: 0x...)") and done items: counted
 * and quoted. */
static void count_items(const char *line, void *ctx)
{
	struct log_items *in = ctx;
	const char *p = line + strspn(line, " \t");

	if (!strncmp(p, in->intent, strlen(in->intent)) && p[strlen(in->intent)] == ':')
		in->intents++;
	else if (!strncmp(p, in->done, strlen(in->done)) && p[strlen(in->done)] == ':')
		in->dones++;
	else if (strncmp(p, "(s: ", 4))
		return;
	krepro_info("xfs_logprint: %s", p);
}

int krepro_xfs_log_unfinished(const char *img, const char *intent, const char *done)
{
	const char *logprint[] = { "xfs_logprint", img, NULL };
	struct log_items in = { .intent = intent, .done = done };
	int rc = krepro_run_lines(logprint, count_items, &in);

	if (rc)
		krepro_broken("xfs_logprint %s exited with %d", img, rc);
	return in.intents - in.dones;
}

/* From xfs_fs.h (xfslibs-dev is not needed for one ioctl). */
#define XFS_IOC_GOINGDOWN		_IOR('X', 125, uint32_t)
#define XFS_FSOP_GOING_FLAGS_LOGFLUSH	0x1	/* force the log, then shut down */

void krepro_xfs_go_down(int fd)
{
	uint32_t flags = XFS_FSOP_GOING_FLAGS_LOGFLUSH;

	SAFE(ioctl(fd, XFS_IOC_GOINGDOWN, &flags));
}

double krepro_xfs_down_during(const char *mnt, int (*op)(void *arg), void *arg, double delay,
			      bool *ok)
{
	int go[2], done[2], dirfd = (int)SAFE(open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	double t0, took;
	char c = 0;
	pid_t pid;

	SAFE(pipe2(go, O_CLOEXEC));
	SAFE(pipe2(done, O_CLOEXEC));
	pid = (pid_t)SAFE(fork());
	if (pid == 0) {
		/* The child waits for the word, then reports op's result. */
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		c = op(arg) ? 1 : 0;
		_exit(write(done[1], &c, 1) == 1 ? 0 : 2);
	}
	t0 = krepro_now();
	SAFE(write(go[1], &c, 1));
	if (delay >= 0) {
		/* Spinning: a sleep's wake-up under TCG is coarser than the window. */
		while (krepro_now() - t0 < delay)
			;
		krepro_xfs_go_down(dirfd);
	}
	if (read(done[0], &c, 1) != 1)
		krepro_broken("the child running the operation did not report");
	took = krepro_now() - t0;
	SAFE(waitpid(pid, NULL, 0));
	*ok = c == 0;
	close(go[0]), close(go[1]), close(done[0]), close(done[1]);
	close(dirfd);
	return took;
}

unsigned long krepro_xfs_stat(const char *dev, const char *name)
{
	char path[96], line[256], *end;
	size_t len = strlen(name);
	unsigned long n;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/fs/xfs/%s/stats/stats", strrchr(dev, '/') + 1);
	f = fopen(path, "re");
	if (!f)
		krepro_broken("open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ' ') {
			n = strtoul(line + len + 1, &end, 10);
			fclose(f);
			if (end == line + len + 1)
				break;
			return n;
		}
	krepro_broken("%s has no %s line with a number", path, name);
}
