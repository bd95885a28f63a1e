// SPDX-License-Identifier: GPL-2.0
/*
 * arm-kprobe-fortify: on 32-bit ARM with CONFIG_FORTIFY_SOURCE, registering a
 * kprobe that the optimizer accepts copies the optprobe template with
 * memcpy() from a symbol declared as one kprobe_opcode_t: fortify sees a
 * four-byte object, reports "detected buffer overflow in memcpy" and BUGs
 * inside the registering write (what `perf probe -a <function>` hit). Upstream
 * fix 9fa2e7af3d53. See README.md.
 *
 * Both ways a user registers such a probe are tried: a kprobe_events line in
 * tracefs (perf probe's way) and the perf kprobe PMU (perf_event_open with
 * the PMU's dynamic type). Each must register, be optimized ([OPTIMIZED] in
 * debugfs kprobes/list: otherwise the run cannot tell) and fire.
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRACEFS		"/sys/kernel/tracing"
#define KPROBE_EVENTS	TRACEFS "/kprobe_events"
#define KPROBE_PROFILE	TRACEFS "/kprobe_profile"
#define EVENT_ENABLE	TRACEFS "/events/krepro/kp/enable"
#define KPROBE_LIST	"/sys/kernel/debug/kprobes/list"
#define KPROBE_PMU_TYPE	"/sys/bus/event_source/devices/kprobe/type"

/*
 * Functions whose first instruction the ARM optimizer accepts (checked at run
 * time through kprobes/list), a different one per interface: a second probe
 * on the same address would join (or reuse) the first one's optimized probe
 * instead of preparing a new one, and never copy the template.
 */
#define EVENTS_FUNC	"kernel_clone"	/* run by fork() */
#define PMU_FUNC	"vfs_read"	/* run by read() */
/* A registration returns at once or never: the buggy kernel oopses in it. */
#define REGISTER_SECONDS 10
#define OPTIMIZE_SECONDS 5
/* How often kprobes/list is read while waiting for the optimizer. */
#define LOOK_SECONDS	0.1

/*
 * What the cases learn that outlives them (each runs in its own process):
 * set by a case whose registration oopsed or never returned. The oops kills
 * the writer with kprobe_mutex held, so any later registration (and any
 * kprobe_events write) would block forever: later cases and cleanup then
 * leave probes alone.
 */
struct run_state {
	bool wedged;
};

static struct run_state *state;	/* shared memory, from setup */

/*
 * What the kernel log says of a registering child that died or hung: the
 * fortify report ("detected buffer overflow in memcpy", 6.12's "memcpy:
 * detected buffer overflow: ...") and an oops of that very process ("PID:
 * <pid>" in its CPU line), so the report is the registration's own.
 */
struct fortify_seen {
	char report[256];	/* the fortify line, "" when none */
	char oops[256];		/* the oops's line naming the child's pid, "" when none */
};

static void fortify_in_kmsg(int kmsg, pid_t pid, struct fortify_seen *seen)
{
	char msg[1024], who[32];

	snprintf(who, sizeof(who), " PID: %d ", (int)pid);
	while (kmsg >= 0 && krepro_kmsg_next(kmsg, msg, sizeof(msg))) {
		if (!seen->report[0] && (strstr(msg, "detected buffer overflow in memcpy") ||
					 strstr(msg, "memcpy: detected buffer overflow")))
			snprintf(seen->report, sizeof(seen->report), "%.200s", msg);
		else if (seen->report[0] && !seen->oops[0] && strstr(msg, who))
			snprintf(seen->oops, sizeof(seen->oops), "%.200s", msg);
	}
}

/*
 * Run the registration fn in a child and wait up to REGISTER_SECONDS: true
 * when it registered. A child killed or not returning leaves the kernel
 * wedged (kprobe_mutex may be held) and the case FAILs only when the kernel
 * log shows the cause first-hand: the fortify report, then an oops of that
 * child. Killed or stuck without it is BROKEN: another fault, not this bug
 * (the harness's scan and the host still report any kernel report: OTHER).
 */
