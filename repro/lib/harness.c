// SPDX-License-Identifier: GPL-2.0
/*
 * The krepro harness: owns main(). See krepro.h and docs/design-notes.md.
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "kernel_reports.h"

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define GUEST_MARKER "krepro.guest=1"
/* Only the unit tests' build of the harness points these elsewhere. */
#ifndef KREPRO_CMDLINE_PATH
#define KREPRO_CMDLINE_PATH "/proc/cmdline"
#endif
#ifndef KREPRO_KMSG_PATH
#define KREPRO_KMSG_PATH "/dev/kmsg"
#endif
#ifndef KREPRO_KCONFIG_PATH
#define KREPRO_KCONFIG_PATH "/proc/config.gz"
#endif
#ifndef KREPRO_TAINT_PATH
#define KREPRO_TAINT_PATH "/proc/sys/kernel/tainted"
#endif
/* Taint flags that mean the kernel complained: B (bad page, KASAN), D (oops),
 * W (warning), L (soft lockup). */
#define TAINT_MASK ((1u << 5) | (1u << 7) | (1u << 9) | (1u << 14))
#define MAX_REPORTS 8

static const struct krepro_test *cur_test;
static const char *cur_case = "setup";
static int case_result = -1;	/* -1: no verdict yet */
static bool in_test_process;
static double run_start;	/* krepro_now() when krepro_main() began */

double krepro_elapsed(void)
{
	return krepro_now() - run_start;
}

static void vdiag(const char *tag, const char *fmt, va_list ap)
{
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* One "# " line per line of the message: KTAP diagnostics. */
	for (char *line = msg, *nl; line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		printf("# %s%s%s\n", tag, tag[0] ? " " : "", line);
	}
	fflush(stdout);
}

/* "<case>: <VERDICT>: [where ]message" lines: the host quotes them as evidence. */
static void vverdict(const char *verdict, const char *where, const char *fmt, va_list ap)
{
	char tag[400];

	snprintf(tag, sizeof(tag), "%s: %s:%s%s", cur_case, verdict, where[0] ? " " : "", where);
	vdiag(tag, fmt, ap);
}

void krepro_say(enum krepro_said said, const char *fmt, ...)
{
	/* FAIL is the case's own evidence, REPORT a kernel report's. */
	static const char *const verdict[] = {
		[KREPRO_SAID_PASS] = "PASS", [KREPRO_SAID_FAIL] = "FAIL",
		[KREPRO_SAID_REPORT] = "REPORT",
	};
	va_list ap;

	va_start(ap, fmt);
	if (said == KREPRO_SAID_INFO)
		vdiag("", fmt, ap);
	else
		vverdict(verdict[said], "", fmt, ap);
	va_end(ap);
	if (said == KREPRO_SAID_PASS && case_result != KREPRO_FAIL)
		case_result = KREPRO_PASS;
	else if (said == KREPRO_SAID_FAIL || said == KREPRO_SAID_REPORT)
		case_result = KREPRO_FAIL;
}

void krepro_broken_at(const char *file, int line, const char *fmt, ...)
{
	char where[300];
	va_list ap;

	snprintf(where, sizeof(where), "%s:%d:", file, line);
	va_start(ap, fmt);
	vverdict("BROKEN", where, fmt, ap);
	va_end(ap);
	/* A setup that stopped halfway is still cleaned up (cleanup copes). */
	if (in_test_process && !strcmp(cur_case, "setup") && cur_test->cleanup) {
		cur_case = "cleanup";
		cur_test->cleanup();
	}
	exit(KREPRO_BROKEN);
}

void krepro_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vverdict("SKIP", "", fmt, ap);
	va_end(ap);
	exit(KREPRO_SKIP);
}

long krepro_safe_at(long ret, const char *expr, const char *file, int line)
{
	if (ret == -1)
		krepro_broken_at(file, line, "%s: %s", expr, strerror(errno));
	return ret;
}

