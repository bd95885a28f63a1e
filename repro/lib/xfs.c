// SPDX-License-Identifier: GPL-2.0
/*
 * XFS helpers the rmap reproducers share: the raw on-disk rmapbt root of AG 0
 * (xfs_db's key fields do not show the unwritten bit) and xfs_repair -n.
 */
#define _GNU_SOURCE
#include "krepro.h"

#include <endian.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
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

void krepro_xfs_read_block(const char *dev, unsigned int agbno, unsigned char buf[KREPRO_XFS_BLK])
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		krepro_broken("open %s: %m", dev);
	pread_all(fd, buf, KREPRO_XFS_BLK, (off_t)agbno * KREPRO_XFS_BLK, dev);
	close(fd);
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
		SAFE(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off,
			       KREPRO_XFS_BLK));
	SAFE(fsync(fd));
	close(fd);
}