static bool register_in_child(const char *what, void (*fn)(void *arg))
{
	int kmsg = krepro_kmsg_open();
	struct krepro_child child = krepro_run_child(fn, NULL, REGISTER_SECONDS);
	struct fortify_seen seen = { "", "" };
	char how[128];

	if (child.end == KREPRO_CHILD_EXITED) {
		if (kmsg >= 0)
			close(kmsg);
		/* It said why (BROKEN) in its own line. */
		if (child.exit_code != KREPRO_PASS)
			krepro_broken("%s: registering failed (above)", what);
		return true;
	}
	state->wedged = true;
	if (child.end == KREPRO_CHILD_KILLED)
		snprintf(how, sizeof(how), "was killed by signal %d (%s)", child.signo,
			 strsignal(child.signo));
	else
		snprintf(how, sizeof(how), "did not return in %d s", REGISTER_SECONDS);
	fortify_in_kmsg(kmsg, child.pid, &seen);
	if (kmsg < 0)
		krepro_broken("%s: the registering process %s, and /dev/kmsg is unreadable: "
			      "the cause is not shown", what, how);
	close(kmsg);
	if (!seen.report[0] || !seen.oops[0])
		krepro_broken("%s: the registering process (pid %d) %s, but the kernel log has %s: "
			      "not shown to be this bug", what, (int)child.pid, how,
			      seen.report[0] ? "no oops of that process after the fortify report" :
			      "no fortify report");
	krepro_fail("%s: the registering process (pid %d) %s: fortify stopped the "
		    "registration's memcpy: \"%s\", then \"%s\"", what, (int)child.pid, how,
		    seen.report, seen.oops);
	return false;
}

struct probe_listing {
	char want[128];		/* " func+0x0 " */
	char seen[256];		/* its last kprobes/list line */
};

/* Does kprobes/list show the probe as [OPTIMIZED]? */
static bool listed_optimized(void *arg)
{
	struct probe_listing *listing = arg;
	char line[256];
	bool optimized = false;
	FILE *f = fopen(KPROBE_LIST, "re");

	if (!f)
		krepro_broken("open " KPROBE_LIST ": %s", strerror(errno));
	while (!optimized && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strstr(line, listing->want))
			continue;
		snprintf(listing->seen, sizeof(listing->seen), "%s", line);
		optimized = strstr(line, "[OPTIMIZED]") != NULL;
	}
	fclose(f);
	return optimized;
}

/*
 * Wait until kprobes/list shows `func`+0x0 as [OPTIMIZED]; BROKEN if it is not
 * (an unoptimized probe never copies the template: the run proves nothing).
 */
static void expect_optimized(const char *func)
{
	struct probe_listing listing = { .seen = "" };

	snprintf(listing.want, sizeof(listing.want), " %s+0x0 ", func);
	if (krepro_poll_until(listed_optimized, &listing, OPTIMIZE_SECONDS, LOOK_SECONDS, NULL)) {
		krepro_info("kprobes/list: %s", listing.seen);
		return;
	}
	if (listing.seen[0])
		krepro_broken("%s was probed but not optimized in %d s (kprobes/list: %s): "
			      "the template copy under test did not run", func,
			      OPTIMIZE_SECONDS, listing.seen);
	krepro_broken("%s is not in " KPROBE_LIST " after registering it", func);
}

/* Read from a file: runs vfs_read() in this task. */
static void do_read(void)
{
	char buf[64];
	int fd = SAFE(open("/proc/self/stat", O_RDONLY | O_CLOEXEC));

	SAFE(read(fd, buf, sizeof(buf)));
	close(fd);
}

/* Fork and reap a child: runs kernel_clone() in this task. */
static void do_fork(void)
{
	pid_t pid = SAFE(fork());

	if (pid == 0)
		_exit(0);
	SAFE(waitpid(pid, NULL, 0));
}

/* In the registering child: perf probe's write. */
static void add_kprobe_event(void *unused)
{
	(void)unused;
	if (krepro_try_write_file(KPROBE_EVENTS, "p:krepro/kp " EVENTS_FUNC "\n") < 0)
		krepro_broken("write 'p:krepro/kp " EVENTS_FUNC "' to " KPROBE_EVENTS ": %s",
			      strerror(errno));
}

/* Hits of krepro/kp in kprobe_profile: "  kp   HITS   MISSES" (6.1 prints the
 * event name without its group). */