void *krepro_safe_ptr_at(void *ret, const char *expr, const char *file, int line)
{
	if (!ret || ret == (void *)-1)
		krepro_broken_at(file, line, "%s: %s", expr, strerror(errno));
	return ret;
}

/* Is `token` one of the kernel command line's words? */
static bool cmdline_has(const char *token)
{
	char cmdline[4096];
	size_t n;
	FILE *f = fopen(KREPRO_CMDLINE_PATH, "r");

	if (!f)
		return false;
	n = fread(cmdline, 1, sizeof(cmdline) - 1, f);
	fclose(f);
	cmdline[n] = '\0';
	for (char *tok = strtok(cmdline, " \n"); tok; tok = strtok(NULL, " \n"))
		if (!strcmp(tok, token))
			return true;
	return false;
}

static void kmsg_write(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void kmsg_write(const char *fmt, ...)
{
	char msg[512];
	int fd, n;
	va_list ap;

	/* Level 5 (notice): shown with the loglevel=7 the host boots with. */
	n = snprintf(msg, sizeof(msg), "<5>");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	fd = open(KREPRO_KMSG_PATH, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, msg, strlen(msg)) < 0)
		krepro_info("cannot write to /dev/kmsg: %s", strerror(errno));
	close(fd);
}

/* Unmet kernel options, from /proc/config.gz. Returns how many are missing;
 * -1 when the kernel does not expose its config. */
static int missing_kconfigs(const char *const *needs, char *why, size_t whysize)
{
	char line[512];
	int missing = 0;
	gzFile gz;

	why[0] = '\0';
	if (!needs || !needs[0])
		return 0;
	gz = gzopen(KREPRO_KCONFIG_PATH, "rb");
	if (!gz) {
		/* A distribution kernel without IKCONFIG: its config-<release>,
		 * where LTP's tst_kconfig also looks (gzopen reads plain text). */
		struct utsname u;
		char path[sizeof(u.release) + 16];

		if (uname(&u))
			return -1;
		snprintf(path, sizeof(path), "/boot/config-%s", u.release);
		gz = gzopen(path, "rb");
		if (!gz)
			return -1;
	}
	for (const char *const *need = needs; *need; need++) {
		bool found = false, has_value = strchr(*need, '=') != NULL;
		size_t len = strlen(*need);

		gzrewind(gz);
		while (gzgets(gz, line, sizeof(line))) {
			line[strcspn(line, "\n")] = '\0';
			if (has_value ? !strcmp(line, *need) :
			    (!strncmp(line, *need, len) && line[len] == '=' &&
			     (line[len + 1] == 'y' || line[len + 1] == 'm'))) {
				found = true;
				break;
			}
		}
		if (!found) {
			size_t used = strlen(why);

			snprintf(why + used, whysize - used, "%s%s", missing ? ", " : "", *need);
			missing++;
		}
	}
	gzclose(gz);
	return missing;
}

unsigned long krepro_taint(void)
{
	unsigned long taint = 0;
	FILE *f = fopen(KREPRO_TAINT_PATH, "re");

	if (f) {
		if (fscanf(f, "%lu", &taint) != 1)
			taint = 0;
		fclose(f);
	}
	return taint;
}

/* Does a kernel message (without its kmsg prefix) start a kernel report? */
bool krepro_kernel_report(const char *msg)
{
	static regex_t re[sizeof(kernel_report_patterns) / sizeof(kernel_report_patterns[0])];
	static bool compiled;
	const size_t nre = sizeof(re) / sizeof(re[0]);

	if (!compiled) {
		for (size_t i = 0; i < nre; i++) {
			char anchored[600];

			snprintf(anchored, sizeof(anchored), "^(%s)", kernel_report_patterns[i]);
			if (regcomp(&re[i], anchored, REG_EXTENDED | REG_NOSUB))
				krepro_broken("bad report pattern %s", kernel_report_patterns[i]);
		}
		compiled = true;
	}
	for (size_t i = 0; i < nre; i++)
		if (regexec(&re[i], msg, 0, NULL, 0) == 0)
			return true;
	return false;
}

