/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepro harness: a reproducer declares itself in a struct krepro_test and the
 * harness owns main(): guest check, prerequisites, KTAP, kmsg mark and scan,
 * taint check, verdict and exit code (docs/design-notes.md, "Verdicts in the guest").
 *
 * The library is in layers, each using only the ones before it: clock.c (the
 * clock and waits on it; prints nothing), harness.c (main, verdicts, output,
 * child processes), both declared here; then the helpers, each with its own
 * header that a reproducer includes when it uses them: sys.h (commands,
 * kernel files, shared memory, CPU pinning), fs.h (loop devices and their
 * filesystems), xfs.h, race.h, net.h (namespaces and netlink), wg.h, can.h,
 * nfrules.h, nvmf.h. The unit tests link the first two alone, so the harness
 * cannot come to need a helper.
 */
#ifndef KREPRO_H
#define KREPRO_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"	/* exit codes and verdicts, the marks */


struct krepro_case {
	const char *name;
	void (*run)(void);
};

/*
 * A kernel report that means this bug (docs/design-notes.md): the host classifies every
 * report on the guest console (repro/lib/kernel-reports.tsv) and counts one
 * as this bug only when it matches a signature; any other report is OTHER.
 */
struct krepro_signature {
	/* A kind from column 1 of kernel-reports.tsv (KASAN, KFENCE, KCSAN,
	 * UBSAN, REFCOUNT, FORTIFY, LIST, ODEBUG, MEMLEAK, BUG, TRAP, GPF,
	 * OOPS, WARNING, LOCKDEP, HUNG, RCU, NETDEV, PANIC, RUST, SYZFAIL,
	 * REBOOT), or "HANG": the
	 * guest not finishing in its time limit is this bug. */
	const char *kind;
	/* POSIX ERE, also valid Python re, searched in the report's title as
	 * the classifier writes it (column 3 after expansion, offsets removed:
	 * "KASAN: use-after-free in uio_unregister_device"); NULL: any. */
	const char *title;
	/* ERE that one function name of the report's call trace must match
	 * whole ("j1939_.*"); NULL: no trace requirement. */
	const char *frame;
	/*
	 * The kernel options without which this report is never printed,
	 * space-separated "CONFIG_X" (=y or =m) or "CONFIG_X=v": its detectors
	 * ("CONFIG_KASAN" for a KASAN report, "CONFIG_DEBUG_LIST" for list
	 * corruption). NULL when the report needs no debug option (a WARNING,
	 * a BUG_ON, refcount_t's checks, a hang). needs_kconfigs is what
	 * triggers the bug; this is what makes it visible. On a kernel without
	 * them the host counts the path blind: no recorded rate applies there.
	 */
	const char *detectors;
};

