/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Netfilter rules without the nft and iptables tools (nfrules.c, library
 * krepro_nfrules): nf_tables batches built with libnftnl, and the legacy
 * xtables tables replaced whole through IPT_SO_SET_REPLACE /
 * IP6T_SO_SET_REPLACE, as iptables-legacy does it.
 */
#ifndef KREPRO_NFRULES_H
#define KREPRO_NFRULES_H

#include "net.h"

struct mnl_nlmsg_batch;
struct nftnl_expr;

/* --- nf_tables: one batch, committed as a whole --- */

struct krepro_nft_batch {
	struct mnl_nlmsg_batch *b;
	uint32_t seq;
	int nmsgs;		/* messages that want an ACK */
	char buf[16384];
};

void krepro_nft_begin(struct krepro_nft_batch *nb);
/* family: NFPROTO_IPV4, NFPROTO_IPV6, ... */
void krepro_nft_add_table(struct krepro_nft_batch *nb, uint16_t family, const char *table);
void krepro_nft_del_table(struct krepro_nft_batch *nb, uint16_t family, const char *table);
/* A base chain: type ("filter", "route", "nat"), hook (NF_INET_*), priority;
 * policy accept. */
void krepro_nft_add_base_chain(struct krepro_nft_batch *nb, uint16_t family, const char *table,
			       const char *chain, const char *type, unsigned int hook,
			       int priority);
/* A rule of the expressions exprs (NULL-terminated, made with
 * nftnl_expr_alloc(); the rule takes them), appended to chain. */
void krepro_nft_add_rule(struct krepro_nft_batch *nb, uint16_t family, const char *table,
			 const char *chain, struct nftnl_expr *const exprs[]);
/* Send the batch on nfnl (NETLINK_NETFILTER) and wait for every ACK:
 * 0 or -errno (the kernel's error, or -ETIMEDOUT after 5 s). */
int krepro_nft_commit(struct krepro_nft_batch *nb, struct mnl_socket *nfnl);
/* The packets every counter of table's rules counted. BROKEN on error. */
uint64_t krepro_nft_counted(struct mnl_socket *nfnl, uint16_t family, const char *table);

/* --- xtables (legacy) --- */

/*
 * Replace `table` ("mangle", "filter") of family (AF_INET, AF_INET6) with one
 * whose every hook's policy is ACCEPT and, when target is not NULL, with one
 * rule in `hook` (NF_INET_*) before its policy: no match, that target (an
 * xt_entry_target and its data, tsize bytes, XT_ALIGNed). Returns the
 * packets the rule at that place counted in the table replaced (0 when it
 * had no rule there). SKIP when the kernel has no such table.
 */
uint64_t krepro_xt_replace(int family, const char *table, unsigned int hook,
			   const void *target, size_t tsize);

#endif