int krepro_kmsg_open(void)
{
	int fd = open(KREPRO_KMSG_PATH, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

int krepro_kmsg_next(int fd, char *msg, size_t size)
{
	char rec[8192], *text, *end;
	ssize_t n;

	for (;;) {
		/* /dev/kmsg gives one record per read(), EAGAIN at the end and
		 * EPIPE if records were overwritten before we read them. */
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE) {
			krepro_info("kmsg overran: some kernel messages were lost");
			continue;
		}
		if (n <= 0)
			return 0;
		rec[n] = '\0';
		/* "pri,seq,ts,flags;message\n" then " KEY=value\n" lines. */
		end = strchr(rec, '\n');
		end = end ? end + 1 : rec + n;
		while (*end == ' ' && strchr(end, '\n'))
			end = strchr(end, '\n') + 1;
		/* A plain file (the unit tests' kmsg) gives many records a read:
		 * step back to the end of the first. */
		if (end < rec + n)
			lseek(fd, end - (rec + n), SEEK_CUR);
		text = strchr(rec, ';');
		if (!text || text > end)
			continue;
		text++;
		text[strcspn(text, "\n")] = '\0';
		snprintf(msg, size, "%s", text);
		return 1;
	}
}

bool krepro_kmsg_report(int fd, char *msg, size_t size)
{
	while (krepro_kmsg_next(fd, msg, size))
		if (krepro_kernel_report(msg))
			return true;
	return false;
}

struct trace_tail {
	int fd;
	const char *frame;
	char *found;
	size_t size;
};

/* Read the report's trace on as far as kmsg has it, quoting its lines that
 * matter: true at the end of the trace. */
static bool trace_ended(void *arg)
{
	struct trace_tail *tail = arg;
	char msg[1024];

	while (krepro_kmsg_next(tail->fd, msg, sizeof(msg))) {
		if (!strncmp(msg, "WARNING:", 8) || strstr(msg, tail->frame))
			krepro_info("kmsg: %s", msg);
		if (!tail->found[0] && strstr(msg, tail->frame))
			snprintf(tail->found, tail->size, "%s", msg + strspn(msg, " "));
		if (strstr(msg, "---[ end trace"))
			return true;
	}
	return false;
}

bool krepro_kmsg_trace(int fd, const char *frame, char *found, size_t size, double timeout)
{
	struct trace_tail tail = { .fd = fd, .frame = frame, .found = found, .size = size };

	found[0] = '\0';
	return krepro_poll_until(trace_ended, &tail, timeout, 0.01, NULL);
}

/* Kernel reports logged since `fd` was positioned at the mark. */
static int scan_kmsg(int fd)
{
	char msg[1024];
	int found = 0;

	while (krepro_kmsg_report(fd, msg, sizeof(msg))) {
		if (found < MAX_REPORTS)
			krepro_info("kernel report after the mark: %s", msg);
		found++;
	}
	return found;
}

static const char *verdict_name(int v)
{
	switch (v) {
	case KREPRO_PASS: return "PASS";
	case KREPRO_FAIL: return "FAIL";
	case KREPRO_SKIP: return "SKIP";
	default: return "BROKEN";
	}
}

/* fork(), stdout flushed first (nothing buffered is written twice); on
 * error it says so and returns -1. */
static pid_t fork_flushed(void)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		krepro_info("fork: %s", strerror(errno));
	return pid;
}

