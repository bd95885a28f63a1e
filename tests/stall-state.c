// SPDX-License-Identifier: GPL-2.0
/*
 * stall-state DISK INSTANCE PID TID: krepro_nvme_stall_state() on the fake
 * tree the test build reads (tests/test_nvme_stall.py); prints its quotes,
 * then "cause: NAME held: N".
 * stall-state --window INSTANCE: the race-window count of the kernel lines
 * on stdin (nvme-window.h), as "timeouts: N io: N admin: N raced: N
 * recoveries: N reconnects: N failed: N".
 */
#include "nvme-stall.h"
#include "nvme-window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int window(int instance)
{
	struct krepro_nvme_window w = { 0 };
	char line[1024];

	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		krepro_nvme_window_line(&w, instance, line);
	}
	printf("timeouts: %u io: %u admin: %u raced: %u recoveries: %u reconnects: %u "
	       "failed: %u\n", w.timeouts, w.io_in_teardown, w.admin_in_teardown, w.raced,
	       w.recoveries, w.reconnects, w.failed_reconnects);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {
		[KREPRO_STALL_UNEXPLAINED] = "unexplained",
		[KREPRO_STALL_REQUEST_LOST] = "request-lost",
		[KREPRO_STALL_NVME_HUNG] = "nvme-hung",
	};
	enum krepro_stall_cause cause;
	unsigned int held;

	if (argc == 3 && !strcmp(argv[1], "--window"))
		return window(atoi(argv[2]));
	if (argc != 5) {
		fprintf(stderr, "usage: %s DISK INSTANCE PID TID | --window INSTANCE\n", argv[0]);
		return 2;
	}
	cause = krepro_nvme_stall_state(argv[1], atoi(argv[2]), (pid_t)atoi(argv[3]),
					(pid_t)atoi(argv[4]), &held);
	printf("cause: %s held: %u\n", names[cause], held);
	return 0;
}
