// SPDX-License-Identifier: GPL-2.0
/*
 * nf_tables batches through libnftnl, and xtables tables replaced whole
 * (nfrules.h).
 */
#define _GNU_SOURCE
#include "nfrules.h"

/* Before the kernel's headers: glibc's in.h defines what linux/in.h would. */
#include <netinet/in.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* --- nf_tables --- */

void krepro_nft_begin(struct krepro_nft_batch *nb)
{
	nb->b = SAFE_PTR(mnl_nlmsg_batch_start(nb->buf, sizeof(nb->buf)));
	nb->seq = (uint32_t)time(NULL);
	nb->nmsgs = 0;
	nftnl_batch_begin(mnl_nlmsg_batch_current(nb->b), nb->seq++);
	mnl_nlmsg_batch_next(nb->b);
}

/* The next message's header in the batch; it wants an ACK. */
static struct nlmsghdr *nft_msg(struct krepro_nft_batch *nb, uint16_t type, uint16_t family,
				uint16_t flags)
{
	nb->nmsgs++;
	return nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(nb->b), type, family,
				     flags | NLM_F_ACK, nb->seq++);
}

static void table_msg(struct krepro_nft_batch *nb, uint16_t type, uint16_t family,
		      uint16_t flags, const char *table)
{
	struct nftnl_table *t = SAFE_PTR(nftnl_table_alloc());

	nftnl_table_set_str(t, NFTNL_TABLE_NAME, table);
	nftnl_table_nlmsg_build_payload(nft_msg(nb, type, family, flags), t);
	mnl_nlmsg_batch_next(nb->b);
	nftnl_table_free(t);
}

void krepro_nft_add_table(struct krepro_nft_batch *nb, uint16_t family, const char *table)
{
	table_msg(nb, NFT_MSG_NEWTABLE, family, NLM_F_CREATE, table);
}

void krepro_nft_del_table(struct krepro_nft_batch *nb, uint16_t family, const char *table)
{
	table_msg(nb, NFT_MSG_DELTABLE, family, 0, table);
}

void krepro_nft_add_base_chain(struct krepro_nft_batch *nb, uint16_t family, const char *table,
			       const char *chain, const char *type, unsigned int hook,
			       int priority)
{
	struct nftnl_chain *c = SAFE_PTR(nftnl_chain_alloc());

	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, chain);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, hook);
	nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, priority);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	nftnl_chain_nlmsg_build_payload(nft_msg(nb, NFT_MSG_NEWCHAIN, family, NLM_F_CREATE), c);
	mnl_nlmsg_batch_next(nb->b);
	nftnl_chain_free(c);
}

void krepro_nft_add_rule(struct krepro_nft_batch *nb, uint16_t family, const char *table,
			 const char *chain, struct nftnl_expr *const exprs[])
{
	struct nftnl_rule *r = SAFE_PTR(nftnl_rule_alloc());

	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
	for (struct nftnl_expr *const *e = exprs; *e; e++)
		nftnl_rule_add_expr(r, *e);
	nftnl_rule_nlmsg_build_payload(nft_msg(nb, NFT_MSG_NEWRULE, family,
					       NLM_F_CREATE | NLM_F_APPEND), r);
	mnl_nlmsg_batch_next(nb->b);
	nftnl_rule_free(r);
}

int krepro_nft_commit(struct krepro_nft_batch *nb, struct mnl_socket *nfnl)
{
	char rbuf[8192];
	int ret = 0;

	nftnl_batch_end(mnl_nlmsg_batch_current(nb->b), nb->seq++);
	mnl_nlmsg_batch_next(nb->b);
	if (mnl_socket_sendto(nfnl, mnl_nlmsg_batch_head(nb->b), mnl_nlmsg_batch_size(nb->b)) < 0)
		ret = -errno;
	for (int acked = 0; !ret && acked < nb->nmsgs; acked++) {
		struct pollfd pfd = { .fd = mnl_socket_get_fd(nfnl), .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 5000) <= 0) {
			ret = -ETIMEDOUT;
			break;
		}
		n = mnl_socket_recvfrom(nfnl, rbuf, sizeof(rbuf));
		if (n < 0 || mnl_cb_run(rbuf, (size_t)n, 0, mnl_socket_get_portid(nfnl),
					NULL, NULL) < 0)
			ret = -errno;
	}
	mnl_nlmsg_batch_stop(nb->b);
	return ret;
}

static int counter_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nftnl_expr_iter *it;
	struct nftnl_expr *e;

	if (!r || nftnl_rule_nlmsg_parse(nlh, r) < 0) {
		nftnl_rule_free(r);
		return MNL_CB_ERROR;
	}
	it = nftnl_expr_iter_create(r);
	while (it && (e = nftnl_expr_iter_next(it)))
		if (!strcmp(nftnl_expr_get_str(e, NFTNL_EXPR_NAME), "counter"))
			*(uint64_t *)data += nftnl_expr_get_u64(e, NFTNL_EXPR_CTR_PACKETS);
	nftnl_expr_iter_destroy(it);
	nftnl_rule_free(r);
	return MNL_CB_OK;
}

uint64_t krepro_nft_counted(struct mnl_socket *nfnl, uint16_t family, const char *table)
{
	char buf[8192];
	struct nftnl_rule *r = SAFE_PTR(nftnl_rule_alloc());
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETRULE, family, NLM_F_DUMP, 0);
	uint64_t packets = 0;
	int ret;

	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
	nftnl_rule_nlmsg_build_payload(nlh, r);
	nftnl_rule_free(r);
	ret = krepro_nl_request(nfnl, nlh, counter_cb, &packets);
	if (ret)
		krepro_broken("read the counters of nft table %s: %s", table, strerror(-ret));
	return packets;
}