static int run_case(const struct krepro_case *c, unsigned int seconds_left)
{
	int status;
	pid_t pid = fork_flushed();

	if (pid < 0)
		return KREPRO_BROKEN;
	if (pid == 0) {
		cur_case = c->name;
		case_result = -1;
		alarm(seconds_left ? seconds_left : 1);
		c->run();
		if (case_result < 0)
			krepro_broken("case ended without a verdict");
		exit(case_result);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return KREPRO_BROKEN;
	if (WIFEXITED(status)) {
		int code = WEXITSTATUS(status);

		if (code == KREPRO_PASS || code == KREPRO_FAIL || code == KREPRO_SKIP)
			return code;
		if (code != KREPRO_BROKEN)
			krepro_info("%s: BROKEN: case exited with %d", c->name, code);
		return KREPRO_BROKEN;
	}
	if (WTERMSIG(status) == SIGALRM)
		krepro_info("%s: BROKEN: case still running at the time limit", c->name);
	else
		krepro_info("%s: BROKEN: case killed by signal %d (%s)", c->name,
			    WTERMSIG(status), strsignal(WTERMSIG(status)));
	return KREPRO_BROKEN;
}

/* Has the child pid ended? Looked at without reaping it. */
static bool child_ended(void *pid)
{
	siginfo_t info = { 0 };

	if (waitid(P_PID, (id_t)*(pid_t *)pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno != EINTR;	/* not ours to wait for: waitpid() says why */
	return info.si_pid != 0;
}

struct krepro_child krepro_run_child(void (*fn)(void *arg), void *arg, double timeout)
{
	/* How often the parent looks, and how long SIGKILL gets to end it. */
	const double look = 0.01, kill_grace = 1.0;
	struct krepro_child child = { .end = KREPRO_CHILD_EXITED };
	bool killed = false;
	double start;
	int status;

	/* Every stream: what is buffered is written once, not again at the
	 * child's exit(). */
	fflush(NULL);
	start = krepro_now();
	child.pid = fork();
	if (child.pid < 0)
		krepro_broken("fork: %s", strerror(errno));
	if (child.pid == 0) {
		/* Its verdict is its own, and a BROKEN here ends only the
		 * child: setup's cleanup is not its to run. */
		in_test_process = false;
		case_result = -1;
		fn(arg);
		exit(case_result < 0 ? KREPRO_PASS : case_result);
	}
	if (!krepro_poll_until(child_ended, &child.pid, timeout, look, NULL)) {
		kill(child.pid, SIGKILL);
		killed = true;
		if (!krepro_poll_until(child_ended, &child.pid, kill_grace, look, NULL)) {
			child.end = KREPRO_CHILD_STUCK;
			child.seconds = krepro_now() - start;
			return child;
		}
	}
	while (waitpid(child.pid, &status, 0) < 0)
		if (errno != EINTR)
			krepro_broken("waitpid %d: %s", (int)child.pid, strerror(errno));
	child.seconds = krepro_now() - start;
	if (WIFEXITED(status)) {
		/* It may have ended by itself just as the deadline came. */
		child.exit_code = WEXITSTATUS(status);
	} else if (killed && WTERMSIG(status) == SIGKILL) {
		child.end = KREPRO_CHILD_TIMED_OUT;
	} else {
		child.end = KREPRO_CHILD_KILLED;
		child.signo = WTERMSIG(status);
	}
	return child;
}

/* The test points' counts, kept where the scan after the cases adds its own. */
struct totals {
	unsigned int pass, fail, skip, broken;
};

static void count(struct totals *tot, int verdict)
{
	switch (verdict) {
	case KREPRO_PASS: tot->pass++; break;
	case KREPRO_FAIL: tot->fail++; break;
	case KREPRO_SKIP: tot->skip++; break;
	default: tot->broken++; break;
	}
}

/* One KTAP test point; why (may be NULL) follows the directive. */
static void test_point(int n, const char *name, int verdict, const char *why)
{
	if (verdict == KREPRO_PASS)
		printf("ok %d %s\n", n, name);
	else
		printf("%s %d %s # %s%s%s\n", verdict == KREPRO_SKIP ? "ok" : "not ok", n, name,
		       verdict_name(verdict), why ? " " : "", why ? why : "");
}

/* Setup, the cases and cleanup; the counts go to tot (shared with the
 * parent, which prints them after its scan). */
static int run_test(const struct krepro_test *t, int ncases, struct totals *tot)
{
	int result;

	in_test_process = true;
	alarm(t->timeout ? t->timeout : KREPRO_DEFAULT_TIMEOUT);
	if (t->setup) {
		cur_case = "setup";
		t->setup();	/* krepro_broken() here runs cleanup and exits */
	}
	for (int i = 0; i < ncases; i++) {
		double left = (t->timeout ? t->timeout : KREPRO_DEFAULT_TIMEOUT) - krepro_elapsed();

		kmsg_write("krepro: %s: case %s\n", t->name, t->cases[i].name);
		result = run_case(&t->cases[i], left > 1 ? (unsigned int)left : 1);
		test_point(i + 1, t->cases[i].name, result, NULL);
		count(tot, result);
	}
	if (t->cleanup) {
		cur_case = "cleanup";
		t->cleanup();
	}
	/* Strictest first: a skipped case makes the run SKIP, never PASS. */
	if (tot->fail)
		return KREPRO_FAIL;
	if (tot->broken)
		return KREPRO_BROKEN;
	if (tot->skip)
		return KREPRO_SKIP;
	return KREPRO_PASS;
}

/* This machine's krepro arch name ("armv7l" is "arm"), or NULL. */
static const char *machine_arch(void)
{
	static struct utsname u;

	if (uname(&u) < 0)
		return NULL;
	if (!strcmp(u.machine, "x86_64"))
		return "x86_64";
	if (!strncmp(u.machine, "arm", 3))
		return "arm";
	return u.machine;
}

/* Is arch one of the space-separated words of list? */
static bool runs_on(const char *list, const char *arch)
{
	size_t len = arch ? strlen(arch) : 0;

	for (const char *p = list; arch && (p = strstr(p, arch)); p += len)
		if ((p == list || p[-1] == ' ') && (p[len] == '\0' || p[len] == ' '))
			return true;
	return false;
}

/* --- --describe: the declaration as one JSON object for the host --- */

/* A JSON string: quotes, backslashes (the signature regexes have them) and
 * control characters escaped; other bytes pass as they are (UTF-8). NULL is
 * null. */
static void json_str(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", stdout); break;
		case '\\': fputs("\\\\", stdout); break;
		case '\n': fputs("\\n", stdout); break;
		case '\t': fputs("\\t", stdout); break;
		case '\r': fputs("\\r", stdout); break;
		default:
			if (*p < 0x20)
				printf("\\u%04x", *p);
			else
				putchar(*p);
		}
	}
	putchar('"');
}

/* A string member; NULL is "" (the host reads these as text). */
static void json_member(const char *key, const char *value, const char *sep)
{
	printf("  \"%s\": ", key);
	json_str(value ? value : "");
	fputs(sep, stdout);
}

/* The space-separated words of list as a JSON list of strings. */
static void json_words(const char *list)
{
	const char *sep = "";

	putchar('[');
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, " ");

		if (len) {
			char word[64];

			snprintf(word, sizeof(word), "%.*s", (int)len, p);
			fputs(sep, stdout);
			json_str(word);
			sep = ", ";
		}
		p += len + strspn(p + len, " ");
	}
	putchar(']');
}

