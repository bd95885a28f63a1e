/* SPDX-License-Identifier: GPL-2.0 */
/*
 * XFS (xfs.c): mkfs and the rmapbt image, the raw on-disk rmapbt of AG 0
 * (its stale keys too), xfs_db, xfs_repair -n, logprint, GETFSMAP, stats,
 * shutdown, the clone and punch of a block and a case's steps.
 */
#ifndef KREPRO_XFS_H
#define KREPRO_XFS_H

#include "fs.h"
#include "krepro.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define KREPRO_XFS_BLK		4096
/* Short-form btree block with CRC: a 56-byte header, then an rmapbt node's
 * low/high key pairs (20 bytes each: startblock, owner, offset), then its
 * pointers; a leaf's records are 24 bytes (startblock, blockcount, owner,
 * offset). The offset's top bits: attr fork 63, bmbt 62, unwritten 61. */
#define KREPRO_XFS_BB_HDR	56
#define KREPRO_RMAP_KEY_PAIR	40
#define KREPRO_RMAP_REC		24
#define KREPRO_RMAP_UNWRITTEN	(1ULL << 61)
#define KREPRO_RMAP_FLAGS	(7ULL << 61)

uint16_t krepro_be16(const void *p);
uint32_t krepro_be32(const void *p);
uint64_t krepro_be64(const void *p);
/* Read AG 0's rmapbt root of the unmounted XFS on dev (v5, 4 KiB blocks)
 * into root; returns its agbno. BROKEN if it is not that. */
unsigned int krepro_xfs_rmap_root(const char *dev, unsigned char root[KREPRO_XFS_BLK]);
/* Read AG 0's block agbno of dev. */
void krepro_xfs_read_block(const char *dev, unsigned int agbno,
			   unsigned char buf[KREPRO_XFS_BLK]);
/* Set the unwritten bit in the low key i of AG 0's rmapbt root on the
 * unmounted XFS on dev, and checksum the block again: the key as kernels that
 * keep the bit in node keys (6.1) leave it over a record turned written. */
void krepro_xfs_rmap_mark_key_unwritten(const char *dev, unsigned int i);
/* Read the leaf under key i (0: the first) of the two-level rmapbt root
 * into leaf; returns its agbno. BROKEN if it is not an rmapbt leaf. */
unsigned int krepro_xfs_rmap_leaf(const char *dev, const unsigned char root[KREPRO_XFS_BLK],
				  unsigned int i, unsigned char leaf[KREPRO_XFS_BLK]);
/* The first file blocks of the records of inode owner's data fork in the leaf
 * under root key i (0: the first), at most n, into blocks: how many. */
unsigned int krepro_xfs_rmap_leaf_blocks(const char *dev, unsigned int i, uint64_t owner,
					 uint64_t *blocks, unsigned int n);
/*
 * A stale key: a root key of AG 0's two-level rmapbt that has the unwritten
 * bit where the first record of its leaf, for the same file block, has not,
 * as kernels whose key compare masks the flags (6.1) leave a key over a
 * record turned written (krepro_xfs_rmap_mark_key_unwritten() makes one).
 */
struct krepro_rmap_stale_key {
	unsigned int index, numrecs;	/* the key's index; the root's key count */
	uint64_t key_offset, rec_offset, owner, block;	/* block: file block */
	uint32_t agbno;		/* the AG block the record maps file block B to */
};
/* The first stale key of the unmounted XFS on dev, read raw: 0, or -1 when
 * there is none (numrecs is set either way). */
int krepro_xfs_rmap_stale_key(const char *dev, struct krepro_rmap_stale_key *sk);
/* The record of AG 0's rmapbt (one or two levels, read raw) that maps file
 * block `block` of inode owner's data fork: true, with the AG block it maps
 * that file block to and the offset's unwritten bit. */
bool krepro_xfs_rmap_lookup(const char *dev, uint64_t owner, uint64_t block, uint32_t *agbno,
			    bool *unwritten);
/* XFS's report of an internal error in source file `file` ("xfs_rmap.c") on
 * dev's filesystem, read from kmsg (krepro_kmsg_open()): "XFS (loopN):
 * Internal error <check> at line N of file fs/xfs/libxfs/xfs_rmap.c.  Caller
 * xfs_rmap_unmap+0x...". True, with the caller's name; false when kmsg < 0. */
bool krepro_xfs_internal_error(int kmsg, const char *dev, const char *file, char *caller,
			       size_t size);
/* xfs_logprint img: how many more intent items ("RUI") than done items
 * ("RUD") its log holds; their lines are quoted. BROKEN if it fails. */
