// SPDX-License-Identifier: GPL-2.0
/*
 * The guest system from a reproducer's side (sys.h): commands, sysfs/configfs
 * files, memory the cases share, CPU pinning. Setup helpers end the case as
 * BROKEN on error (with the caller's intent in the message).
 */
#define _GNU_SOURCE
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int krepro_run_lines(const char *const argv[], void (*line_fn)(const char *line, void *ctx),
		     void *ctx)
{
	int pipefd[2], status;
	char buf[1024];
	size_t used = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	/* Hand the command's output over line by line. */
	while ((n = read(pipefd[0], buf + used, sizeof(buf) - 1 - used)) > 0) {
		char *line = buf, *nl;

		used += (size_t)n;
		buf[used] = '\0';
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			if (line_fn)
				line_fn(line, ctx);
			line = nl + 1;
		}
		used = strlen(line);
		memmove(buf, line, used);
		if (used == sizeof(buf) - 1) {
			buf[used] = '\0';
			if (line_fn)
				line_fn(buf, ctx);
			used = 0;
		}
	}
	if (used) {
		buf[used] = '\0';
		if (line_fn)
			line_fn(buf, ctx);
	}
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Relay a command's output as KTAP diagnostics. */
static void info_line(const char *line, void *ctx)
{
	krepro_info("%s: %s", (const char *)ctx, line);
}

int krepro_run_cmd(const char *const argv[])
{
	return krepro_run_lines(argv, info_line, (void *)argv[0]);
}

void krepro_must_run(const char *const argv[])
{
	int rc = krepro_run_cmd(argv);

	if (rc != 0)
		krepro_broken("%s exited with %d", argv[0], rc);
}

int krepro_try_write_file(const char *path, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int fd, len, saved;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, buf, (size_t)len) != len) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	return 0;
}

int krepro_read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		errno = ENODATA;
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

void *krepro_shared(size_t size)
{
	/* Anonymous: zeroed, and gone with the last process that maps it. */
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		krepro_broken("mmap %zu shared bytes: %s", size, strerror(errno));
	return mem;
}

void krepro_pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* pid 0: the calling thread only. */
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		krepro_broken("pin to CPU %d: %s", cpu, strerror(errno));
}