/*
 * Detectors are "CONFIG_X" or "CONFIG_X=v" words (json_words() takes up to 63
 * bytes of each): the host compares them with a kernel's config as they are.
 */
static bool detectors_valid(const char *t_name, const char *what, const char *list)
{
	bool ok = true;

	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, " "), name = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
							 "abcdefghijklmnopqrstuvwxyz0123456789_");

		if (len && (len > 63 || strncmp(p, "CONFIG_", 7) || name <= 7 ||
			    (name < len && p[name] != '='))) {
			fprintf(stderr, "%s: %s: '%.*s' is not CONFIG_X or CONFIG_X=v\n", t_name,
				what, (int)len, p);
			ok = false;
		}
		p += len + strspn(p + len, " ");
	}
	return ok;
}

/* What can FAIL a run must be declared, and only what can (krepro.h). */
static bool evidence_valid(const struct krepro_test *t)
{
	bool ok = detectors_valid(t->name, "own_detectors", t->own_detectors);

	if (!t->own_evidence && !(t->signatures && t->signatures->kind)) {
		fprintf(stderr, "%s: no signatures and no own_evidence: nothing could FAIL it\n",
			t->name);
		ok = false;
	}
	if (!t->own_evidence && t->own_detectors && t->own_detectors[0]) {
		fprintf(stderr, "%s: own_detectors without own_evidence\n", t->name);
		ok = false;
	}
	return ok;
}

