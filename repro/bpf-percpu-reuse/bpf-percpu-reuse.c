// SPDX-License-Identifier: GPL-2.0
/*
 * bpf-percpu-reuse: a BPF program that inserts an element into a
 * pre-allocated per-CPU hash map can set only the current CPU's value; the
 * kernel must zero the other CPUs' values. With the bug, an element that is
 * re-used (after a delete, or an LRU eviction) keeps the values it held
 * before on every other CPU. Upstream fix d3bec0138bfb. See README.md.
 */
#define _GNU_SOURCE
#include "krepro.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY_OLD		1		/* the element whose memory gets re-used */
#define KEY_NEW		2		/* the element the program inserts */
#define MARKER		0xdeadbeefULL	/* KEY_OLD's value on every CPU */
#define PROG_VALUE	1ULL		/* what the program writes on its CPU */
#define PROG_CPU	0

/* libbpf calls return a negative errno: BROKEN with the call and the error. */
static int bpf_safe_at(int ret, const char *expr, const char *file, int line)
{
	if (ret < 0)
		krepro_broken_at(file, line, "%s: %s", expr, strerror(-ret));
	return ret;
}
#define BPF_SAFE(expr) bpf_safe_at((expr), #expr, __FILE__, __LINE__)

#define INSN(c, d, s, o, i) { .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) }

/*
 * Load and run on PROG_CPU: bpf_map_update_elem(map, &KEY_NEW, &PROG_VALUE,
 * BPF_ANY), returning the helper's result. Raw instructions, so no clang. A
 * socket filter, run by BPF_PROG_TEST_RUN on the caller's CPU (this process
 * is pinned to PROG_CPU, setup()): it needs only BPF_SYSCALL, where a raw
 * tracepoint program's BPF_F_TEST_RUN_ON_CPU needs the kernel's tracing.
 */
static void run_insert_prog(int map_fd)
{
	struct bpf_insn prog[] = {
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, KEY_NEW),
		INSN(BPF_ST | BPF_MEM | BPF_DW, BPF_REG_10, 0, -16, PROG_VALUE),
		INSN(BPF_LD | BPF_IMM | BPF_DW, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd),
		INSN(0, 0, 0, 0, 0),	/* second half of the 64-bit immediate */
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, -16),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, BPF_ANY),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_update_elem),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	static char log[8192];
	LIBBPF_OPTS(bpf_prog_load_opts, load_opts, .log_buf = log, .log_size = sizeof(log));
	/* The smallest packet a socket filter's test run takes: an Ethernet header. */
	static unsigned char packet[14];
	LIBBPF_OPTS(bpf_test_run_opts, run_opts, .data_in = packet,
		    .data_size_in = sizeof(packet));
	int prog_fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "krepro_insert", "GPL",
				    prog, sizeof(prog) / sizeof(prog[0]), &load_opts);

	if (prog_fd < 0)
		krepro_broken("bpf_prog_load: %s\nverifier log:\n%s", strerror(-prog_fd), log);
	BPF_SAFE(bpf_prog_test_run_opts(prog_fd, &run_opts));
	if ((int)run_opts.retval != 0)
		krepro_broken("the program's bpf_map_update_elem() failed: %s",
			      strerror(-(int)run_opts.retval));
	close(prog_fd);
}

/* Userspace writes a value for every possible CPU: one 8-byte slot each. */
static void put_on_all_cpus(int map_fd, int ncpus, __u32 key, __u64 value)
{
	__u64 *vals = SAFE_PTR(calloc((size_t)ncpus, sizeof(*vals)));

	for (int cpu = 0; cpu < ncpus; cpu++)
		vals[cpu] = value;
	BPF_SAFE(bpf_map_update_elem(map_fd, &key, vals, BPF_NOEXIST));
	free(vals);
}

/* KEY_NEW must hold PROG_VALUE on PROG_CPU and 0 on every other CPU. */
static void judge(int map_fd, int ncpus)
{
	__u64 *vals = SAFE_PTR(calloc((size_t)ncpus, sizeof(*vals)));
	__u32 key = KEY_NEW;
	char seen[1024] = "";
	int stale = 0;

	BPF_SAFE(bpf_map_lookup_elem(map_fd, &key, vals));
	if (vals[PROG_CPU] != PROG_VALUE)
		krepro_broken("cpu%d holds %#llx, not the program's %#llx: did it run there?",
			      PROG_CPU, (unsigned long long)vals[PROG_CPU], PROG_VALUE);
	for (int cpu = 0; cpu < ncpus; cpu++) {
		size_t used = strlen(seen);

		snprintf(seen + used, sizeof(seen) - used, " cpu%d=%#llx", cpu,
			 (unsigned long long)vals[cpu]);
		if (cpu != PROG_CPU && vals[cpu])
			stale++;
	}
	if (stale)
		krepro_fail("new element %d has stale values on %d other CPU(s), want 0:%s",
			    KEY_NEW, stale, seen);
	else
		krepro_pass("new element %d holds only the program's value:%s", KEY_NEW, seen);
	free(vals);
}

