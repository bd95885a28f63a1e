// SPDX-License-Identifier: GPL-2.0
/*
 * stall-state DISK INSTANCE PID TID: krepro_nvme_stall_state() on the fake
 * tree the test build reads (tests/test_nvme_stall.py); prints its quotes,
 * then "cause: NAME held: N".
 */
#include "nvme-stall.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	static const char *const names[] = {
		[KREPRO_STALL_UNEXPLAINED] = "unexplained",
		[KREPRO_STALL_REQUEST_LOST] = "request-lost",
		[KREPRO_STALL_NVME_HUNG] = "nvme-hung",
	};
	enum krepro_stall_cause cause;
	unsigned int held;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DISK INSTANCE PID TID\n", argv[0]);
		return 2;
	}
	cause = krepro_nvme_stall_state(argv[1], atoi(argv[2]), (pid_t)atoi(argv[3]),
					(pid_t)atoi(argv[4]), &held);
	printf("cause: %s held: %u\n", names[cause], held);
	return 0;
}
