// SPDX-License-Identifier: GPL-2.0
/*
 * A reproducer that does what FAKE_<case> says (pass, fail, skip, broken,
 * report, crash, none; child-return, child-broken, child-crash, child-hang:
 * krepro_run_child() on such a child; poll-early, poll-never:
 * krepro_poll_until(); race-covered, race-capped, race-evidence:
 * krepro_race_run() to each end; trace, trace-cut: krepro_kmsg_report() and
 * krepro_kmsg_trace(); FAKE_SETUP_CHILD: a BROKEN child of setup), for the
 * harness unit tests. Built three times: against the test build of the
 * harness (marker and kmsg in files), against the real one, to check that the
 * real one refuses to run on the host, and against the test build again for
 * arches this machine is not (KREPRO_ARCHES, as krepro_reproducer() passes
 * it), to check the SKIP.
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "race.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Children for krepro_run_child(), by what they do. */
static void child_returns(void *arg)
{
	(void)arg;
	krepro_info("the child reports through the harness");
}

static void child_broken(void *arg)
{
	(void)arg;
	krepro_broken("the child cannot go on");
}

static void child_crashes(void *arg)
{
	(void)arg;
	abort();
}

static void child_hangs(void *arg)
{
	(void)arg;
	for (;;)
		pause();
}

/*
 * Run the child `what` names with a deadline of 0.5 s; the case's PASS line
 * says how it ended, for the test to read.
 */
static void run_child(const char *what)
{
	static const char *const ends[] = {
		[KREPRO_CHILD_EXITED] = "exited", [KREPRO_CHILD_KILLED] = "killed",
		[KREPRO_CHILD_TIMED_OUT] = "timed out", [KREPRO_CHILD_STUCK] = "stuck",
	};
	void (*fn)(void *) = !strcmp(what, "broken") ? child_broken :
			     !strcmp(what, "crash") ? child_crashes :
			     !strcmp(what, "hang") ? child_hangs : child_returns;
	struct krepro_child child;

	/* Printed once, not again by the child. */
	krepro_info("before the child");
	child = krepro_run_child(fn, NULL, 0.5);
	krepro_pass("child %s, exit code %d, signal %d, after %.2f s; %s", ends[child.end],
		    child.exit_code, child.signo, child.seconds,
		    kill(child.pid, 0) < 0 && errno == ESRCH ? "reaped" : "still there");
}

struct poll_count {
	int calls, true_from;	/* ready from that call on; 0: never */
};

static bool ready_on_call(void *arg)
{
	struct poll_count *count = arg;

	count->calls++;
	return count->true_from && count->calls >= count->true_from;
}

/* Poll with a deadline of 1 s, every 0.1 s, a condition that comes true on
 * the third call (early) or never. */
static void run_poll(const char *what)
{
	struct poll_count count = { .true_from = !strcmp(what, "early") ? 3 : 0 };
	double waited = -1;
	bool met = krepro_poll_until(ready_on_call, &count, 1.0, 0.1, &waited);

	krepro_pass("poll %s after %d calls, %.2f s", met ? "true" : "timed out", count.calls,
		    waited);
}

/* A race whose every round hits its window once; evidence on round 3. */
static bool race_round(struct krepro_race *r, void *arg)
{
	bool evidence = *(bool *)arg && r->rounds == 2;

	r->rounds++;
	r->hits++;
	return !evidence;
}

/* A race to its hits bound (covered), to a cap first, or to its evidence. */
static void run_race(const char *what)
{
	bool evidence = !strcmp(what, "evidence");
	struct krepro_race race = {
		.rounds_of = "rounds", .window = "fake hits", .max_hits = 5,
		.max_rounds = !strcmp(what, "capped") ? 4 : 100, .max_seconds = 60,
		.step = race_round, .ctx = &evidence,
	};

	krepro_race_run(&race);
	if (evidence) {
		krepro_fail("the fake race's evidence");
		return;
	}
	krepro_race_counts(&race);
	krepro_race_pass(&race, "nothing seen");
}

/* What the kernel would log: a record appended to the fake kmsg. */
static void kmsg_append(const char *rec)
{
	const char *path = getenv("FAKE_KMSG");
	int fd = path ? open(path, O_WRONLY | O_APPEND) : -1;

	if (fd < 0 || write(fd, rec, strlen(rec)) < 0)
		krepro_broken("cannot append to the fake kmsg");
	close(fd);
}

/*
 * A kernel report and its trace logged after the case opened kmsg ("cut":
 * without the trace's end), read with krepro_kmsg_report() and
 * krepro_kmsg_trace(); the PASS line says what they gave, and what kmsg has
 * after them.
 */
