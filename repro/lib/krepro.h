/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krepro harness: a reproducer declares itself in a struct krepro_test and the
 * harness owns main(): guest check, prerequisites, KTAP, kmsg mark and scan,
 * taint check, verdict and exit code (docs/design-notes.md, "Verdicts in the guest").
 *
 * The library is in layers, each using only the ones before it: clock.c (the
 * clock and waits on it; prints nothing), harness.c (main, verdicts, output,
 * child processes), then the helpers (util.c, xfs.c, race.c, net.c, nvmf.c).
 * The unit tests link the first two alone, so the harness cannot come to need
 * a helper.
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
 */
int krepro_kmsg_open(void);
int krepro_kmsg_next(int fd, char *msg, size_t size);
bool krepro_kernel_report(const char *msg);

/* The kernel's taint flags (/proc/sys/kernel/tainted); 0 if unreadable. */
unsigned long krepro_taint(void);

/* --- helpers several reproducers need (util.c) --- */

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

/* A sparse file of `size` bytes in the guest's tmpfs attached to a free loop
 * device; the device path goes to dev. Detached by krepro_loop_detach(). */
void krepro_loop_attach(off_t size, char *dev, size_t devsize);
/* Attach size bytes (0: to the end) of an existing file or block device from
 * offset to a free loop device. */
void krepro_loop_attach_file(const char *path, off_t offset, off_t size, char *dev,
			     size_t devsize);
void krepro_loop_detach(const char *dev);
/*
 * A filesystem image (a file, or a region of a file or disk) on a loop
 * device, for a reproducer that attaches, mounts and lets go of several.
 * Set fstype and data (mount(2)'s, e.g. "nouuid"; may be NULL) first.
 */
struct krepro_loopfs {
	const char *fstype, *data;
	char dev[32];		/* "" when not attached */
	char mnt[64];		/* where it mounts (created at mount) */
};
/* Attach size bytes (0: to the end) of path from offset. BROKEN on error. */
void krepro_loopfs_attach(struct krepro_loopfs *fs, const char *path, off_t offset, off_t size,
			  const char *mnt);
/* Mount it: 0, or -1 with errno (a mount under test). */
int krepro_loopfs_try_mount(struct krepro_loopfs *fs);
/* Mount, unmount: BROKEN on error. */
void krepro_loopfs_mount(struct krepro_loopfs *fs);
void krepro_loopfs_umount(struct krepro_loopfs *fs);
void krepro_loopfs_detach(struct krepro_loopfs *fs);
/* Let go of it whatever its state (unmount if mounted, detach if
 * attached); never BROKEN: after a failed step, and in cleanup. */
void krepro_loopfs_release(struct krepro_loopfs *fs);
/* Open name under the mount point (O_CLOEXEC added, mode 0644). BROKEN on error. */
int krepro_loopfs_open(const struct krepro_loopfs *fs, const char *name, int flags);
/* Copy size bytes of from (at from_off) to to (at to_off, created if missing),
 * writing only the 4 KiB blocks that are not all zero: a sparse copy onto a
 * destination that is zero there. */
void krepro_copy_nonzero(const char *from, off_t from_off, const char *to, off_t to_off,
			 off_t size);

/* BROKEN unless the first len bytes of fd's file are mapped by exactly the n
 * (at most 7) written extents want[i] = { offset, length }, after a sync: a
 * guard for a case whose bug needs that layout. */
void krepro_expect_extents(int fd, off_t len, const off_t want[][2], unsigned int n);
/* Mount dev at dir (created if missing). BROKEN on error. */
void krepro_mount(const char *dev, const char *fstype, const char *dir);
/* mkfs (argv after the device, e.g. {"mkfs.xfs", "-f", NULL}), then mount at
 * dir (created). BROKEN on error. */
void krepro_mkfs_mount(const char *const mkfs_argv[], const char *dev,
		       const char *fstype, const char *dir);

/* Allocate `size` bytes aligned for O_DIRECT and filled with `byte`. */
void *krepro_dio_buf(size_t size, int byte);

/* --- a bounded race (race.c) --- */

