// SPDX-License-Identifier: GPL-2.0
/*
 * A race bounded by its window hits (race.h): one loop, one count of how
 * often the window was reached, one way to say a clean run.
 */
#define _GNU_SOURCE
#include "race.h"

#include <stdarg.h>
#include <stdio.h>

static bool covered(const struct krepro_race *r)
{
	return r->max_hits && r->hits >= r->max_hits;
}

static bool capped(const struct krepro_race *r)
{
	return r->rounds >= r->max_rounds || r->seconds >= r->max_seconds;
}

static bool bound_reached(const struct krepro_race *r)
{
	return covered(r) || capped(r);
}

void krepro_race_run(struct krepro_race *r)
{
	r->rounds = 0;
	r->hits = 0;
	r->stopped = false;
	r->start = krepro_now();
	r->seconds = 0;
	while (!bound_reached(r)) {
		bool go_on = r->step(r, r->ctx);

		r->seconds = krepro_now() - r->start;
		if (!go_on) {
			r->stopped = true;
			krepro_race_counts(r);
			break;
		}
		if (r->pause > 0 && !bound_reached(r))
			krepro_sleep(r->pause);
		r->seconds = krepro_now() - r->start;
	}
}

/* "120 window hits; caps 20 error recoveries / 60 s", or "8 or 60 s". */
static void bound_text(const struct krepro_race *r, char *buf, size_t size)
{
	if (r->max_hits)
		snprintf(buf, size, "%lu window hits; caps %lu %s / %.0f s", r->max_hits,
			 r->max_rounds, r->rounds_of, r->max_seconds);
	else
		snprintf(buf, size, "%lu or %.0f s", r->max_rounds, r->max_seconds);
}

void krepro_race_counts(const struct krepro_race *r)
{
	char bound[160];

	bound_text(r, bound, sizeof(bound));
	krepro_info("race: %lu %s in %.1f s (bound: %s)%s; %lu window hits (%s)", r->rounds,
		    r->rounds_of, r->seconds, bound, r->stopped ? ", stopped early" : "", r->hits,
		    r->window);
}

void krepro_race_window_reached(const struct krepro_race *r)
{
	if (!r->hits)
		krepro_broken("the race window was never reached (no %s) in %lu %s / %.1f s",
			      r->window, r->rounds, r->rounds_of, r->seconds);
}

void krepro_race_pass(const struct krepro_race *r, const char *fmt, ...)
{
	char more[1024], bound[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(more, sizeof(more), fmt, ap);
	va_end(ap);
	bound_text(r, bound, sizeof(bound));
	if (r->stopped || (r->max_hits ? !covered(r) : !capped(r)))
		krepro_broken("the race stopped after %lu %s / %.1f s, %lu window hits, before its "
			      "bound (%s)", r->rounds, r->rounds_of, r->seconds, r->hits, bound);
	krepro_race_window_reached(r);
	krepro_pass("not reproduced in %lu %s / %.1f s, %lu window hits (%s): %s", r->rounds,
		    r->rounds_of, r->seconds, r->hits, r->window, more);
}
