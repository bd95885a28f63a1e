// SPDX-License-Identifier: GPL-2.0
/*
 * A race bounded by rounds and seconds (race.h): one loop, one count of
 * how often the window was reached, one way to say a clean run.
 */
#define _GNU_SOURCE
#include "race.h"

#include <stdarg.h>
#include <stdio.h>

static bool bound_reached(const struct krepro_race *r)
{
	return r->rounds >= r->max_rounds || r->seconds >= r->max_seconds;
}

void krepro_race_run(struct krepro_race *r)
{
	r->rounds = 0;
	r->stopped = false;
	r->start = krepro_now();
	r->seconds = 0;
	while (!bound_reached(r)) {
		bool go_on = r->step(r, r->ctx);

		r->seconds = krepro_now() - r->start;
		if (!go_on) {
			r->stopped = true;
			break;
		}
		if (r->pause > 0 && !bound_reached(r))
			krepro_sleep(r->pause);
		r->seconds = krepro_now() - r->start;
	}
}

void krepro_race_counts(const struct krepro_race *r)
{
	krepro_info("race: %lu %s in %.1f s (bound: %lu or %.0f s)%s; %lu window hits (%s)",
		    r->rounds, r->rounds_of, r->seconds, r->max_rounds, r->max_seconds,
		    r->stopped ? ", stopped early" : "", r->hits, r->window);
}

void krepro_race_window_reached(const struct krepro_race *r)
{
	if (!r->hits)
		krepro_broken("the race window was never reached (no %s) in %lu %s / %.1f s",
			      r->window, r->rounds, r->rounds_of, r->seconds);
}

void krepro_race_pass(const struct krepro_race *r, const char *fmt, ...)
{
	char more[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(more, sizeof(more), fmt, ap);
	va_end(ap);
	if (!bound_reached(r))
		krepro_broken("the race stopped after %lu %s / %.1f s, before its bound (%lu or "
			      "%.0f s)", r->rounds, r->rounds_of, r->seconds, r->max_rounds,
			      r->max_seconds);
	krepro_race_window_reached(r);
	krepro_pass("not reproduced in %lu %s / %.1f s, %lu window hits (%s): %s", r->rounds,
		    r->rounds_of, r->seconds, r->hits, r->window, more);
}
