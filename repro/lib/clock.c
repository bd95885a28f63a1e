// SPDX-License-Identifier: GPL-2.0
/*
 * The suite's one clock (CLOCK_MONOTONIC, in seconds) and the waits kept by
 * it. The bottom of the library: it prints nothing and calls nothing else of
 * it, so the harness can build on it and every caller reports its own way.
 */
#define _GNU_SOURCE
#include "krepro.h"

#include <errno.h>
#include <sched.h>
#include <time.h>

double krepro_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int krepro_sleep(double seconds)
{
	struct timespec until;
	time_t whole = (time_t)seconds;
	int err;

	if (seconds <= 0)
		return 0;
	/* An absolute deadline: a signal that interrupts the sleep does not
	 * stretch it. */
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += whole;
	until.tv_nsec += (long)((seconds - (double)whole) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while ((err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL)) == EINTR)
		;
	/* Seen on an ARM kernel without the 32-bit time syscalls: waits are
	 * kept by the clock anyway, so yield and let the caller poll on. */
	if (err)
		sched_yield();
	return err;
}

bool krepro_poll_until(bool (*ready)(void *ctx), void *ctx, double timeout, double step,
		       double *waited)
{
	double start = krepro_now(), now;
	bool met;

	for (;;) {
		met = ready(ctx);
		now = krepro_now();
		if (met || now - start >= timeout)
			break;
		/* Never past the deadline: the last look is at it. */
		krepro_sleep(start + timeout - now < step ? start + timeout - now : step);
	}
	if (waited)
		*waited = now - start;
	return met;
}
