// SPDX-License-Identifier: GPL-2.0
/*
 * The state of a stalled nvme read (nvme-stall.h). Every path is under
 * KREPRO_STALL_ROOT, "" in the reproducers: the unit tests build the library
 * again with a directory of their own, whose fake /proc and /sys trees
 * exercise the judgement on the host without reading its kernel.
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "nvme-stall.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef KREPRO_STALL_ROOT
#define KREPRO_STALL_ROOT ""
#endif

/*
 * Quote a file's first `max` lines as "stall state: WHAT: line"; its line
 * count. With `needle`, *found says whether a line contains it (all lines,
 * quoted or not). A missing file is quoted as its error when `max` > 0.
 */
static unsigned int quote_file(const char *path, const char *what, unsigned int max,
			       const char *needle, bool *found)
{
	FILE *f = fopen(path, "r");
	char line[512];
	unsigned int n = 0;

	if (found)
		*found = false;
	if (!f) {
		if (max)
			krepro_info("stall state: %s: %s", path, strerror(errno));
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (needle && strstr(line, needle))
			*found = true;
		if (n++ < max)
			krepro_info("stall state: %s: %s", what, line);
	}
	fclose(f);
	if (n > max && max)
		krepro_info("stall state: %s: %u lines in all", what, n);
	return n;
}

/* Quote the blk-mq requests one debugfs list file holds; their count. */
static unsigned int quote_rq_list(const char *dir, const char *file, const char *what)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return stat(path, &st) == 0 ? quote_file(path, what, 4, NULL, NULL) : 0;
}

/*
 * Tasks in uninterruptible sleep other than the stalled reader, each with its
 * kernel stack (the first 8 tasks, 10 lines each): a teardown or reconnect
 * that never finishes shows here. The number of them whose stack is in nvme
 * code.
 */
static unsigned int quote_blocked_tasks(pid_t reader)
{
	char path[300], what[128], comm[64];
	unsigned int shown = 0, in_nvme = 0;
	struct dirent *p;
	DIR *procs = opendir(KREPRO_STALL_ROOT "/proc");

	if (!procs)
		return 0;
	while ((p = readdir(procs))) {
		pid_t pid = (pid_t)atoi(p->d_name);
		char state = 0;
		bool nvme;
		FILE *f;

		if (pid <= 0 || pid == reader)
			continue;
		snprintf(path, sizeof(path), KREPRO_STALL_ROOT "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%*d (%63[^)]) %c", comm, &state) != 2)
			state = 0;
		fclose(f);
		if (state != 'D')
			continue;
		snprintf(path, sizeof(path), KREPRO_STALL_ROOT "/proc/%d/stack", (int)pid);
		snprintf(what, sizeof(what), "blocked task %d (%s)", (int)pid, comm);
		quote_file(path, what, shown < 8 ? 10 : 0, "nvme", &nvme);
		shown++;
		in_nvme += nvme;
	}
	closedir(procs);
	krepro_info("stall state: %u other tasks in uninterruptible sleep, %u of them in nvme "
		    "code", shown, in_nvme);
	return in_nvme;
}

enum krepro_stall_cause krepro_nvme_stall_state(const char *disk, int instance, pid_t pid,
						pid_t tid, unsigned int *held)
{
	char dir[256], hctx[520], cpu[780], path[512], what[600];
	unsigned int busy = 0, waiting = 0, hctxs = 0, hung;
	bool no_request_yet;
	struct dirent *de, *ce;
	DIR *d, *c;

	*held = 0;
	snprintf(path, sizeof(path), KREPRO_STALL_ROOT "/sys/class/nvme/nvme%d/state", instance);
	quote_file(path, "controller state", 1, NULL, NULL);
	snprintf(path, sizeof(path), KREPRO_STALL_ROOT "/proc/%d/task/%d/stack", (int)pid,
		 (int)tid);
	/* A reader waiting to enter a frozen queue has no request to lose. */
	quote_file(path, "the stalled reader's kernel stack", 12, "bio_queue_enter",
		   &no_request_yet);
	hung = quote_blocked_tasks(pid);
	snprintf(dir, sizeof(dir), KREPRO_STALL_ROOT "/sys/kernel/debug/block/%s", disk);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "hctx", 4))
			continue;
		hctxs++;
		snprintf(hctx, sizeof(hctx), "%s/%s", dir, de->d_name);
		snprintf(what, sizeof(what), "%s in flight", de->d_name);
		busy += quote_rq_list(hctx, "busy", what);
		snprintf(what, sizeof(what), "%s dispatch list", de->d_name);
		waiting += quote_rq_list(hctx, "dispatch", what);
		c = opendir(hctx);
		while (c && (ce = readdir(c))) {
			if (strncmp(ce->d_name, "cpu", 3))
				continue;
			snprintf(cpu, sizeof(cpu), "%s/%s", hctx, ce->d_name);
			for (int t = 0; t < 3; t++) {
				static const char *const list[] = { "default_rq_list",
								    "read_rq_list",
								    "poll_rq_list" };

				snprintf(what, sizeof(what), "%s %s %s", de->d_name, ce->d_name,
					 list[t]);
				waiting += quote_rq_list(cpu, list[t], what);
			}
		}
		if (c)
			closedir(c);
	}
	if (d)
		closedir(d);
	if (!hctxs) {
		/* Zero lists read is not zero requests held: say which. */
		krepro_info("stall state: %s: no hctx directories (CONFIG_BLK_DEBUG_FS off?): "
			    "where its requests are cannot be seen", dir);
		return hung ? KREPRO_STALL_NVME_HUNG : KREPRO_STALL_UNEXPLAINED;
	}
	waiting += quote_rq_list(dir, "requeue_list", "requeue list");
	quote_rq_list(dir, "state", "queue flags");
	*held = busy + waiting;
	krepro_info("stall state: %s: %u requests in flight, %u waiting to be dispatched or "
		    "requeued", disk, busy, waiting);
	if (*held == 0 && !no_request_yet)
		return KREPRO_STALL_REQUEST_LOST;
	return hung ? KREPRO_STALL_NVME_HUNG : KREPRO_STALL_UNEXPLAINED;
}