/*
 * The evidence must hold up before the host relies on it: a known shape,
 * detectors that are options, and regexes that compile as POSIX EREs (the
 * build writes <id>.json from --describe, so a bad one fails the build;
 * tests/test-metadata.py checks the kinds against kernel-reports.tsv and that
 * Python's re takes the regexes).
 */
static bool signatures_valid(const struct krepro_test *t)
{
	bool ok = evidence_valid(t);

	for (const struct krepro_signature *s = t->signatures; s && s->kind; s++) {
		const char *res[2] = { s->title, s->frame };

		if (!s->kind[0]) {
			fprintf(stderr, "%s: a signature with an empty kind\n", t->name);
			ok = false;
		}
		if (!detectors_valid(t->name, s->kind, s->detectors))
			ok = false;
		for (int i = 0; i < 2; i++) {
			regex_t re;
			int err;

			if (!res[i])
				continue;
			err = regcomp(&re, res[i], REG_EXTENDED | REG_NOSUB);
			if (err) {
				char msg[200];

				regerror(err, &re, msg, sizeof(msg));
				fprintf(stderr, "%s: signature %s: bad regex '%s': %s\n",
					t->name, s->kind, res[i], msg);
				ok = false;
				continue;
			}
			regfree(&re);
		}
	}
	return ok;
}

static int describe(const struct krepro_test *t, const char *arches)
{
	const char *sep = "";

	if (!signatures_valid(t))
		return KREPRO_BROKEN;
	puts("{");
	json_member("name", t->name, ",\n");
	json_member("summary", t->summary, ",\n");
	json_member("fix_commit", t->fix_commit, ",\n");
	json_member("bug_commit", t->bug_commit, ",\n");
	json_member("seed", t->seed, ",\n");
	fputs("  \"arches\": ", stdout);
	json_words(arches);
	fputs(",\n", stdout);
	json_member("not_in_matrix", t->not_in_matrix, ",\n");
	printf("  \"min_cpus\": %u,\n", t->min_cpus ? t->min_cpus : 1);
	printf("  \"alone\": %s,\n", t->alone ? "true" : "false");
	printf("  \"timeout\": %u,\n", t->timeout);
	json_member("cmdline", t->cmdline, ",\n");
	printf("  \"disk_mib\": %u,\n", t->disk_mib);
	printf("  \"prepare\": %s,\n", t->prepare ? "true" : "false");
	fputs("  \"needs_kconfigs\": [", stdout);
	for (const char *const *k = t->needs_kconfigs; k && *k; k++, sep = ", ") {
		fputs(sep, stdout);
		json_str(*k);
	}
	fputs("],\n  \"cases\": [", stdout);
	sep = "";
	for (const struct krepro_case *c = t->cases; c->name; c++, sep = ", ") {
		fputs(sep, stdout);
		json_str(c->name);
	}
	printf("],\n  \"own_evidence\": %s,\n  \"own_detectors\": ",
	       t->own_evidence ? "true" : "false");
	json_words(t->own_detectors ? t->own_detectors : "");
	fputs(",\n  \"signatures\": [", stdout);
	sep = "\n";
	for (const struct krepro_signature *s = t->signatures; s && s->kind; s++, sep = ",\n") {
		printf("%s    {\"kind\": ", sep);
		json_str(s->kind);
		fputs(", \"title\": ", stdout);
		json_str(s->title);
		fputs(", \"frame\": ", stdout);
		json_str(s->frame);
		fputs(", \"detectors\": ", stdout);
		json_words(s->detectors ? s->detectors : "");
		putchar('}');
	}
	puts(t->signatures && t->signatures->kind ? "\n  ]\n}" : "]\n}");
	return fflush(stdout) ? KREPRO_BROKEN : 0;
}

