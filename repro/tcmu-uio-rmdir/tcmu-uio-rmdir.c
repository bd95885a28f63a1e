// SPDX-License-Identifier: GPL-2.0
/*
 * tcmu-uio-rmdir: removing an enabled TCM-user backstore unregisters its uio
 * device. With the bug, uio_unregister_device() reads idev->minor after
 * device_unregister() has freed idev: KASAN reports a use-after-free, and,
 * with freed memory zeroed (init_on_free=1), the wrong minor is released, which
 * userspace sees in the minors the next backstores get. Upstream fix
 * 092561f06702. See README.md.
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "sys.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIGFS	"/sys/kernel/config"
#define CORE		CONFIGFS "/target/core"
#define HBA		CORE "/user_0"		/* TCM-user HBA, host id 0 */
#define ANCHOR		"anchor"		/* stays enabled: holds the lowest minor */
#define VICTIM		"krepro"		/* created and removed every round */
#define UIO_CLASS	"/sys/class/uio"
#define DEV_SIZE	(1 << 20)
#define ROUNDS		10

/* The minor of the uio device named "tcm-user/0/<name>" (tcmu_update_uio_info), or -1. */
static int find_uio_minor(const char *name)
{
	DIR *d = opendir(UIO_CLASS);
	struct dirent *e;
	char want[64];
	int minor = -1;

	if (!d)
		return -1;
	snprintf(want, sizeof(want), "tcm-user/0/%s", name);
	while ((e = readdir(d)) && minor < 0) {
		char path[300], line[256];
		int m;

		if (sscanf(e->d_name, "uio%d", &m) != 1)
			continue;
		snprintf(path, sizeof(path), UIO_CLASS "/%s/name", e->d_name);
		if (krepro_read_line(path, line, sizeof(line)) == 0 && !strcmp(line, want))
			minor = m;
	}
	closedir(d);
	return minor;
}

/*
 * mkdir HBA/<name>, set its size and enable it, which registers its uio
 * device. Returns the enable's result: 0, or -1 with errno.
 */
static int create_backstore(const char *name)
{
	char dir[128], path[160];

	snprintf(dir, sizeof(dir), HBA "/%s", name);
	SAFE(mkdir(dir, 0755));
	snprintf(path, sizeof(path), "%s/control", dir);
	krepro_write_file(path, "dev_size=%d", DEV_SIZE);
	snprintf(path, sizeof(path), "%s/enable", dir);
	return krepro_try_write_file(path, "1");
}

static int remove_backstore(const char *name)
{
	char dir[128];

	snprintf(dir, sizeof(dir), HBA "/%s", name);
	return rmdir(dir);
}

static void setup(void)
{
	struct stat st;

	/* The guest init mounts configfs; mount it here for a hand-made guest. */
	if (stat(CORE, &st) < 0 && mount("configfs", CONFIGFS, "configfs", 0, NULL) < 0 &&
	    errno != EBUSY)
		krepro_broken("mount configfs on " CONFIGFS ": %s", strerror(errno));
	if (stat(CORE, &st) < 0)
		krepro_broken(CORE ": %s (target core not registered?)", strerror(errno));
	SAFE(mkdir(HBA, 0755));
}

/* Cases run in a child: clean up by what exists, not by what a case did. */
static void cleanup(void)
{
	const char *const names[] = { VICTIM, ANCHOR };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (remove_backstore(names[i]) < 0 && errno != ENOENT)
			krepro_info("rmdir " HBA "/%s: %s", names[i], strerror(errno));
	if (rmdir(HBA) < 0 && errno != ENOENT)
		krepro_info("rmdir " HBA ": %s", strerror(errno));
}

/*
 * An anchor backstore takes the lowest free minor A and stays. Then, ROUNDS
 * times, a second backstore is created (it gets the next minor, V), enabled
 * and removed. No userspace handler and no open of /dev/uioN: an open file
 * would hold a reference on the uio device, so rmdir would not free idev and
 * the bug would not show.
 *
 * With the bug, rmdir reads idev->minor after idev was freed. Booted with
 * init_on_free=1, SLUB zeroes the object as it is freed (before KASAN's
 * quarantine takes it, so this holds with and without KASAN), so the stale
 * read gives minor 0, the anchor's: the anchor's minor is released and V
 * stays allocated. The next backstore is then handed minor 0, whose name
 * uio0 the anchor's device still has: its enable fails, or it gets a minor
 * other than V. With the fix every round gets V again.
 */