/* --- xtables --- */

/* ipt_replace and ip6t_replace have the same header; only the entry
 * header differs. */
_Static_assert(offsetof(struct ipt_replace, entries) == offsetof(struct ip6t_replace, entries),
	       "ipt_replace and ip6t_replace headers differ");
_Static_assert(sizeof(struct ipt_getinfo) == sizeof(struct ip6t_getinfo),
	       "ipt_getinfo and ip6t_getinfo differ");

/* An entry that matches every packet, with target; returns its size. */
static size_t xt_put(char *p, bool v6, const void *target, size_t tsize)
{
	size_t esize = v6 ? sizeof(struct ip6t_entry) : sizeof(struct ipt_entry);

	if (v6) {
		struct ip6t_entry *e = (struct ip6t_entry *)p;

		e->target_offset = (uint16_t)esize;
		e->next_offset = (uint16_t)(esize + tsize);
	} else {
		struct ipt_entry *e = (struct ipt_entry *)p;

		e->target_offset = (uint16_t)esize;
		e->next_offset = (uint16_t)(esize + tsize);
	}
	memcpy(p + esize, target, tsize);
	return esize + tsize;
}

/* The entries of the new table into repl: per valid hook the rule (in
 * `hook`, when target is given), then the policy; the closing error entry.
 * Returns their count; their size goes to repl->size. */
static unsigned int xt_entries(struct ipt_replace *repl, bool v6, unsigned int valid_hooks,
			       unsigned int hook, const void *target, size_t tsize)
{
	static const struct xt_standard_target accept = {
		.target.u.user.target_size = XT_ALIGN(sizeof(accept)),
		.verdict = -NF_ACCEPT - 1,
	};
	static const struct xt_error_target error = {
		.target.u.user.target_size = XT_ALIGN(sizeof(error)),
		.target.u.user.name = XT_ERROR_TARGET,
		.errorname = XT_ERROR_TARGET,
	};
	char *entries = (char *)repl + offsetof(struct ipt_replace, entries);
	unsigned int n = 0;
	size_t off = 0;

	_Static_assert(sizeof(accept) == XT_ALIGN(sizeof(accept)) &&
		       sizeof(error) == XT_ALIGN(sizeof(error)), "targets not aligned");
	for (unsigned int h = 0; h < NF_INET_NUMHOOKS; h++) {
		if (!(valid_hooks & (1u << h)))
			continue;
		repl->hook_entry[h] = (unsigned int)off;
		if (target && h == hook) {
			n++;
			off += xt_put(entries + off, v6, target, tsize);
		}
		repl->underflow[h] = (unsigned int)off;
		off += xt_put(entries + off, v6, &accept, sizeof(accept));
		n++;
	}
	off += xt_put(entries + off, v6, &error, sizeof(error));
	repl->size = (unsigned int)off;
	return n + 1;
}

uint64_t krepro_xt_replace(int family, const char *table, unsigned int hook,
			   const void *target, size_t tsize)
{
	bool v6 = family == AF_INET6;
	int level = v6 ? SOL_IPV6 : SOL_IP;
	int fd = (int)SAFE(socket(family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW));
	struct ipt_getinfo info = { 0 };
	socklen_t len = sizeof(info);
	static char buf[8192] __attribute__((aligned(8)));
	struct ipt_replace *repl = (struct ipt_replace *)buf;
	struct xt_counters *counters;
	unsigned int rule_index = 0;
	uint64_t pcnt = 0;

	snprintf(info.name, sizeof(info.name), "%s", table);
	if (getsockopt(fd, level, v6 ? IP6T_SO_GET_INFO : IPT_SO_GET_INFO, &info, &len) < 0) {
		if (errno == ENOENT || errno == ENOPROTOOPT)
			krepro_skip("no %s %s table: %s", v6 ? "IPv6" : "IPv4", table,
				    strerror(errno));
		krepro_broken("%s %s table info: %s", v6 ? "IPv6" : "IPv4", table, strerror(errno));
	}
	counters = SAFE_PTR(calloc(info.num_entries, sizeof(*counters)));
	memset(buf, 0, sizeof(buf));
	repl->num_entries = xt_entries(repl, v6, info.valid_hooks, hook, target, tsize);
	snprintf(repl->name, sizeof(repl->name), "%s", table);
	repl->valid_hooks = info.valid_hooks;
	repl->num_counters = info.num_entries;
	repl->counters = counters;
	if (setsockopt(fd, level, v6 ? IP6T_SO_SET_REPLACE : IPT_SO_SET_REPLACE, buf,
		       (socklen_t)(offsetof(struct ipt_replace, entries) + repl->size)) < 0)
		krepro_broken("replace the %s %s table: %s", v6 ? "IPv6" : "IPv4", table,
			      strerror(errno));
	/* The old table had a rule where this puts one (one entry per valid
	 * hook before `hook`): the kernel gave its counters back. */
	if (!target && info.num_entries == repl->num_entries + 1) {
		for (unsigned int h = 0; h < hook; h++)
			rule_index += !!(info.valid_hooks & (1u << h));
		pcnt = counters[rule_index].pcnt;
	}
	free(counters);
	close(fd);
	return pcnt;
}
