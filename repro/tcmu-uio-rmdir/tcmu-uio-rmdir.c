// SPDX-License-Identifier: GPL-2.0
/*
 * tcmu-uio-rmdir: removing an enabled TCM-user backstore unregisters its uio
 * device. With the bug, uio_unregister_device() reads idev->minor after
 * device_unregister() has freed idev: KASAN reports a use-after-free, and
 * where the freed memory is poisoned instead (slub_debug=P, no KASAN) the
 * wrong minor is released, so the old one leaks and the next device gets
 * another number. Upstream fix 092561f06702. See README.md.
 */
#define _GNU_SOURCE
#include "krepro.h"

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
#define DEV		HBA "/krepro"		/* the backstore */
#define UIO_NAME	"tcm-user/0/krepro"	/* its uio device's name (tcmu_update_uio_info) */
#define UIO_CLASS	"/sys/class/uio"
#define DEV_SIZE	(1 << 20)
#define ROUNDS		10

/* The uio minor whose name is UIO_NAME, or -1. */
static int find_uio_minor(void)
{
	DIR *d = opendir(UIO_CLASS);
	struct dirent *e;
	int minor = -1;

	if (!d)
		return -1;
	while ((e = readdir(d)) && minor < 0) {
		char path[300], name[256];
		int m;

		if (sscanf(e->d_name, "uio%d", &m) != 1)
			continue;
		snprintf(path, sizeof(path), UIO_CLASS "/%s/name", e->d_name);
		if (krepro_read_line(path, name, sizeof(name)) == 0 && !strcmp(name, UIO_NAME))
			minor = m;
	}
	closedir(d);
	return minor;
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
	if (rmdir(DEV) < 0 && errno != ENOENT)
		krepro_info("rmdir " DEV ": %s", strerror(errno));
	if (rmdir(HBA) < 0 && errno != ENOENT)
		krepro_info("rmdir " HBA ": %s", strerror(errno));
}

/*
 * Create, enable and remove the backstore ROUNDS times. No userspace handler
 * and no open of /dev/uioN: an open file would hold a reference on the uio
 * device, so rmdir would not free idev and the bug would not show.
 */
static void run_rmdir(void)
{
	double start = krepro_elapsed();
	int first = -1, leaked = 0;

	for (int round = 0; round < ROUNDS; round++) {
		int minor;

		SAFE(mkdir(DEV, 0755));
		krepro_write_file(DEV "/control", "dev_size=%d", DEV_SIZE);
		krepro_write_file(DEV "/enable", "1");
		minor = find_uio_minor();
		if (minor < 0)
			krepro_broken("round %d: no " UIO_CLASS "/uio*/name reads " UIO_NAME
				      " after enable", round);
		if (round == 0) {
			first = minor;
			krepro_info("round 0: the backstore got uio%d", minor);
		} else if (minor != first && !leaked) {
			/* The idr hands out the lowest free minor: uio<first> was
			 * freed in every earlier round unless it leaked. */
			krepro_fail("round %d: the new backstore got uio%d, round 0 got uio%d: "
				    "an earlier rmdir did not free its minor (freed a stale "
				    "idev->minor instead)", round, minor, first);
			leaked = 1;
		}
		/* The call under test: tcmu_destroy_device() -> uio_unregister_device(). */
		if (rmdir(DEV) < 0)
			krepro_broken("round %d: rmdir " DEV ": %s", round, strerror(errno));
	}
	krepro_info("%d rounds of mkdir/enable/rmdir in %.2f s", ROUNDS,
		    krepro_elapsed() - start);
	if (!leaked)
		krepro_pass("%d backstores all got uio%d and were removed; a use-after-free "
			    "shows as a KASAN report in the kernel log", ROUNDS, first);
}

static const char *const kconfigs[] = { "CONFIG_TARGET_CORE", "CONFIG_TCM_USER2",
					"CONFIG_UIO", NULL };

static const struct krepro_case cases[] = {
	{ "rmdir", run_rmdir },
	{ NULL, NULL },
};

static const struct krepro_test test = {
	.name = "tcmu-uio-rmdir",
	.summary = "rmdir of a TCMU backstore reads a freed uio_device (use-after-free)",
	.fix_commit = "092561f06702 (\"uio: Fix use-after-free in uio_unregister_device()\")",
	.bug_commit = "8fd0e2a6df26 (\"uio: free uio id after uio file node is freed\")",
	.seed = "010-patch-uio-fix-use-after-free-in-uio-unregister-device.patch",
	.needs_kconfigs = kconfigs,
	.min_cpus = 1,
	.timeout = 180,
	/* Poison freed slab objects so a stale read sees 0x6b..., not the old
	 * minor (takes effect only without KASAN: README.md); no KFENCE sampling,
	 * so the uio_device comes from SLUB where the poisoning applies. */
	.cmdline = "slub_debug=P kfence.sample_interval=0",
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
