// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-rdma-timeout: the nvme-tcp-timeout race on nvme-rdma. With the bug,
 * nvme-rdma serialises its timeout handler and controller teardown with
 * teardown_lock: teardown cancels every request while a timeout handler waits
 * on the mutex, and the handler then completes the cancelled request again.
 * The fix syncs the queues' timeout work before cancelling and drops the
 * mutex. Upstream fix 3017013dcc82; seed 006. See README.md.
 *
 * Target and host in one guest over soft-RoCE: a veth pair, rdma_rxe on
 * veth0 (iproute2's rdma tool), nvmet-rdma on 10.0.0.1:4420 over null_blk.
 * The storm and the judging are nvme-tcp-timeout's (repro/lib/nvmf.c); no
 * window patch: nothing is widened.
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "net.h"
#include "nvmf.h"
#include "sys.h"

#include <sys/stat.h>

static const struct krepro_nvmf target = {
	.trtype = "rdma",
	.traddr = "10.0.0.1",
	.trsvcid = "4420",
	.nqn = "krepro-nvme-rdma-timeout",
	.device = "/dev/nullb0",
	.host_opts = "reconnect_delay=1,ctrl_loss_tmo=-1",
};

/* The soft-RoCE link the target listens on. */
static void rxe_link(struct mnl_socket *rtnl)
{
	static const char *const rxe[] = { "rdma", "link", "add", "rxe0", "type", "rxe",
					   "netdev", "veth0", NULL };

	krepro_veth_add(rtnl, "veth0", "veth1", -1);
	krepro_addr_add(rtnl, "veth0", "10.0.0.1/24");
	krepro_link_up(rtnl, "veth0");
	krepro_link_up(rtnl, "veth1");
	krepro_must_run(rxe);
}

static void setup(void)
{
	krepro_nvmf_setup(&target, rxe_link);
}

static void cleanup(void)
{
	static const char *const rxe_del[] = { "rdma", "link", "delete", "rxe0", NULL };
	struct stat st;

	krepro_nvmf_teardown(&target);
	if (stat("/sys/class/infiniband/rxe0", &st) == 0)
		krepro_run_cmd(rxe_del);
}

static const char *const kconfigs[] = { "CONFIG_NVME_RDMA", "CONFIG_NVME_TARGET_RDMA",
					"CONFIG_RDMA_RXE", "CONFIG_VETH",
					KREPRO_NVME_TIMEOUT_KCONFIGS, NULL };

static const struct krepro_case cases[] = {
	{ "timeout-storm", krepro_nvme_timeout_case },
	{ NULL, NULL },
};

/*
 * The bug's kernel reports (README, "What a FAIL looks like", and the runs
 * under Measured), each with a function of nvme-rdma in the crashing task's
 * call trace: the timeout handler completing a request whose memory
 * teardown freed (nvme_rdma_complete_rq from nvme_rdma_timeout); a request
 * started twice (WARN_ON_ONCE in blk_mq_start_request, which 6.1 reaches
 * from nvme_rdma_queue_rq). The null-pointer dereference in
 * blk_mq_dispatch_rq_list that followed that WARNING is not declared: it
 * names no nvme function, came only after the WARNING, which already makes
 * the run FAIL, and alone it would be OTHER, as the refcount_t reports
 * after it are. The stalled read is the reproducer's own evidence.
 */
static const struct krepro_signature signatures[] = {
	{ "KASAN", "^KASAN: (slab-)?use-after-free in nvme_rdma_complete_rq$", "nvme_rdma_.*", "CONFIG_KASAN" },
	/* WARN_ON_ONCE: on every kernel. */
	{ "WARNING", "^WARNING in blk_mq_start_request$", "nvme_rdma_.*", NULL },
	KREPRO_NVME_LIST_SIGNATURES("nvme_rdma_.*"),
	{ NULL },
};

static const struct krepro_test test = {
	.name = "nvme-rdma-timeout",
	.summary = "nvme-rdma timeout handler races controller teardown: double completion",
	.fix_commit = "3017013dcc82 (\"nvme-rdma: avoid race between time out and tear down\")",
	.bug_commit = "0475a8dcbcee (\"nvme-rdma: fix timeout handler\")",
	.seed = "006-patch-nvme-rdma-avoid-race-between-time-out-and-tear-down.patch",
	.needs_kconfigs = kconfigs,
	.signatures = signatures,
	KREPRO_NVME_TIMEOUT_FIELDS,
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