static unsigned long kprobe_hits(void)
{
	char line[256], name[128];
	unsigned long hits, misses;
	FILE *f = fopen(KPROBE_PROFILE, "re");

	if (!f)
		krepro_broken("open " KPROBE_PROFILE ": %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %lu %lu", name, &hits, &misses) == 3 &&
		    !strcmp(name, "kp")) {
			fclose(f);
			return hits;
		}
	}
	fclose(f);
	krepro_broken("krepro/kp is not in " KPROBE_PROFILE);
}

/* perf probe's way: a kprobe_events line in tracefs. */
static void run_kprobe_events(void)
{
	unsigned long before, after;

	if (state->wedged)
		krepro_skip("not tried: an earlier registration died or hung "
			    "(kprobe_mutex may be held)");
	if (!register_in_child("kprobe_events 'p:krepro/kp " EVENTS_FUNC "'",
			       add_kprobe_event))
		return;
	/* A trace_kprobe is registered disabled (its template already copied:
	 * register_kprobe() prepares the optimized probe either way) and is
	 * optimized once enabled. */
	krepro_write_file(EVENT_ENABLE, "1");
	expect_optimized(EVENTS_FUNC);
	before = kprobe_hits();
	do_fork();
	after = kprobe_hits();
	krepro_write_file(EVENT_ENABLE, "0");
	if (after > before)
		krepro_pass("optimized kprobe on " EVENTS_FUNC " registered through "
			    "kprobe_events fired %lu time(s) for one fork", after - before);
	else	/* registered and optimized: the template copy is behind it */
		krepro_broken("optimized kprobe on " EVENTS_FUNC " did not fire for a fork "
			      "(hits %lu before, %lu after): not this bug's symptom",
			      before, after);
}

static int pmu_type = -1;
static int pmu_fd = -1;

static int open_kprobe_pmu(struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = (uint32_t)pmu_type;
	attr->config = 0;			/* bit 0 (retprobe) clear: a kprobe */
	attr->kprobe_func = (uint64_t)(uintptr_t)PMU_FUNC;	/* config1 */
	attr->probe_offset = 0;			/* config2 */
	attr->disabled = 1;
	attr->exclude_hv = 1;
	/* This task on any CPU: it counts what this process runs. */
	return (int)syscall(SYS_perf_event_open, attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* In the registering child: the probe is registered as its event opens. */
static void open_pmu_probe(void *unused)
{
	struct perf_event_attr attr;

	(void)unused;
	if (open_kprobe_pmu(&attr) < 0)
		krepro_broken("perf_event_open(kprobe PMU type %d, %s): %s", pmu_type,
			      PMU_FUNC, strerror(errno));
	/* Registered; the parent opens its own event: this one goes with us. */
}

/* The perf kprobe PMU: the probe lives as long as its perf event. */
static void run_perf_kprobe_pmu(void)
{
	struct perf_event_attr attr;
	char buf[32];
	uint64_t count = 0;

	if (state->wedged)
		krepro_skip("not tried: an earlier registration died or hung "
			    "(kprobe_mutex may be held)");
	if (krepro_read_line(KPROBE_PMU_TYPE, buf, sizeof(buf)) < 0)
		krepro_broken(KPROBE_PMU_TYPE ": %s", strerror(errno));
	pmu_type = atoi(buf);
	/* First in a child, which the buggy kernel kills. */
	if (!register_in_child("perf_event_open(kprobe PMU, " PMU_FUNC ")", open_pmu_probe))
		return;
	pmu_fd = open_kprobe_pmu(&attr);
	if (pmu_fd < 0)
		krepro_broken("perf_event_open(kprobe PMU, " PMU_FUNC "): %s", strerror(errno));
	expect_optimized(PMU_FUNC);
	SAFE(ioctl(pmu_fd, PERF_EVENT_IOC_RESET, 0));
	SAFE(ioctl(pmu_fd, PERF_EVENT_IOC_ENABLE, 0));
	do_read();
	SAFE(ioctl(pmu_fd, PERF_EVENT_IOC_DISABLE, 0));
	if (read(pmu_fd, &count, sizeof(count)) != sizeof(count))
		krepro_broken("read the kprobe PMU counter: %s", strerror(errno));
	close(pmu_fd);
	if (count > 0)
		krepro_pass("optimized kprobe on " PMU_FUNC " from the perf kprobe PMU "
			    "counted %llu hit(s) for one read", (unsigned long long)count);
	else	/* registered and optimized: the template copy is behind it */
		krepro_broken("optimized kprobe on " PMU_FUNC " from the perf kprobe PMU counted "
			      "nothing for a read: not this bug's symptom");
}

static void setup(void)
{
	struct stat st;

	state = krepro_shared(sizeof(*state));
	if (stat(KPROBE_EVENTS, &st) < 0)
		krepro_broken(KPROBE_EVENTS ": %s (tracefs not mounted?)", strerror(errno));
	if (stat(KPROBE_LIST, &st) < 0)
		krepro_broken(KPROBE_LIST ": %s (debugfs not mounted?)", strerror(errno));
}

/* Never touch kprobe_events after an oops: the write would block forever. */
static void cleanup(void)
{
	int fd;

	if (state && state->wedged) {
		krepro_info("probes left in place: a registration died or hung "
			    "(kprobe_mutex may be held)");
		return;
	}
	/* An enabled event cannot be removed (EBUSY). */
	fd = open(EVENT_ENABLE, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "0", 1) < 0)
			krepro_info("disable krepro/kp: %s", strerror(errno));
		close(fd);
	}
	fd = open(KPROBE_EVENTS, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "-:krepro/kp\n", 12) < 0 && errno != ENOENT)
			krepro_info("remove krepro/kp: %s", strerror(errno));
		close(fd);
	}
}

