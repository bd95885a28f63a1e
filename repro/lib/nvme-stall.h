/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What holds up a stalled nvme read, read first-hand from procfs, sysfs and
 * blk-mq's debugfs, and what that state shows. The nvme timeout storm
 * (nvmf.c) calls it when a read has been outstanding too long: a stall is the
 * bug's FAIL only with its cause shown.
 */
#ifndef KREPRO_NVME_STALL_H
#define KREPRO_NVME_STALL_H

#include <sys/types.h>

enum krepro_stall_cause {
	KREPRO_STALL_UNEXPLAINED,	/* requests still held, nothing stuck in nvme */
	KREPRO_STALL_REQUEST_LOST,	/* blk-mq holds no request while the reader waits */
	KREPRO_STALL_NVME_HUNG,		/* a task is stuck in nvme code */
};

/*
 * Quote, as "stall state: ..." lines, the controller state of nvme<instance>,
 * the kernel stack of the reader (thread tid of process pid), every other task
 * in uninterruptible sleep with its stack, and from blk-mq's debugfs the
 * requests <disk> holds: in flight, on dispatch and per-CPU lists, requeued.
 * Sets *held to that count (0 when the lists cannot be read) and returns what
 * the state shows. A reader still waiting to enter a frozen queue has no
 * request to lose: with none held it is UNEXPLAINED, not LOST.
 */
enum krepro_stall_cause krepro_nvme_stall_state(const char *disk, int instance, pid_t pid,
						pid_t tid, unsigned int *held);

#endif