/* The test point the harness adds after the cases: its scan of kmsg and taint. */
#define SCAN_POINT "kernel-report-scan"

/* For the preparatory boot (krepro.prepare=1): t with prepare() as its one
 * case, no setup nor cleanup; NULL when t has nothing to prepare. */
static const struct krepro_test *prepare_only(const struct krepro_test *t)
{
	static struct krepro_test prep;
	static struct krepro_case prep_cases[2];

	if (!t->prepare)
		return NULL;
	prep = *t;
	prep_cases[0] = (struct krepro_case){ "prepare", t->prepare };
	prep.cases = prep_cases;
	prep.setup = NULL;
	prep.cleanup = NULL;
	return &prep;
}

/* Why the run cannot go ahead (into why): SKIP or BROKEN; -1 when it can. */
static int unmet_need(const struct krepro_test *t, const char *arches,
		      unsigned long taint_before, char *why, size_t size)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int missing = missing_kconfigs(t->needs_kconfigs, why, size);

	if (missing < 0)
		krepro_info("no /proc/config.gz nor /boot/config-<release>: kernel options not checked");
	if (!runs_on(arches, machine_arch())) {
		snprintf(why, size, "runs on %s, this machine is %s", arches,
			 machine_arch() ? machine_arch() : "unknown");
		return KREPRO_SKIP;
	}
	if (t->min_cpus && cpus < (long)t->min_cpus) {
		snprintf(why, size, "needs %u CPUs, has %ld", t->min_cpus, cpus);
		return KREPRO_SKIP;
	}
	if (missing > 0) {
		char lacks[1024];

		snprintf(lacks, sizeof(lacks), "kernel lacks %s", why);
		snprintf(why, size, "%s", lacks);
		return KREPRO_SKIP;
	}
	if (taint_before & TAINT_MASK) {
		snprintf(why, size, "kernel already tainted (%lu) before the test", taint_before);
		return KREPRO_BROKEN;
	}
	return -1;
}

/*
 * Setup, cases and cleanup run in one test process, so the cases (each
 * forked from it) see what setup made; this process stays clean to scan
 * kmsg and taint afterwards whatever happens to the test process.
 */
