/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A race run in rounds until it has reached its window a set number of times
 * (race.c): one loop, one count of window hits, one way to say PASS.
 */
#ifndef KREPRO_RACE_H
#define KREPRO_RACE_H

#include "krepro.h"

#include <stdbool.h>

/*
 * A race run in rounds until step() says stop or a bound is reached. step()
 * runs one step, a round or a look at several (a storm's watch), adds the
 * rounds it finished to r->rounds, sets r->hits, the window hits so far (how
 * often the race window was reached, from the kernel's own stamps or lines),
 * and returns false when the race must end now (evidence found).
 *
 * The bound is coverage, not time: max_hits window hits. The FAIL rate a
 * clean run is weighed with was measured by runs with the same bound, so a
 * clean run is exactly as strong as a calibration run, on a fast host or a
 * slow one, and no longer. max_rounds and max_seconds are caps: a race that
 * reaches one before max_hits covered less than it must and is not judged
 * (BROKEN). With max_hits 0 the caps are the bound.
 */
struct krepro_race {
	const char *rounds_of;	/* what a round is, plural: "send-and-close rounds" */
	const char *window;	/* what a window hit is: "echoes after their socket closed" */
	unsigned long max_hits;	/* the bound: window hits (0: the caps are the bound) */
	unsigned long max_rounds;	/* caps */
	double max_seconds;
	double pause;		/* seconds between steps; 0: none */
	bool (*step)(struct krepro_race *r, void *ctx);
	void *ctx;
	/* Kept by krepro_race_run() and step(); hits: the caller's. */
	unsigned long rounds, hits;
	double start, seconds;	/* krepro_now() at the start; seconds run */
	bool stopped;		/* ended by step(), not by a bound */
};
void krepro_race_run(struct krepro_race *r);
/* The counts as a KTAP diagnostic: "# race: N <rounds> in T s (bound: ...);
 * W window hits (<window>)". krepro_race_run() prints them when step() stops
 * the race, so a FAIL's console says how much of the window it took. */
void krepro_race_counts(const struct krepro_race *r);
/* BROKEN unless the window was reached at least once. */
void krepro_race_window_reached(const struct krepro_race *r);
/* The race ran to its bound without the bug: PASS "not reproduced in N
 * <rounds> / T s, W window hits (<window>): <fmt>". BROKEN instead when it
 * stopped before its bound (a cap first, or step()) or never reached the
 * window. */
void krepro_race_pass(const struct krepro_race *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
