/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NVMe over Fabrics in one guest, for the nvme-*-timeout reproducers: an nvmet
 * target over configfs with a null_blk namespace, a host controller connected
 * through /dev/nvme-fabrics, and a timeout storm (fault injection that drops
 * completions, O_DIRECT reader threads) bounded by its race window hits, with
 * time and error recoveries as caps. Transport-independent; the transport is
 * data.
 */
#ifndef KREPRO_NVMF_H
#define KREPRO_NVMF_H

#include "krepro.h"
#include "net.h"

#include <stdbool.h>
#include <stddef.h>

struct krepro_nvmf {
	const char *trtype;	/* "tcp" or "rdma" */
	const char *traddr;	/* IPv4 address of the port */
	const char *trsvcid;	/* "4420" */
	const char *nqn;	/* subsystem NQN */
	const char *device;	/* namespace backing device, e.g. /dev/nullb0 */
	const char *host_opts;	/* extra /dev/nvme-fabrics options, comma-separated */
};

/* Setup check both reproducers share: BROKEN when t->device is missing. */
void krepro_nvmf_preflight(const struct krepro_nvmf *t);

/* nvmet subsystem (any host), namespace 1 on t->device, port 1 on
 * t->traddr:t->trsvcid, linked. BROKEN on error. */
void krepro_nvmet_setup(const struct krepro_nvmf *t);
/* Undo krepro_nvmet_setup() as far as it got; never BROKEN. */
void krepro_nvmet_cleanup(const struct krepro_nvmf *t);

/* The reproducers' setup: krepro_nvmf_preflight(), loopback up, then net()
 * when given (the transport's own links, on an rtnetlink socket), the target
 * (krepro_nvmet_setup()) and the host connected (krepro_nvmf_connect(), 60 s
 * for its disk). BROKEN on error. */
void krepro_nvmf_setup(const struct krepro_nvmf *t, void (*net)(struct mnl_socket *rtnl));

/* Connect the host; returns the controller instance (N of nvmeN), kept for
 * krepro_nvme_timeout_case() and krepro_nvmf_teardown(), and waits up to
 * `wait_s` seconds for /dev/nvmeNn1. BROKEN on error. */
int krepro_nvmf_connect(const struct krepro_nvmf *t, double wait_s);
/* Delete controller `instance` from a child process (krepro_run_child()),
 * waiting up to `wait_s` seconds: deleted when the child exited KREPRO_PASS.
 * A failed write is BROKEN in the child, with the error. */
struct krepro_child krepro_nvmf_delete(int instance, double wait_s);

struct krepro_nvme_storm {
	int instance;			/* controller nvmeN; the disk is nvmeNn1 */
	unsigned int threads;		/* O_DIRECT reader threads */
	unsigned int io_timeout_ms;	/* the disk's queue/io_timeout */
	unsigned int fail_percent;	/* fail_io_timeout probability */
	unsigned int max_hits;		/* bound: I/O timeouts during a teardown */
	double storm_s;			/* cap: seconds of storm */
	unsigned int max_recoveries;	/* cap: error recoveries seen in kmsg */
	double stall_s;			/* a read outstanding this long never completes */
};

/*
 * Run the storm and judge it. FAIL (own evidence) only on a read outstanding
 * longer than stall_s whose lost request the state shows first-hand
 * (nvme-stall.h: blk-mq holds no request while the reader waits); a longer
 * read without that is BROKEN, a task stuck in nvme code included. A new
 * kernel taint stops the storm with a REPORT line, not evidence: the host
 * counts the console's report as the bug only when it matches a signature.
 * PASS when the bound (max_hits) was reached clean, every read completed or
 * failed with an error, and the race window (nvme-window.h) was reached;
 * BROKEN when no timeout or no error recovery was seen, the window never
 * was, or a cap came before the bound.
 * Returns true on PASS.
 *
 * Completions are dropped only while the controller is live: during error
 * recovery and reconnects injection is off, so a reconnect is not held up
 * for NVME_IO_TIMEOUT (30 s) by requests it re-issues being dropped again.
 */
bool krepro_nvme_timeout_storm(const struct krepro_nvme_storm *s);

/*
 * The nvme-*-timeout case, on the controller krepro_nvmf_connect() made: the
 * storm with the suite's figures (README of nvme-tcp-timeout), then the
 * controller deleted, which must finish within a minute: a delete that does
 * not, or whose process is killed, is BROKEN (it names no code of the bug).
 */
void krepro_nvme_timeout_case(void);

/* Cleanup for those reproducers: delete the connected controller if it is
 * still there (bounded), then the target. Never BROKEN. */
void krepro_nvmf_teardown(const struct krepro_nvmf *t);

/* What the storm needs of the kernel, besides the transport's options. */
#define KREPRO_NVME_TIMEOUT_KCONFIGS \
	"CONFIG_BLK_DEV_NULL_BLK", "CONFIG_FAIL_IO_TIMEOUT", "CONFIG_FAULT_INJECTION_DEBUG_FS"

/*
 * The request requeued twice sits on two of blk-mq's request lists, which
 * CONFIG_DEBUG_LIST (nvme-timeout.config) catches: in nvme code (the
 * transport's functions, a regex such as "nvme_tcp_.*", or the core's
 * teardown cancelling requests), or later in blk-mq itself, when the requeue
 * work or a dispatch from kblockd next moves the request (nvme-tcp-timeout's
 * README, "With list debugging"): no function of the transport is on that
 * stack, by nature. Both reproducers' signatures, as array elements.
 */
#define KREPRO_NVME_LIST_SIGNATURES(transport_functions) \
	{ "LIST", "^list_(add|del) (corruption|double add)", \
	  transport_functions "|nvme_cancel_(request|tagset|admin_tagset)", "CONFIG_DEBUG_LIST" }, \
	{ "LIST", "^list_(add|del) (corruption|double add)", \
	  "blk_mq_(dispatch_rq_list|requeue_work)", "CONFIG_DEBUG_LIST" }

/*
 * The struct krepro_test fields both reproducers share. Their own evidence is
 * the stalled read whose request was lost (nvmf.c): blk-mq's debugfs is where
 * the state shows it holds none, so without it the stall is BROKEN. The storm
 * needs two CPUs and the host to itself (a race).
 */
#define KREPRO_NVME_TIMEOUT_FIELDS \
	.own_evidence = true, .own_detectors = "CONFIG_BLK_DEBUG_FS", .min_cpus = 2, \
	.alone = true, .timeout = 300

#endif
