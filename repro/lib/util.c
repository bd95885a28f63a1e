// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers several reproducers need: commands, sysfs/configfs files, loop
 * devices, file systems, O_DIRECT buffers. Setup helpers end the case as
 * BROKEN on error (with the caller's intent in the message).
 */
#define _GNU_SOURCE
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int krepro_run_cmd(const char *const argv[])
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
	/* Relay the command's output as KTAP diagnostics, line by line. */
	while ((n = read(pipefd[0], buf + used, sizeof(buf) - 1 - used)) > 0) {
		char *line = buf, *nl;

		used += (size_t)n;
		buf[used] = '\0';
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			krepro_info("%s: %s", argv[0], line);
			line = nl + 1;
		}
		used = strlen(line);
		memmove(buf, line, used);
		if (used == sizeof(buf) - 1) {
			buf[used] = '\0';
			krepro_info("%s: %s", argv[0], buf);
			used = 0;
		}
	}
	if (used) {
		buf[used] = '\0';
		krepro_info("%s: %s", argv[0], buf);
	}
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void krepro_must_run(const char *const argv[])
{
	int rc = krepro_run_cmd(argv);

	if (rc != 0)
		krepro_broken("%s exited with %d", argv[0], rc);
}

void krepro_write_file(const char *path, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int fd, len;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		krepro_broken("open %s: %s", path, strerror(errno));
	if (write(fd, buf, (size_t)len) != len)
		krepro_broken("write '%s' to %s: %s", buf, path, strerror(errno));
	close(fd);
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

void krepro_loop_attach(off_t size, char *dev, size_t devsize)
{
	char backing[64];
	int ctl, nr, fd, loopfd;
	struct loop_config cfg = { 0 };

	ctl = SAFE(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
	nr = SAFE(ioctl(ctl, LOOP_CTL_GET_FREE));
	close(ctl);
	snprintf(dev, devsize, "/dev/loop%d", nr);
	/* The backing file lives in tmpfs and is unlinked at once: sparse, and
	 * gone once the loop device lets go of it. */
	snprintf(backing, sizeof(backing), "/tmp/krepro-loop%d.img", nr);
	fd = SAFE(open(backing, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
	SAFE(ftruncate(fd, size));
	SAFE(unlink(backing));
	loopfd = SAFE(open(dev, O_RDWR | O_CLOEXEC));
	/* No LO_FLAGS_AUTOCLEAR: it would detach at our close() below. */
	cfg.fd = (unsigned int)fd;
	SAFE(ioctl(loopfd, LOOP_CONFIGURE, &cfg));
	close(fd);
	close(loopfd);
}

void krepro_loop_detach(const char *dev)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	if (ioctl(fd, LOOP_CLR_FD, 0) < 0 && errno != ENXIO)
		krepro_info("detaching %s: %s", dev, strerror(errno));
	close(fd);
}

void krepro_mkfs_mount(const char *const mkfs_argv[], const char *dev,
		       const char *fstype, const char *dir)
{
	const char *argv[16];
	int n = 0;

	while (mkfs_argv[n] && n < 14) {
		argv[n] = mkfs_argv[n];
		n++;
	}
	argv[n++] = dev;
	argv[n] = NULL;
	krepro_must_run(argv);
	krepro_mount(dev, fstype, dir);
}

void krepro_mount(const char *dev, const char *fstype, const char *dir)
{
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		krepro_broken("mkdir %s: %s", dir, strerror(errno));
	if (mount(dev, dir, fstype, 0, NULL) < 0)
		krepro_broken("mount -t %s %s %s: %s", fstype, dev, dir, strerror(errno));
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

void *krepro_dio_buf(size_t size, int byte)
{
	void *buf = NULL;
	int err = posix_memalign(&buf, 4096, size);

	if (err)
		krepro_broken("posix_memalign %zu: %s", size, strerror(err));
	memset(buf, byte, size);
	return buf;
}