/* Pre-allocated hash, one element: a delete puts it on the free list, and
 * the program's insert must take that same element back. */
static void run_percpu_hash(void)
{
	int ncpus = BPF_SAFE(libbpf_num_possible_cpus());
	int fd = BPF_SAFE(bpf_map_create(BPF_MAP_TYPE_PERCPU_HASH, "krepro_pcpu",
					 sizeof(__u32), sizeof(__u64), 1, NULL));
	__u32 key = KEY_OLD;

	put_on_all_cpus(fd, ncpus, KEY_OLD, MARKER);
	BPF_SAFE(bpf_map_delete_elem(fd, &key));
	run_insert_prog(fd);
	judge(fd, ncpus);
	close(fd);
}

/*
 * LRU with one LRU list per CPU (BPF_F_NO_COMMON_LRU) and max_entries 1,
 * which the kernel rounds up to one element per possible CPU. An element is
 * taken from the LRU list of the CPU doing the insert, so with this process
 * pinned to PROG_CPU, KEY_OLD takes PROG_CPU's only element, and the
 * program's insert on PROG_CPU finds its free list empty and must evict
 * KEY_OLD and re-use that element (README.md walks through the code).
 */
static void run_lru_percpu_hash(void)
{
	int ncpus = BPF_SAFE(libbpf_num_possible_cpus());
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_COMMON_LRU);
	__u64 *vals = SAFE_PTR(calloc((size_t)ncpus, sizeof(*vals)));
	__u32 key = KEY_OLD;
	int fd, ret;

	fd = BPF_SAFE(bpf_map_create(BPF_MAP_TYPE_LRU_PERCPU_HASH, "krepro_lru",
				     sizeof(__u32), sizeof(__u64), 1, &opts));
	put_on_all_cpus(fd, ncpus, KEY_OLD, MARKER);
	run_insert_prog(fd);
	/* Guard: the insert really evicted KEY_OLD (else nothing was re-used). */
	ret = bpf_map_lookup_elem(fd, &key, vals);
	if (ret != -ENOENT)
		krepro_broken("element %d still there after the insert (lookup: %s): "
			      "no element was re-used", KEY_OLD, ret ? strerror(-ret) : "found");
	judge(fd, ncpus);
	free(vals);
	close(fd);
}

/* libbpf's own warnings would interleave with KTAP: errors are reported here. */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level, (void)fmt, (void)ap;
	return 0;
}

/* Every syscall and the program's test run on PROG_CPU. */
static void setup(void)
{
	cpu_set_t cpus;

	libbpf_set_print(quiet);
	CPU_ZERO(&cpus);
	CPU_SET(PROG_CPU, &cpus);
	SAFE(sched_setaffinity(0, sizeof(cpus), &cpus));
}

static const char *const kconfigs[] = { "CONFIG_BPF_SYSCALL", "CONFIG_NET", NULL };

static const struct krepro_case cases[] = {
	{ "percpu_hash", run_percpu_hash },
	{ "lru_percpu_hash", run_lru_percpu_hash },
	{ NULL, NULL },
};

static const struct krepro_test test = {
	.name = "bpf-percpu-reuse",
	.summary = "pre-allocated per-CPU hash element reused with stale values on other CPUs",
	.fix_commit = "d3bec0138bfb (\"bpf: Zero-fill re-used per-cpu map element\")",
	.bug_commit = "6c9059817432 (\"bpf: pre-allocate hash map elements\")",
	.seed = "009-patch-bpf-zero-fill-re-used-per-cpu-map-element.patch",
	.needs_kconfigs = kconfigs,
	/* Stale values read back from the map: no debug option needed. */
	.own_evidence = true,
	.min_cpus = 2,
	.timeout = 60,
	.setup = setup,
	.cases = cases,
};

KREPRO_MAIN(test)
