// SPDX-License-Identifier: GPL-2.0
/*
 * The nvme storm's race-window count (nvme-window.h), apart from the storm so
 * the unit tests can feed it lines (tests/test_nvme_stall.py).
 */
#define _GNU_SOURCE
#include "nvme-window.h"

#include <stdio.h>
#include <string.h>

/*
 * A transport's timeout handler's line, and its queue. 6.1 prints "queue %d:
 * timeout request" (tcp) or "I/O %d QID %d timeout" (rdma); 6.12's (since
 * the 6.8 "enhance timeout kernel log" changes) "I/O tag %d (%04x) ...
 * QID %d timeout", with the command's name in parentheses, spaces and all.
 */
static bool timeout_line(const char *msg, int *qid)
{
	const char *q;
	int tag;

	if (sscanf(msg, "queue %d: timeout request", qid) == 1 ||
	    sscanf(msg, "I/O %d QID %d timeout", &tag, qid) == 2)
		return true;
	if (strncmp(msg, "I/O tag ", 8) != 0)
		return false;
	for (q = strstr(msg, " QID "); q && strstr(q + 1, " QID "); q = strstr(q + 1, " QID "))
		;
	return q && sscanf(q, " QID %d timeout", qid) == 1;
}

/* A line that shows the controller's teardown over: the window is closed. */
static bool teardown_over(const char *m)
{
	static const char *const after[] = {
		"Reconnecting in", "Removing controller", "creating ",
		"Successfully reconnected", "Failed reconnect attempt",
	};

	for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++)
		if (!strncmp(m, after[i], strlen(after[i])))
			return true;
	return false;
}

void krepro_nvme_window_line(struct krepro_nvme_window *w, int instance, const char *msg)
{
	char dev[32];
	const char *m;
	int qid = -1;

	snprintf(dev, sizeof(dev), "nvme nvme%d: ", instance);
	m = strstr(msg, dev);
	if (!m)
		return;
	m += strlen(dev);
	if (timeout_line(m, &qid)) {
		w->timeouts++;
		if (!w->tearing_down)
			return;
		if (qid == 0) {
			w->admin_in_teardown++;
		} else if (qid > 0) {
			w->io_in_teardown++;
			w->raced += !w->window_hit;
			w->window_hit = true;
		}
	} else if (strstr(m, "starting error recovery")) {
		w->recoveries++;
		w->tearing_down = true;
		w->window_hit = false;
	} else if (teardown_over(m)) {
		w->tearing_down = false;
		w->reconnects += !strncmp(m, "Successfully reconnected", 24);
		w->failed_reconnects += !strncmp(m, "Failed reconnect attempt", 24);
	}
}
