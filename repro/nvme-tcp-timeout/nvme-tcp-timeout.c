// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-tcp-timeout: with the bug, nvme-tcp serialises its timeout handler and
 * controller teardown with teardown_lock. Teardown cancels every request while
 * a timeout handler waits on the mutex; the handler then completes the
 * cancelled request again (it may be requeued, restarted or freed by then).
 * The fix syncs the queues' timeout work before cancelling and drops the
 * mutex. Upstream fix d6f66210f4b1; seed 007. See README.md.
 *
 * Target and host in one guest: nvmet-tcp on 127.0.0.1:4420 over null_blk,
 * the host connected through /dev/nvme-fabrics; fault injection drops
 * completions so requests time out while the transport stays up, and the
 * first timeout starts error recovery (a teardown); the timeouts that fire
 * while it tears down are the race. No window patch: nothing is widened.
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "nvmf.h"

static const struct krepro_nvmf target = {
	.trtype = "tcp",
	.traddr = "127.0.0.1",
	.trsvcid = "4420",
	.nqn = "krepro-nvme-tcp-timeout",
	.device = "/dev/nullb0",
	/* Reconnect after 1 s, forever: the controller must survive the storm. */
	.host_opts = "reconnect_delay=1,ctrl_loss_tmo=-1",
};

static void setup(void)
{
	krepro_nvmf_setup(&target, NULL);
}

static void cleanup(void)
{
	krepro_nvmf_teardown(&target);
}

static const char *const kconfigs[] = { "CONFIG_NVME_TCP", "CONFIG_NVME_TARGET_TCP",
					KREPRO_NVME_TIMEOUT_KCONFIGS, NULL };

static const struct krepro_case cases[] = {
	{ "timeout-storm", krepro_nvme_timeout_case },
	{ NULL, NULL },
};

/*
 * The bug's kernel report: the request teardown cancelled and requeued is
 * completed again by the timeout handler and requeued twice,
 * BUG_ON(RQF_SOFTBARRIER) in blk_mq_add_to_requeue_list() (README, "What a
 * FAIL looks like": "kernel BUG at block/blk-mq.c:1493!", nvme_tcp_timeout in
 * the trace). The stalled read, the bug's other FAIL, is the reproducer's own.
 */
static const struct krepro_signature signatures[] = {
	/* BUG_ON: on every kernel. */
	{ "BUG", "^kernel BUG at block/blk-mq\\.c:[0-9]+$", "nvme_tcp_timeout", NULL },
	KREPRO_NVME_LIST_SIGNATURES("nvme_tcp_.*"),
	{ NULL },
};

static const struct krepro_test test = {
	.name = "nvme-tcp-timeout",
	.summary = "nvme-tcp timeout handler races controller teardown: double completion",
	.fix_commit = "d6f66210f4b1 (\"nvme-tcp: avoid race between time out and tear down\")",
	.bug_commit = "236187c4ed19 (\"nvme-tcp: fix timeout handler\")",
	.seed = "007-patch-nvme-tcp-avoid-race-between-time-out-and-tear-down.patch",
	.needs_kconfigs = kconfigs,
	.signatures = signatures,
	KREPRO_NVME_TIMEOUT_FIELDS,
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
