/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepro harness: a reproducer declares itself in a struct krepro_test and the
 * harness owns main(): guest check, prerequisites, KTAP, kmsg mark and scan,
 * taint check, verdict and exit code (DESIGN.md).
 */
#ifndef KREPRO_H
#define KREPRO_H

#include <stddef.h>
#include <stdbool.h>
#include <sys/types.h>

/* Exit codes and verdicts (DESIGN.md). */
enum krepro_verdict {
	KREPRO_PASS = 0,
	KREPRO_FAIL = 1,
	KREPRO_BROKEN = 2,
	KREPRO_SKIP = 4,
};

struct krepro_case {
	const char *name;
	void (*run)(void);
};

struct krepro_test {
	const char *name;		/* directory name under repro/ */
	const char *summary;		/* the bug in a sentence */
	const char *fix_commit;		/* upstream fix: "sha (\"subject\")" */
	const char *bug_commit;		/* upstream commit that introduced the bug */
	const char *seed;		/* file under shared/seeds */
	/*
	 * Guest arches the reproducer runs on, space-separated krepro names
	 * ("x86_64", "arm"); NULL means "x86_64". Written on one line as
	 * `.arches = "..."`: CMake and run-in-qemu.sh read that line from the
	 * source to know which arch's build and guest the reproducer belongs to.
	 */
	const char *arches;
	const char *const *needs_kconfigs; /* NULL-terminated "CONFIG_X" or "CONFIG_X=v" */
	unsigned int min_cpus;
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

int krepro_main(const struct krepro_test *test, int argc, char **argv);

#define KREPRO_MAIN(test) \
	int main(int argc, char **argv) { return krepro_main(&(test), argc, argv); }

/*
 * Results of the running case. krepro_fail() records the evidence and lets the
 * case go on (EXPECT); krepro_pass() records success unless something failed;
 * krepro_broken() and krepro_skip() end the case at once (the case runs in a
 * child process, so they simply exit it).
 */
void krepro_pass(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void krepro_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void krepro_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
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

/* Seconds since the run started (monotonic). */
double krepro_elapsed(void);

/* --- helpers several reproducers need (util.c) --- */

/* Run argv[0] (searched in PATH) and wait; output goes to our stdout as "# "
 * lines. Returns the exit status, or -1 if it could not be run. */
int krepro_run_cmd(const char *const argv[]);
/* The same, BROKEN unless it exits 0. */
void krepro_must_run(const char *const argv[]);

/* Write a string to a sysfs/configfs/procfs file; BROKEN on error. */
void krepro_write_file(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Read a file's first line (newline removed) into buf; -1 with errno on error. */
int krepro_read_line(const char *path, char *buf, size_t size);

/* A sparse file of `size` bytes in the guest's tmpfs attached to a free loop
 * device; the device path goes to dev. Detached by krepro_loop_detach(). */
void krepro_loop_attach(off_t size, char *dev, size_t devsize);
void krepro_loop_detach(const char *dev);

/* Mount dev at dir (created if missing). BROKEN on error. */
void krepro_mount(const char *dev, const char *fstype, const char *dir);
/* mkfs (argv after the device, e.g. {"mkfs.xfs", "-f", NULL}), then mount at
 * dir (created). BROKEN on error. */
void krepro_mkfs_mount(const char *const mkfs_argv[], const char *dev,
		       const char *fstype, const char *dir);

/* Allocate `size` bytes aligned for O_DIRECT and filled with `byte`. */
void *krepro_dio_buf(size_t size, int byte);

#endif