/*
 * A race run in rounds until a bound (rounds or seconds) or until step()
 * says stop. step() runs one step, a round or a look at several (a storm's
 * watch), adds the rounds it finished to r->rounds, and returns false when
 * the race must end now (evidence found). The caller counts the window hits:
 * how often the race window was reached, from the kernel's own stamps or
 * lines (a clean run means something only if it was).
 */
struct krepro_race {
	const char *rounds_of;	/* what a round is, plural: "send-and-close rounds" */
	const char *window;	/* what a window hit is: "echoes after their socket closed" */
	unsigned long max_rounds;
	double max_seconds;
	double pause;		/* seconds between steps; 0: none */
	bool (*step)(struct krepro_race *r, void *ctx);
	void *ctx;
	/* Kept by krepro_race_run() and step(); hits: the caller's. */
	unsigned long rounds, hits;
	double start, seconds;	/* krepro_now() at the start; seconds run */
	bool stopped;		/* ended by step(), not by a bound */
};
void krepro_race_run(struct krepro_race *r);
/* The counts as a KTAP diagnostic: "# race: N <rounds> in T s (bound: ...);
 * W window hits (<window>)". */
void krepro_race_counts(const struct krepro_race *r);
/* BROKEN unless the window was reached at least once. */
void krepro_race_window_reached(const struct krepro_race *r);
/* The race ran to its bound without the bug: PASS "not reproduced in N
 * <rounds> / T s, W window hits (<window>): <fmt>". BROKEN instead when it
 * stopped before its bound or never reached the window. */
