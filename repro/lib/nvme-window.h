/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The nvme timeout storm's race coverage, counted from the kernel's own lines
 * (nvmf.c feeds it /dev/kmsg): how often a timeout handler of an I/O queue ran
 * while an error recovery tore that controller down, the window the seeds'
 * race needs. Only the transport's timeout handler lines count as timeouts.
 */
#ifndef KREPRO_NVME_WINDOW_H
#define KREPRO_NVME_WINDOW_H

#include <stdbool.h>

struct krepro_nvme_window {
	/* The transport's timeout handler lines of the controller, any queue. */
	unsigned int timeouts;
	unsigned int recoveries, reconnects, failed_reconnects;
	/*
	 * The window: from the controller's "starting error recovery" to the
	 * first line that shows its teardown over ("Reconnecting in",
	 * "Removing controller", "creating N I/O queues", a reconnect's result).
	 * A timeout of queue Q > 0 inside it is the race's own: its handler
	 * finds the controller not live and completes the request itself, the
	 * request teardown cancels. Queue 0 (admin) is counted apart.
	 */
	unsigned int io_in_teardown, admin_in_teardown;
	/* Teardowns that at least one I/O queue's timeout raced. */
	unsigned int raced;
	bool tearing_down, window_hit;
};

/* One kernel message (no kmsg prefix) of any device: counted when it is
 * controller nvme<instance>'s. */
void krepro_nvme_window_line(struct krepro_nvme_window *w, int instance, const char *msg);

#endif