static const char *const kconfigs[] = { "CONFIG_KPROBES", "CONFIG_OPTPROBES",
					"CONFIG_FORTIFY_SOURCE", "CONFIG_KPROBE_EVENTS",
					"CONFIG_PERF_EVENTS", NULL };

static const struct krepro_case cases[] = {
	{ "kprobe_events", run_kprobe_events },
	{ "perf_kprobe_pmu", run_perf_kprobe_pmu },
	{ NULL, NULL },
};

/*
 * The bug's kernel report (README, Evidence): fortify_panic()'s "detected
 * buffer overflow in memcpy", its BUG() in lib/string_helpers.c and the Oops,
 * one report to the host, with fortify_panic in the trace. Either header
 * names it. The kprobe optimizer is not required in the trace: the backtrace
 * stops at fortify_panic, whose return address lands in the next function.
 * Both are fortify's: without FORTIFY_SOURCE the template copy is checked by
 * nothing (and is correct), so there is no report at all.
 */
static const struct krepro_signature signatures[] = {
	{ "FORTIFY", "^detected buffer overflow in memcpy$", "fortify_panic",
	  "CONFIG_FORTIFY_SOURCE" },
	/* 6.12's fortify BUGs in __fortify_panic(), after __fortify_report()'s
	 * WARNING "memcpy: detected buffer overflow: N byte read of buffer
	 * size 4". */
	{ "BUG", "^kernel BUG at lib/string_helpers\\.c:[0-9]+$", "(__)?fortify_panic",
	  "CONFIG_FORTIFY_SOURCE" },
	{ NULL },
};

static const struct krepro_test test = {
	.name = "arm-kprobe-fortify",
	.summary = "32-bit ARM optprobe template memcpy trips FORTIFY_SOURCE: kernel BUG "
		   "on kprobe registration",
	.fix_commit = "9fa2e7af3d53 (\"ARM: 9019/1: kprobes: Avoid fortify_panic() when "
		      "copying optprobe template\")",
	.bug_commit = "e46daee53bb5 (\"ARM: 8806/1: kprobes: Fix false positive with "
		      "FORTIFY_SOURCE\")",
	.seed = "008-patch-arm-9019-1-kprobes-avoid-fortify-panic-when-copying-optp.patch",
	.needs_kconfigs = kconfigs,
	.signatures = signatures,
	/* The registering process killed (or stuck) with fortify's report and
	 * its oops read first-hand in kmsg: without FORTIFY_SOURCE there is none. */
	.own_evidence = true,
	.own_detectors = "CONFIG_FORTIFY_SOURCE",
	.min_cpus = 1,
	.timeout = 40,
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