int krepro_xfs_log_unfinished(const char *img, const char *intent, const char *done);
/* Shut down the XFS that fd (any file or directory in it) is on, forcing
 * the log first (XFS_IOC_GOINGDOWN, LOGFLUSH). BROKEN on error. */
void krepro_xfs_go_down(int fd);
/*
 * Run op(arg) in a child process and, `delay` seconds after telling it to
 * start, shut down the XFS mounted at mnt (krepro_xfs_go_down()): what was
 * committed to the log by then reaches it, what was not never does; delay
 * < 0: no shutdown. Returns the seconds until op returned; *ok: it returned
 * 0. BROKEN when the child does not report.
 */
double krepro_xfs_down_during(const char *mnt, int (*op)(void *arg), void *arg, double delay,
			      bool *ok);
/* mkfs.xfs -q -f [-m meta] dev (meta: e.g. "rmapbt=1,reflink=1"). BROKEN on
 * error. */
void krepro_xfs_mkfs(const char *dev, const char *meta);
/* xfs_repair -n dev: its exit status (0: clean). Its output goes out as
 * diagnostics unless quiet; with when, one line says what it found. */
int krepro_xfs_repair_n(const char *dev, const char *when, bool quiet);
/* Create path on a mounted XFS: fallocate blocks 4 KiB blocks, then punch
 * every other one (1, 3, 5, ...): blocks/2 one-block unwritten extents, each
 * its own rmap record; 2,048 blocks give AG 0 a two-level rmapbt on a 512 MiB
 * filesystem. */
void krepro_xfs_fragmented_file(const char *path, unsigned int blocks);
/* The first number of the `name` line ("blk_map": xfs_bmapi_read() calls) of
 * the per-mount stats of the XFS mounted from dev (/dev/loopN). BROKEN if
 * there is none. */
unsigned long krepro_xfs_stat(const char *dev, const char *name);
/* mkfs.xfs -m rmapbt=1,reflink=1 dev, and the file "f" of
 * krepro_xfs_fragmented_file(blocks) in it (mounted at mnt meanwhile); root
 * gets AG 0's rmapbt root. Returns its key count; BROKEN unless the tree has
 * two levels and at least three root keys. */
unsigned int krepro_xfs_rmap_image(const char *dev, const char *mnt, unsigned int blocks,
				   unsigned char root[KREPRO_XFS_BLK]);
/* xfs_db -x -c cmds[0] -c cmds[1] ... img (cmds NULL-terminated, at most 7):
 * its exit status; value gets the value its "<field> = <value>" line prints
 * (after a fuzz or write of field: the new value), "?" when none. */
int krepro_xfs_db_x(const char *img, const char *const cmds[], const char *field, char *value,
		    size_t size);
/* FS_IOC_GETFSMAP over the whole filesystem mounted at mnt, in batches (on
 * XFS a ranged rmapbt query): 0, or -1 with errno (a step under test). */
int krepro_getfsmap_all(const char *mnt);
/* FICLONERANGE of one 4 KiB block: src's at src_off over dst's at dst_off.
 * 0, or -1 with errno (the call under test: judged by the caller). */
int krepro_clone_block(int dst, off_t dst_off, int src, off_t src_off);
/* fallocate(PUNCH_HOLE | KEEP_SIZE) of the 4 KiB block at off: 0, or -1
 * with errno (the call under test: judged by the caller). */
int krepro_punch_block(int fd, off_t off);

/*
 * The steps of a case, in order, for its evidence: "fallocate ok, fsync EIO"
 * (an errno by its name, "short" for a short transfer) and the errnos of
 * those that failed. Zero it before the first step.
 */
struct krepro_steps {
	char text[384];
	bool failed;
	unsigned int nerrs;
	int errs[8];
};
/* Record one step: its name, whether it worked, and errno if not (read it
 * in the statement after the call: argument order is unspecified). */
void krepro_step(struct krepro_steps *s, const char *name, bool ok, int err);
/* Did a step fail with err? */
bool krepro_steps_gave(const struct krepro_steps *s, int err);
/* A case's steps failed on fs: let go of it, then FAIL when XFS reported an
 * internal error in `file` for it (krepro_xfs_internal_error()), naming the
 * caller; else BROKEN, whatever the errno (any XFS check gives EUCLEAN). */
void krepro_xfs_steps_failed(int kmsg, struct krepro_loopfs *fs, const char *file,
			     const struct krepro_steps *st, const char *what);

#endif