struct krepro_test {
	const char *name;		/* directory name under repro/ */
	const char *summary;		/* the bug in a sentence */
	const char *fix_commit;		/* upstream fix: "sha (\"subject\")" */
	const char *bug_commit;		/* upstream commit that introduced the bug */
	const char *seed;		/* the seed patch file the patches' Seed: headers name */
	/*
	 * The arches a reproducer runs on are not here: their one home is its
	 * repro/<id>/CMakeLists.txt (krepro_reproducer(ARCHES ...)), which
	 * passes them to the compile as KREPRO_ARCHES for KREPRO_MAIN.
	 */
	const char *not_in_matrix;	/* why this one is left out of the matrix (a sweep); NULL: in it */
	const char *const *needs_kconfigs; /* NULL-terminated "CONFIG_X" or "CONFIG_X=v" */
	const struct krepro_signature *signatures; /* terminated by {NULL} ; NULL: only the reproducer's own evidence */
	/*
	 * Own evidence: a case can FAIL by itself (krepro_fail(), its own or a
	 * library call's such as krepro_nvme_timeout_case()), from what it
	 * sees in userspace, not from a kernel report (krepro_report()). Set it
	 * by hand: a reproducer FAILs by its signatures and, with this, by its
	 * own evidence; one with neither could never FAIL, and --describe
	 * refuses it.
	 */
	bool own_evidence;
	/*
	 * The options without which that own evidence cannot show
	 * (space-separated, as a signature's detectors): "CONFIG_BLK_DEBUG_FS"
	 * for the nvme storms, whose lost request shows only in blk-mq's
	 * debugfs. NULL: it shows on any kernel.
	 */
	const char *own_detectors;
	unsigned int min_cpus;
	/*
	 * A race whose odds, or a bound whose timing, were measured with the
	 * guest alone on the host: with parallel guests (-j) it still runs alone.
	 */
	bool alone;
	unsigned int timeout;		/* seconds for the whole run, setup included */
	const char *cmdline;		/* extra kernel command line the host passes */
	/*
	 * A scratch disk (/dev/vda) of disk_mib MiB. With prepare set, the host
	 * first boots the patched (correct) kernel once with krepro.prepare=1
	 * and an empty disk, the harness runs prepare() on it, and the host
	 * keeps the result; every run then gets a copy-on-write view of it.
	 */
	unsigned int disk_mib;
	void (*prepare)(void);		/* PASS or BROKEN; runs instead of the cases */
	void (*setup)(void);		/* BROKEN on failure; cleanup still runs */
	void (*cleanup)(void);		/* must cope with a setup that stopped halfway */
	const struct krepro_case *cases; /* terminated by {NULL, NULL} */
};

/*
 * arches: the guest arches the reproducer runs on, space-separated krepro
 * names ("x86_64", "arm"); on any other machine it SKIPs. `--describe` prints
 * the declaration as one JSON object and does nothing else.
 */
int krepro_main(const struct krepro_test *test, const char *arches, int argc, char **argv);

/* KREPRO_ARCHES comes from krepro_reproducer() in CMakeLists.txt; a
 * reproducer compiled without it does not build rather than guess. */
#ifdef KREPRO_ARCHES
#define KREPRO_MAIN(test) \
	int main(int argc, char **argv) { return krepro_main(&(test), KREPRO_ARCHES, argc, argv); }
#else
#define KREPRO_MAIN(test) \
	_Static_assert(0, "KREPRO_ARCHES is not defined: build reproducers with krepro_reproducer() (CMakeLists.txt)");
#endif

/*
 * Results of the running case. krepro_fail() records the evidence and lets the
 * case go on (EXPECT); krepro_pass() records success unless something failed;
 * krepro_broken() and krepro_skip() end the case at once (the case runs in a
 * child process, so they simply exit it).
 */