static void run_trace(const char *what)
{
	static const char *const recs[] = {
		"6,300,3000000,-;an ordinary message\n",
		"4,301,3000001,-;refcount_t: addition on 0; use-after-free.\n",
		"4,302,3000002,-;WARNING: CPU: 1 PID: 0 at lib/refcount.c:25 refcount_warn+0xa0\n",
		"4,303,3000003,-;  other_fn+0x10/0x20\n",
		"4,304,3000004,-;  fake_recv+0x1ec/0x250\n",
		"4,305,3000005,-;  fake_recv+0x30/0x40\n",
		"4,306,3000006,-;---[ end trace 0000000000000000 ]---\n",
		"6,307,3000007,-;after the trace\n",
	};
	bool cut = !strcmp(what, "cut");
	char report[256], frame[64], next[64] = "-";
	int kmsg = krepro_kmsg_open();
	bool ended;

	for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]) - (cut ? 2 : 0); i++)
		kmsg_append(recs[i]);
	if (!krepro_kmsg_report(kmsg, report, sizeof(report)))
		snprintf(report, sizeof(report), "none");
	ended = krepro_kmsg_trace(kmsg, "fake_recv", frame, sizeof(frame), 0.3);
	krepro_kmsg_next(kmsg, next, sizeof(next));
	close(kmsg);
	krepro_pass("report \"%s\"; frame \"%s\"; trace %s; next \"%s\"", report, frame,
		    ended ? "ended" : "not ended", next);
}

static void act(const char *name)
{
	char var[32];
	const char *what;

	snprintf(var, sizeof(var), "FAKE_%s", name);
	what = getenv(var);
	if (!what || !strcmp(what, "pass"))
		krepro_pass("%s passes", name);
	else if (!strcmp(what, "fail"))
		krepro_fail("%s read back %#x at offset %d, wrote %#x", name, 0x42, 0, 0x41);
	else if (!strcmp(what, "skip"))
		krepro_skip("%s needs something", name);
	else if (!strcmp(what, "broken"))
		krepro_broken("%s cannot set up", name);
	else if (!strcmp(what, "report")) {
		/* A KASAN report after the mark. */
		kmsg_append("3,100,2000000,-;BUG: KASAN: use-after-free in uio_unregister_device+0x168/0x190\n");
		krepro_pass("%s itself saw nothing wrong", name);
	} else if (!strcmp(what, "crash"))
		abort();
	else if (!strncmp(what, "child-", 6))
		run_child(what + 6);
	else if (!strncmp(what, "poll-", 5))
		run_poll(what + 5);
	else if (!strncmp(what, "race-", 5))
		run_race(what + 5);
	else if (!strncmp(what, "trace", 5))
		run_trace(what + 5 + (what[5] == '-'));
	/* "none": return without a verdict */
}

static void first(void) { act("first"); }
static void second(void) { act("second"); }

static void setup(void)
{
	if (getenv("FAKE_SETUP_BROKEN"))
		krepro_broken("setup fails on purpose");
	if (getenv("FAKE_SETUP_CHILD"))
		krepro_info("setup's child: exit code %d",
			    krepro_run_child(child_broken, NULL, 5).exit_code);
}

static void cleanup(void)
{
	krepro_info("cleanup ran");
}

static const char *const kconfigs[] = { "CONFIG_KREPRO_FAKE_OPTION", NULL };

/* Strings that need JSON escaping in --describe: backslashes, quotes, a tab,
 * a newline. */
static const struct krepro_signature signatures[] = {
	{ "KASAN", "^KASAN: use-after-free in uio_unregister_device$", "uio_.*",
	  "CONFIG_KASAN" },
	{ "BUG", "^kernel BUG at lib/fake\\.c:[0-9]+ \"quoted\"$", NULL,
	  " CONFIG_DEBUG_LIST  CONFIG_BUG_ON_DATA_CORRUPTION=y" },
	{ "HANG", NULL, NULL, NULL },
	{ NULL },
};

static const struct krepro_case cases[] = {
	{ "first", first },
	{ "second", second },
	{ NULL, NULL },
};

static const struct krepro_test test = {
	.name = "fake-repro",
	.summary = "a test double for the harness",
	.fix_commit = "0123456789ab (\"fake: fix\")",
	.bug_commit = "ba9876543210 (\"fake: break\")",
	.seed = "none",
	.timeout = 10,
	.cmdline = "fake.option=1",
	.not_in_matrix = "a test double,\tnot a bug\n(kept out)",
	.signatures = signatures,
	.own_evidence = true,
	.own_detectors = "CONFIG_KREPRO_FAKE_DETECTOR",
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

/* Only when asked: the config check SKIP path. */
static const struct krepro_test test_kconfig = {
	.name = "fake-repro",
	.summary = "a test double for the harness",
	.fix_commit = "0123456789ab (\"fake: fix\")",
	.seed = "none",
	.needs_kconfigs = kconfigs,
	.own_evidence = true,
	.timeout = 10,
	.cases = cases,
};

int main(int argc, char **argv)
{
	return krepro_main(getenv("FAKE_NEEDS_KCONFIG") ? &test_kconfig : &test, KREPRO_ARCHES,
			   argc, argv);
}
