/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest system from a reproducer's side (sys.c): memory the cases share,
 * CPU pinning, commands and their output, sysfs/configfs/procfs files. Setup
 * helpers end the case as BROKEN on error.
 */
#ifndef KREPRO_SYS_H
#define KREPRO_SYS_H

#include "krepro.h"

#include <stddef.h>

/*
 * Zeroed memory that setup, every case and cleanup share: a case runs in a
 * child process, so what it keeps in its own variables dies with it. Map it
 * before the fork of whoever must see it (in setup for the cases and
 * cleanup). BROKEN on error.
 */
void *krepro_shared(size_t size);

/* Pin the calling thread to one CPU. BROKEN on error. */
void krepro_pin_cpu(int cpu);

/* Run argv[0] (searched in PATH) and wait; output goes to our stdout as "# "
 * lines. Returns the exit status, or -1 if it could not be run. */
int krepro_run_cmd(const char *const argv[]);
/* The same, but each line of the output goes to line_fn (may be NULL: dropped). */
int krepro_run_lines(const char *const argv[], void (*line_fn)(const char *line, void *ctx),
		     void *ctx);
/* The same, BROKEN unless it exits 0. */
void krepro_must_run(const char *const argv[]);

/* Write a string to a sysfs/configfs/procfs file: 0, or -1 with errno (for a
 * write whose failure is the evidence). */
int krepro_try_write_file(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same, BROKEN on error (naming the call as written: path and text). */
#define krepro_write_file(path, ...) ((void)SAFE(krepro_try_write_file(path, __VA_ARGS__)))
/* Read a file's first line (newline removed) into buf; -1 with errno on error. */
int krepro_read_line(const char *path, char *buf, size_t size);

#endif