enum krepro_said { KREPRO_SAID_INFO, KREPRO_SAID_PASS, KREPRO_SAID_FAIL, KREPRO_SAID_REPORT };
void krepro_say(enum krepro_said said, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define krepro_pass(...) krepro_say(KREPRO_SAID_PASS, __VA_ARGS__)
#define krepro_fail(...) krepro_say(KREPRO_SAID_FAIL, __VA_ARGS__)
#define krepro_info(...) krepro_say(KREPRO_SAID_INFO, __VA_ARGS__)
/*
 * A kernel report (or taint) stopped the case: quoted as "<case>: REPORT:"
 * and the case FAILs, but it is not the reproducer's own evidence. The host
 * counts the run as this bug only when the console's report matches the
 * reproducer's signatures; any other report makes it OTHER.
 */
#define krepro_report(...) krepro_say(KREPRO_SAID_REPORT, __VA_ARGS__)
_Noreturn void krepro_broken_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
_Noreturn void krepro_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define krepro_broken(...) krepro_broken_at(__FILE__, __LINE__, __VA_ARGS__)

/*
 * Checked setup calls: a -1 (or NULL) result is BROKEN with the expression,
 * file:line and errno. The call under test is made directly and judged by the
 * reproducer, never through these.
 */
long krepro_safe_at(long ret, const char *expr, const char *file, int line);
void *krepro_safe_ptr_at(void *ret, const char *expr, const char *file, int line);
#define SAFE(expr) krepro_safe_at((long)(expr), #expr, __FILE__, __LINE__)
#define SAFE_PTR(expr) krepro_safe_ptr_at((void *)(expr), #expr, __FILE__, __LINE__)

/* --- the clock (clock.c): every deadline and duration is kept by it --- */

/* Seconds on CLOCK_MONOTONIC. */
double krepro_now(void);
/* Seconds since the run started, on the same clock (harness.c). */
double krepro_elapsed(void);
/* Sleep `seconds` on that clock, whatever signals come. Returns 0, or the
 * error of a clock that cannot sleep, after yielding the CPU instead. */
int krepro_sleep(double seconds);
/*
 * Call ready(ctx) until it returns true or `timeout` seconds have passed,
 * sleeping `step` seconds between calls: at least one call, and a last one
 * at the deadline. Returns whether it became true; the seconds that took go
 * to *waited (may be NULL).
 */
bool krepro_poll_until(bool (*ready)(void *ctx), void *ctx, double timeout, double step,
		       double *waited);

/*
 * A call in a child process with a deadline (harness.c), for a call that may
 * never return, or may take its caller down with it (a registration the buggy
 * kernel oopses in). fn(arg) runs in a forked child that reports through the
 * harness as the case does (its verdict lines name the case), but its verdict
 * is its own: krepro_fail(), krepro_broken() and krepro_skip() mark or end the
 * child, which exits with that verdict (KREPRO_PASS when it gave none). The
 * caller says what the child's end means for the case. BROKEN if fork fails.
 */
enum krepro_child_end {
	KREPRO_CHILD_EXITED,	/* ended by itself: exit_code */
	KREPRO_CHILD_KILLED,	/* killed by a signal it got, not the deadline's: signo */
	KREPRO_CHILD_TIMED_OUT,	/* running at the deadline: killed (SIGKILL) and reaped */
	/* Running at the deadline and still there a second after SIGKILL, as in
	 * an uninterruptible wait in the kernel: left behind, unreaped. */
	KREPRO_CHILD_STUCK,
};

struct krepro_child {
	enum krepro_child_end end;
	int exit_code;		/* EXITED: its verdict (or any code it exited with) */
	int signo;		/* KILLED: the signal */
	double seconds;		/* from the fork to its end, or to leaving it */
	pid_t pid;
};

struct krepro_child krepro_run_child(void (*fn)(void *arg), void *arg, double timeout);

/*
 * Kernel messages, for a case that wants to stop at the first kernel report
 * and quote it (the harness scans kmsg after every run anyway).
 * krepro_kmsg_open(): /dev/kmsg positioned at its end, -1 on error.
 * krepro_kmsg_next(): the next message's text (no "pri,seq,ts;" prefix) into
 * msg; 1 when there was one, 0 when none is waiting (non-blocking; reads
 * one record per read(), as /dev/kmsg gives them).
 * krepro_kernel_report(): the message starts a kernel report (a row of
 * kernel-reports.tsv, the table the host classifier uses too).
 * krepro_kmsg_report(): read on to the next message that starts a kernel
 * report, into msg: true, or false when none is waiting.
 * krepro_kmsg_trace(): after a report, read on to the end of its trace
 * ("---[ end trace"), waiting up to `timeout` s for lines still to come:
 * the lines that start with "WARNING:" or name `frame` are quoted ("kmsg:
 * ..."), the first that names frame goes to found (its leading spaces
 * removed; "" when none did). True when the trace's end was read.
 */
int krepro_kmsg_open(void);
int krepro_kmsg_next(int fd, char *msg, size_t size);
bool krepro_kernel_report(const char *msg);
bool krepro_kmsg_report(int fd, char *msg, size_t size);
bool krepro_kmsg_trace(int fd, const char *frame, char *found, size_t size, double timeout);

/* The kernel's taint flags (/proc/sys/kernel/tainted); 0 if unreadable. */
unsigned long krepro_taint(void);

#endif