static void run_rmdir(void)
{
	double start = krepro_elapsed();
	int anchor, victim = -1, bad = 0;

	if (create_backstore(ANCHOR) < 0)
		krepro_broken("enable " HBA "/" ANCHOR ": %s", strerror(errno));
	anchor = find_uio_minor(ANCHOR);
	if (anchor != 0)
		krepro_broken("the anchor backstore got uio%d, not uio0 (another uio device "
			      "in the guest?): the stale minor would not be the anchor's", anchor);

	for (int round = 0; round < ROUNDS && !bad; round++) {
		int minor;

		if (create_backstore(VICTIM) < 0) {
			/* Only the name clash is the bug: any other errno (a slow or
			 * short-of-memory guest) says nothing about it. */
			if (round == 0 || errno != EEXIST)
				krepro_broken("round %d: enable " HBA "/" VICTIM ": %s%s", round,
					      strerror(errno), round ? " (not the name clash, "
					      "EEXIST, that a stale minor causes)" : "");
			krepro_fail("round %d: enabling a new backstore failed (%s); round 0's "
				    "got uio%d. Expected when an earlier rmdir released minor %d "
				    "(a stale, zeroed idev->minor) while the anchor still holds "
				    "uio%d: the new device is handed minor %d and its name clashes",
				    round, strerror(errno), victim, anchor, anchor, anchor);
			bad = 1;
			break;
		}
		minor = find_uio_minor(VICTIM);
		if (minor < 0)
			krepro_broken("round %d: no " UIO_CLASS "/uio*/name reads tcm-user/0/"
				      VICTIM " after enable", round);
		if (round == 0) {
			victim = minor;
			krepro_info("anchor: uio%d; round 0: the new backstore got uio%d",
				    anchor, victim);
		} else if (minor != victim) {
			krepro_fail("round %d: the new backstore got uio%d, round 0's got uio%d: "
				    "an earlier rmdir freed another minor than its own (a stale "
				    "idev->minor)", round, minor, victim);
			bad = 1;
		}
		/* The call under test: tcmu_destroy_device() -> uio_unregister_device(). */
		if (remove_backstore(VICTIM) < 0)
			krepro_broken("round %d: rmdir " HBA "/" VICTIM ": %s", round,
				      strerror(errno));
	}
	krepro_info("mkdir/enable/rmdir rounds took %.2f s", krepro_elapsed() - start);
	if (!bad)
		krepro_pass("%d backstores beside the anchor (uio%d) all got uio%d and were "
			    "removed", ROUNDS, anchor, victim);
}

static const char *const kconfigs[] = { "CONFIG_TARGET_CORE", "CONFIG_TCM_USER2",
					"CONFIG_UIO", NULL };

static const struct krepro_case cases[] = {
	{ "rmdir", run_rmdir },
	{ NULL, NULL },
};

/*
 * The bug's kernel report: KASAN's use-after-free read of idev->minor in
 * uio_unregister_device() (README, Evidence). The read is in
 * uio_free_minor(), inlined there on the krepro kernels; named after either.
 */
static const struct krepro_signature signatures[] = {
	{ "KASAN", "^KASAN: (slab-)?use-after-free in (uio_unregister_device|uio_free_minor)$",
	  "uio_unregister_device", "CONFIG_KASAN" },
	{ NULL },
};

static const struct krepro_test test = {
	.name = "tcmu-uio-rmdir",
	.summary = "rmdir of a TCMU backstore reads a freed uio_device (use-after-free)",
	.fix_commit = "092561f06702 (\"uio: Fix use-after-free in uio_unregister_device()\")",
	.bug_commit = "8fd0e2a6df26 (\"uio: free uio id after uio file node is freed\")",
	.seed = "010-patch-uio-fix-use-after-free-in-uio-unregister-device.patch",
	.needs_kconfigs = kconfigs,
	.signatures = signatures,
	/* The uio name clash (EEXIST) or the other minor a stale
	 * idev->minor causes: init_on_free=1, a boot parameter and no
	 * option, makes it show without KASAN. */
	.own_evidence = true,
	.min_cpus = 1,
	.timeout = 180,
	/* Zero slab objects as they are freed (before KASAN's quarantine takes
	 * them), so the stale read sees minor 0; no KFENCE sampling, so the
	 * uio_device comes from SLUB, where the zeroing applies. */
	.cmdline = "init_on_free=1 kfence.sample_interval=0",
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