static int run_test_process(const struct krepro_test *t, int ncases, struct totals *tot)
{
	pid_t test_pid = fork_flushed();
	int status;

	if (test_pid < 0)
		return KREPRO_BROKEN;
	if (test_pid == 0)
		exit(run_test(t, ncases, tot));
	while (waitpid(test_pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	krepro_info("BROKEN: test process killed by signal %d (%s)",
		    WTERMSIG(status), strsignal(WTERMSIG(status)));
	return KREPRO_BROKEN;
}

/*
 * The scan after the cases, as the last test point: a kernel report or a
 * new taint FAILs the run even when every case passed, and the stream says
 * so in a test point of its own, so that KTAP and the exit code agree.
 */
static int scan_point(int n, int kmsg_fd, unsigned long taint_before, struct totals *tot)
{
	int reports = kmsg_fd >= 0 ? scan_kmsg(kmsg_fd) : 0;
	unsigned long taint_after = krepro_taint();
	bool tainted = (taint_after & ~taint_before) & TAINT_MASK;
	char why[200];

	if (reports)
		krepro_info("FAIL: the kernel logged %d report(s) during the test", reports);
	if (tainted)
		krepro_info("FAIL: kernel taint went from %lu to %lu during the test",
			    taint_before, taint_after);
	snprintf(why, sizeof(why), "%d kernel report(s) after the mark, taint %lu to %lu",
		 reports, taint_before, taint_after);
	test_point(n, SCAN_POINT, reports || tainted ? KREPRO_FAIL : KREPRO_PASS,
		   reports || tainted ? why : NULL);
	count(tot, reports || tainted ? KREPRO_FAIL : KREPRO_PASS);
	return reports || tainted ? KREPRO_FAIL : KREPRO_PASS;
}

/* The run's verdict, its hint and end lines, and the kmsg end mark. */
static int finish(const struct krepro_test *t, int overall, const struct totals *tot)
{
	printf("# Totals: pass:%u fail:%u xfail:0 xpass:0 skip:%u error:%u\n",
	       tot->pass, tot->fail, tot->skip, tot->broken);
	/* FAIL outranks BROKEN in the exit code: say what it does not cover. */
	if (overall == KREPRO_FAIL && tot->broken)
		krepro_info("also BROKEN: %u case(s) could not be judged (above); the FAIL does "
			    "not cover them", tot->broken);
	if (overall == KREPRO_FAIL)
		krepro_info("hint: this is the bug fixed upstream by %s (introduced by %s; seed %s)",
			    t->fix_commit, t->bug_commit ? t->bug_commit : "unknown", t->seed);
	printf("# %s %s in %.1f s\n", t->name, verdict_name(overall), krepro_elapsed());
	kmsg_write(KREPRO_MARK_END, t->name, verdict_name(overall));
	return overall;
}

int krepro_main(const struct krepro_test *t, const char *arches, int argc, char **argv)
{
	int ncases = 0, overall, kmsg_fd;
	unsigned long taint_before;
	struct totals *tot;
	char why[1024];

	cur_test = t;
	if (!arches)
		arches = "";	/* runs nowhere: SKIP, never a guess */
	if (argc > 1 && !strcmp(argv[1], "--describe")) {
		/* Metadata for the host runner; does nothing else. */
		return describe(t, arches);
	}
	if (argc > 1) {
		fprintf(stderr, "usage: %s [--describe]\n"
			"Runs inside a krepro QEMU guest only (see run-in-qemu.sh).\n", argv[0]);
		return KREPRO_BROKEN;
	}
	if (!cmdline_has(GUEST_MARKER)) {
		fprintf(stderr,
			"%s: refusing to run: this is not a krepro guest (no %s on the kernel\n"
			"command line). Reproducers crash kernels on purpose; run them with\n"
			"run-in-qemu.sh %s. Nothing was done.\n", t->name, GUEST_MARKER, t->name);
		return KREPRO_BROKEN;
	}
	if (cmdline_has("krepro.prepare=1")) {
		/* The preparatory boot: prepare() is the one case; no checks of
		 * the kernel's config, it is krepro's own patched flavour. */
		const struct krepro_test *prep = prepare_only(t);

		if (!prep) {
			fprintf(stderr, "%s: krepro.prepare=1 but nothing to prepare\n", t->name);
			return KREPRO_BROKEN;
		}
		t = cur_test = prep;
	}
	for (const struct krepro_case *c = t->cases; c->name; c++)
		ncases++;

	setvbuf(stdout, NULL, _IOLBF, 0);
	run_start = krepro_now();
	/* Open kmsg at its end before the mark: what we read later is ours. */
	kmsg_fd = krepro_kmsg_open();
	kmsg_write(KREPRO_MARK_START, t->name);

	printf("KTAP version 1\n");
	printf("# krepro %s: %s\n", t->name, t->summary);
	printf("# fix: %s; seed: %s\n", t->fix_commit, t->seed);
	/* The cases, then the scan after them. */
	printf("1..%d\n", ncases + 1);

	taint_before = krepro_taint();
	overall = unmet_need(t, arches, taint_before, why, sizeof(why));
	if (overall >= 0) {
		for (int i = 0; i <= ncases; i++)
			test_point(i + 1, i < ncases ? t->cases[i].name : SCAN_POINT, overall, why);
		printf("# %s: %s\n", verdict_name(overall), why);
		return overall;
	}

	/* Counted by the test process, read here after it ended. */
	tot = mmap(NULL, sizeof(*tot), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tot == MAP_FAILED) {
		krepro_info("mmap: %s", strerror(errno));
		return KREPRO_BROKEN;
	}
	*tot = (struct totals){ 0 };
	overall = run_test_process(t, ncases, tot);
	if (scan_point(ncases + 1, kmsg_fd, taint_before, tot) == KREPRO_FAIL)
		overall = KREPRO_FAIL;
	return finish(t, overall, tot);
}