void krepro_race_pass(const struct krepro_race *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* --- network namespaces and netlink (net.c; link with libmnl) --- */

struct mnl_socket;
struct nlmsghdr;
struct rtnl_link_stats64;

/* unshare(CLONE_NEWNET): the calling process is now in a new, empty network
 * namespace (only lo, down); returns an fd that refers to it. */
int krepro_netns_new(void);
/* setns() into the namespace fd refers to. */
void krepro_netns_enter(int fd);

/*
 * A bound netlink socket (NETLINK_ROUTE, NETLINK_GENERIC, ...). It acts on the
 * network namespace it was opened in, wherever the process goes later: open
 * one per namespace. The helpers below name links by name in that namespace.
 */
struct mnl_socket *krepro_nl_open(int bus);
/* Send one request (NLM_F_REQUEST|NLM_F_ACK added; the sequence number set),
 * run cb (may be NULL) on each answer until the ACK or NLMSG_DONE.
 * Returns 0 or -errno (the kernel's error). */
int krepro_nl_request(struct mnl_socket *nl, struct nlmsghdr *nlh,
		      int (*cb)(const struct nlmsghdr *nlh, void *data), void *data);

/* rtnetlink: create a link of a kind ("wireguard", ...; SKIP when the kernel
 * lacks it), a veth pair whose peer goes to the namespace peer_netns_fd
 * refers to (-1: this one), set a link up, add an address "10.0.0.1/24" or
 * "fd00::1/64" (IPv6 without DAD), read a link's index and counters. */
void krepro_link_add(struct mnl_socket *rtnl, const char *name, const char *kind);
void krepro_veth_add(struct mnl_socket *rtnl, const char *name, const char *peer,
		     int peer_netns_fd);
void krepro_link_up(struct mnl_socket *rtnl, const char *name);
/* Delete a link: 0 or -errno (-ENODEV: no such link); never BROKEN, so a
 * cleanup can call it whatever setup got to. */
int krepro_link_del(struct mnl_socket *rtnl, const char *name);
void krepro_addr_add(struct mnl_socket *rtnl, const char *name, const char *cidr);
int krepro_link_index(struct mnl_socket *rtnl, const char *name);
void krepro_link_stats(struct mnl_socket *rtnl, const char *name,
		       struct rtnl_link_stats64 *stats);

/* An address parsed from "10.0.0.1", "fd00::1/64" (no prefix: a host). */
struct krepro_addr {
	int family;			/* AF_INET or AF_INET6 */
	int prefixlen;
	union {
		unsigned char v4[4];
		unsigned char v6[16];
	} addr;
};
int krepro_parse_addr(const char *text, struct krepro_addr *addr);

/* Generic netlink: the id of a family by name (SKIP when it does not exist). */
int krepro_genl_family(struct mnl_socket *genl, const char *name);

/* A UDP echo server on port (IPv4 and IPv6, any address) in a child process
 * in the namespace nsfd refers to; returns its pid once it listens. It dies
 * with its parent; the caller may kill it sooner. BROKEN on error. */
pid_t krepro_udp_echo_server(int nsfd, uint16_t port);
/* One datagram to dst:port from a socket bound to device dev (NULL: none):
 * 0 when it came back within timeout_ms, else -errno (-ETIMEDOUT when
 * nothing came). */
int krepro_udp_echo(const struct krepro_addr *dst, uint16_t port, const char *dev,
		    int timeout_ms);
/* --- XFS (xfs.c) --- */

#define KREPRO_XFS_BLK		4096
/* Short-form btree block with CRC: a 56-byte header, then an rmapbt node's
 * low/high key pairs (20 bytes each: startblock, owner, offset), then its
 * pointers; a leaf's records are 24 bytes (startblock, blockcount, owner,
 * offset). The offset's top bits: attr fork 63, bmbt 62, unwritten 61. */
#define KREPRO_XFS_BB_HDR	56
#define KREPRO_RMAP_KEY_PAIR	40
#define KREPRO_RMAP_REC		24
#define KREPRO_RMAP_UNWRITTEN	(1ULL << 61)
#define KREPRO_RMAP_FLAGS	(7ULL << 61)

uint16_t krepro_be16(const void *p);
uint32_t krepro_be32(const void *p);
uint64_t krepro_be64(const void *p);
/* Read AG 0's rmapbt root of the unmounted XFS on dev (v5, 4 KiB blocks)
 * into root; returns its agbno. BROKEN if it is not that. */
unsigned int krepro_xfs_rmap_root(const char *dev, unsigned char root[KREPRO_XFS_BLK]);
/* Read AG 0's block agbno of dev. */
void krepro_xfs_read_block(const char *dev, unsigned int agbno,
			   unsigned char buf[KREPRO_XFS_BLK]);
/* Set the unwritten bit in the low key i of AG 0's rmapbt root on the
 * unmounted XFS on dev, and checksum the block again: the key as kernels that
 * keep the bit in node keys (6.1) leave it over a record turned written. */
void krepro_xfs_rmap_mark_key_unwritten(const char *dev, unsigned int i);
/* Read the leaf under key i (0: the first) of the two-level rmapbt root
 * into leaf; returns its agbno. BROKEN if it is not an rmapbt leaf. */
unsigned int krepro_xfs_rmap_leaf(const char *dev, const unsigned char root[KREPRO_XFS_BLK],
				  unsigned int i, unsigned char leaf[KREPRO_XFS_BLK]);
/* The first file blocks of the records of inode owner's data fork in the leaf
 * under root key i (0: the first), at most n, into blocks: how many. */
unsigned int krepro_xfs_rmap_leaf_blocks(const char *dev, unsigned int i, uint64_t owner,
					 uint64_t *blocks, unsigned int n);
/* The record of AG 0's rmapbt (one or two levels, read raw) that maps file
 * block `block` of inode owner's data fork: true, with the AG block it maps
 * that file block to and the offset's unwritten bit. */
bool krepro_xfs_rmap_lookup(const char *dev, uint64_t owner, uint64_t block, uint32_t *agbno,
			    bool *unwritten);
/* XFS's report of an internal error in source file `file` ("xfs_rmap.c") on
 * dev's filesystem, read from kmsg (krepro_kmsg_open()): "XFS (loopN):
 * Internal error <check> at line N of file fs/xfs/libxfs/xfs_rmap.c.  Caller
 * xfs_rmap_unmap+0x...". True, with the caller's name; false when kmsg < 0. */
bool krepro_xfs_internal_error(int kmsg, const char *dev, const char *file, char *caller,
			       size_t size);
/* xfs_logprint img: how many more intent items ("RUI") than done items
 * ("RUD") its log holds; their lines are quoted. BROKEN if it fails. */
int krepro_xfs_log_unfinished(const char *img, const char *intent, const char *done);
/* Shut down the XFS that fd (any file or directory in it) is on, forcing
 * the log first (XFS_IOC_GOINGDOWN, LOGFLUSH). BROKEN on error. */
void krepro_xfs_go_down(int fd);
/*
 * Run op(arg) in a child process and, `delay` seconds after telling it to
 * start, shut down the XFS mounted at mnt (krepro_xfs_go_down()): what was
 * committed to the log by then reaches it, what was not never does; delay
 * < 0: no shutdown. Returns the seconds until op returned; *ok: it returned
 * 0. BROKEN when the child does not report.
 */
double krepro_xfs_down_during(const char *mnt, int (*op)(void *arg), void *arg, double delay,
			      bool *ok);
/* mkfs.xfs -q -f [-m meta] dev (meta: e.g. "rmapbt=1,reflink=1"). BROKEN on
 * error. */
void krepro_xfs_mkfs(const char *dev, const char *meta);
/* xfs_repair -n dev: its exit status (0: clean). Its output goes out as
 * diagnostics unless quiet; with when, one line says what it found. */
int krepro_xfs_repair_n(const char *dev, const char *when, bool quiet);
/* Create path on a mounted XFS: fallocate blocks 4 KiB blocks, then punch
 * every other one (1, 3, 5, ...): blocks/2 one-block unwritten extents, each
 * its own rmap record; 2,048 blocks give AG 0 a two-level rmapbt on a 512 MiB
 * filesystem. */
void krepro_xfs_fragmented_file(const char *path, unsigned int blocks);
/* The first number of the `name` line ("blk_map": xfs_bmapi_read() calls) of
 * the per-mount stats of the XFS mounted from dev (/dev/loopN). BROKEN if
 * there is none. */
unsigned long krepro_xfs_stat(const char *dev, const char *name);
/* mkfs.xfs -m rmapbt=1,reflink=1 dev, and the file "f" of
 * krepro_xfs_fragmented_file(blocks) in it (mounted at mnt meanwhile); root
 * gets AG 0's rmapbt root. Returns its key count; BROKEN unless the tree has
 * two levels and at least three root keys. */
unsigned int krepro_xfs_rmap_image(const char *dev, const char *mnt, unsigned int blocks,
				   unsigned char root[KREPRO_XFS_BLK]);
/* xfs_db -x -c cmds[0] -c cmds[1] ... img (cmds NULL-terminated, at most 7):
 * its exit status; value gets the value its "<field> = <value>" line prints
 * (after a fuzz or write of field: the new value), "?" when none. */
int krepro_xfs_db_x(const char *img, const char *const cmds[], const char *field, char *value,
		    size_t size);
/* FS_IOC_GETFSMAP over the whole filesystem mounted at mnt, in batches (on
 * XFS a ranged rmapbt query): 0, or -1 with errno (a step under test). */
int krepro_getfsmap_all(const char *mnt);
/* FICLONERANGE of one 4 KiB block: src's at src_off over dst's at dst_off.
 * 0, or -1 with errno (the call under test: judged by the caller). */
int krepro_clone_block(int dst, off_t dst_off, int src, off_t src_off);

/*
 * The steps of a case, in order, for its evidence: "fallocate ok, fsync EIO"
 * (an errno by its name, "short" for a short transfer) and the errnos of
 * those that failed. Zero it before the first step.
 */
struct krepro_steps {
	char text[384];
	bool failed;
	unsigned int nerrs;
	int errs[8];
};
/* Record one step: its name, whether it worked, and errno if not (read it
 * in the statement after the call: argument order is unspecified). */
void krepro_step(struct krepro_steps *s, const char *name, bool ok, int err);
/* Did a step fail with err? */
bool krepro_steps_gave(const struct krepro_steps *s, int err);
/* A case's steps failed on fs: let go of it, then FAIL when XFS reported an
 * internal error in `file` for it (krepro_xfs_internal_error()), naming the
 * caller; else BROKEN, whatever the errno (any XFS check gives EUCLEAN). */
void krepro_xfs_steps_failed(int kmsg, struct krepro_loopfs *fs, const char *file,
			     const struct krepro_steps *st, const char *what);

#endif
