// SPDX-License-Identifier: GPL-2.0
/*
 * nft-wg-reroute: a netfilter rule that changes a packet's mark on the local
 * output path makes the kernel route the packet again (ip_route_me_harder(),
 * ip6_route_me_harder()). With the bug those functions take the socket from
 * skb->sk. WireGuard's encrypted UDP packet still carries the skb->sk of the
 * plaintext packet's socket; when that socket is bound to wg0, the outer
 * packet is routed back into wg0 instead of out to the peer, and the traffic
 * stops as soon as the rule is in. Upstream fix 46d6c5ae953c. See README.md.
 *
 * ns1 (this process) and ns2 (the echo server) joined by veth; wg0 in each.
 * Cases: the outer (tunnel) packets over IPv4 or IPv6, re-routed by an nft
 * route chain or the legacy mangle table; inside, echoes over IPv4 and IPv6
 * from UDP sockets bound to wg0 (SO_BINDTODEVICE).
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "net.h"
#include "nfrules.h"
#include "wg.h"

/* Before the kernel's headers: glibc's in.h defines what linux/in.h would. */
#include <netinet/in.h>
#include <errno.h>
#include <stdio.h>		/* before libnftnl's headers, which use FILE */
#include <libnftnl/expr.h>
#include <linux/if_link.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/x_tables.h>
#include <linux/netfilter/xt_mark.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define ECHO_PORT	7777
#define ECHOES		3	/* per inner family, with the rule in */
#define ECHO_MS		2000	/* wait for each echo */
#define BASELINE_S	30	/* first echo (handshake included), no rule */
#define MARK		1
#define NFT_TABLE	"krepro"

/* [side][inner family: 0 IPv4, 1 IPv6] */
static const char *const wg_cidr[2][2] = {
	{ "192.168.241.1/24", "fd00::1/64" }, { "192.168.241.2/24", "fd00::2/64" } };
static const char *const veth_cidr[2][2] = {
	{ "10.0.0.1/24", "fd10::1/64" }, { "10.0.0.2/24", "fd10::2/64" } };
static const uint16_t wg_port[2] = { 51001, 51002 };
static const char *const fam_name[2] = { "IPv4", "IPv6" };

/* ns1 and ns2: the namespace, netlink sockets opened inside it, wg0. */
static struct side {
	int nsfd;
	struct mnl_socket *rtnl, *genl;
	struct krepro_wg wg;
} side[2];
static struct mnl_socket *nfnl;	/* ns1 */
static pid_t echo_pid;

static int fam_af(int fam)
{
	return fam ? AF_INET6 : AF_INET;
}

/* Side me's one peer, the other side, reached at its veth address of family
 * fam_outer; with allowed_ips, the other side's wg0 addresses (as hosts). */
static void wg_set_peer(int me, int fam_outer, bool allowed_ips)
{
	int other = !me;
	struct krepro_addr endpoint, allowed[2];

	krepro_parse_addr(veth_cidr[other][fam_outer], &endpoint);
	for (int fam = 0; fam < 2; fam++) {
		krepro_parse_addr(wg_cidr[other][fam], &allowed[fam]);
		allowed[fam].prefixlen = fam ? 128 : 32;
	}
	krepro_wg_set_peer(&side[me].wg, side[other].wg.pub, &endpoint, wg_port[other], allowed,
			   allowed_ips ? 2 : 0);
}

/* One echo from a UDP socket bound to wg0 to ns2's wg0 address of family
 * fam (krepro_udp_echo_until()), its wait ended early by lost() if given. */
static int echo(int fam, int timeout_ms, bool (*lost)(void *), void *arg)
{
	struct krepro_addr dst;

	krepro_parse_addr(wg_cidr[1][fam], &dst);
	return krepro_udp_echo_until(&dst, ECHO_PORT, "wg0", timeout_ms, lost, arg);
}

/* --- the rules: nftables route chains, or the legacy mangle tables --- */

/* In ip and ip6: table krepro { chain out { type route hook output priority
 * mangle; counter meta mark set 1 } } (what `nft` would send). */
static void nft_install(void)
{
	struct krepro_nft_batch nb;
	int ret;

	krepro_nft_begin(&nb);
	for (int fam = 0; fam < 2; fam++) {
		uint16_t nfproto = fam ? NFPROTO_IPV6 : NFPROTO_IPV4;
		struct nftnl_expr *exprs[4] = {
			SAFE_PTR(nftnl_expr_alloc("counter")),
			SAFE_PTR(nftnl_expr_alloc("immediate")),
			SAFE_PTR(nftnl_expr_alloc("meta")),
			NULL,
		};

		nftnl_expr_set_u32(exprs[1], NFTNL_EXPR_IMM_DREG, NFT_REG_1);
		nftnl_expr_set_u32(exprs[1], NFTNL_EXPR_IMM_DATA, MARK);
		nftnl_expr_set_u32(exprs[2], NFTNL_EXPR_META_KEY, NFT_META_MARK);
		nftnl_expr_set_u32(exprs[2], NFTNL_EXPR_META_SREG, NFT_REG_1);
		krepro_nft_add_table(&nb, nfproto, NFT_TABLE);
		/* -150: NF_IP_PRI_MANGLE */
		krepro_nft_add_base_chain(&nb, nfproto, NFT_TABLE, "out", "route",
					  NF_INET_LOCAL_OUT, -150);
		krepro_nft_add_rule(&nb, nfproto, NFT_TABLE, "out", exprs);
	}
	ret = krepro_nft_commit(&nb, nfnl);
	if (ret == -EOPNOTSUPP || ret == -ENOENT)
		krepro_skip("nf_tables refused the route chain: %s", strerror(-ret));
	if (ret)
		krepro_broken("install the nft route chains: %s", strerror(-ret));
}

/* Packets the rule of family fam counted; then both tables are deleted. */
static void nft_remove(uint64_t packets[2])
{
	struct krepro_nft_batch nb;
	int ret;

	packets[0] = krepro_nft_counted(nfnl, NFPROTO_IPV4, NFT_TABLE);
	packets[1] = krepro_nft_counted(nfnl, NFPROTO_IPV6, NFT_TABLE);
	krepro_nft_begin(&nb);
	krepro_nft_del_table(&nb, NFPROTO_IPV4, NFT_TABLE);
	krepro_nft_del_table(&nb, NFPROTO_IPV6, NFT_TABLE);
	ret = krepro_nft_commit(&nb, nfnl);
	if (ret)
		krepro_broken("delete the nft tables: %s", strerror(-ret));
}

/*
 * The legacy mangle tables, as iptables-legacy sets them: every hook's
 * policy ACCEPT and, with the rule, "-A OUTPUT -j MARK --set-xmark 1" first
 * in OUTPUT.
 */
static const struct {
	struct xt_entry_target target;
	struct xt_mark_tginfo2 info;
} mark_target = {
	.target.u.user.target_size = XT_ALIGN(sizeof(mark_target)),
	.target.u.user.name = "MARK",
	.target.u.user.revision = 2,
	.info = { .mark = MARK, .mask = 0xffffffff },
};
_Static_assert(sizeof(mark_target) == XT_ALIGN(sizeof(mark_target)), "MARK not aligned");

static void xt_install(void)
{
	for (int fam = 0; fam < 2; fam++)
		krepro_xt_replace(fam_af(fam), "mangle", NF_INET_LOCAL_OUT, &mark_target,
				  sizeof(mark_target));
}

static void xt_remove(uint64_t packets[2])
{
	for (int fam = 0; fam < 2; fam++)
		packets[fam] = krepro_xt_replace(fam_af(fam), "mangle", NF_INET_LOCAL_OUT, NULL, 0);
}

/* --- the cases --- */

struct counters {
	struct krepro_wg_state wg;
	struct rtnl_link_stats64 wg0, veth;
};

static void snapshot(struct counters *c)
{
	krepro_wg_get(&side[0].wg, &c->wg);
	krepro_link_stats(side[0].rtnl, "wg0", &c->wg0);
	krepro_link_stats(side[0].rtnl, "veth1", &c->veth);
}

static uint64_t wg0_tx_errors(void)
{
	struct rtnl_link_stats64 st;

	krepro_link_stats(side[0].rtnl, "wg0", &st);
	return st.tx_errors;
}

/*
 * An echo's wait, given up: wg0 counted a tx_error since it was sent. Only
 * an echo's outer packet re-routed into wg0 counts one (judge(), below), and
 * that packet was the echo's only copy: it cannot come back, so waiting out
 * ECHO_MS would only make a FAIL 2 s slower per family and rule.
 */
static bool outer_failed(void *arg)
{
	return wg0_tx_errors() > *(const uint64_t *)arg;
}

struct echo_try {
	int fam;
	int ret;	/* the last echo's: 0 or -errno */
};

/* One echo of a second, as krepro_poll_until() calls it. */
static bool echo_came_back(void *arg)
{
	struct echo_try *attempt = arg;

	attempt->ret = echo(attempt->fam, 1000, NULL, NULL);
	return attempt->ret == 0;
}

/* Point both peers at each other's veth address of the outer family, and
 * wait for an echo of each inner family with no rule in place. */
static void baseline(int outer)
{
	wg_set_peer(0, outer, false);
	wg_set_peer(1, outer, false);
	for (int fam = 0; fam < 2; fam++) {
		struct echo_try attempt = { .fam = fam, .ret = -ETIMEDOUT };

		/* Echoes one after another, a pause after one that fails at once. */
		if (!krepro_poll_until(echo_came_back, &attempt, BASELINE_S, 0.1, NULL))
			krepro_broken("no %s echo over wg0 without any rule (outer %s) in %d s: %s",
				      fam_name[fam], fam_name[outer], BASELINE_S,
				      strerror(-attempt.ret));
	}
}

/* What one case saw with its rule in. */
struct seen {
	int got[2], sent[2], err[2];	/* echoes per inner family; the first error */
	uint64_t packets[2];		/* what each family's rule counted */
	struct counters before, after;
};

/* An echo's error as the verdict quotes it; ECANCELED: outer_failed(). */
static const char *echo_error(int err)
{
	if (err == ECANCELED)
		return "not waited for, wg0 counted a tx_error after it was sent";
	return err ? strerror(err) : "";
}

/*
 * The verdict reads the counters, not only the echoes. Each echo sent is one
 * inner packet through wg0 and one outer UDP packet from WireGuard, and every
 * one of those passes the outer family's rule, whose mark change makes the
 * kernel route it again (the code under test). With the fix the outer
 * packets leave through veth1: wg0 counts them in tx_packets (iptunnel_xmit()
 * and ip6tunnel_xmit() count a packet sent) and no tx_errors. With the bug
 * each lost echo's outer packet counts one wg0 tx_error: routed back into
 * wg0, wg_xmit() finds no peer for the veth address and counts it (IPv4);
 * or the re-route finds no route, the hook drops the packet and
 * ip6tunnel_xmit() counts it (IPv6).
 */
static void judge(int outer, const char *rule, const struct seen *sn)
{
	const struct counters *before = &sn->before, *after = &sn->after;
	const int *got = sn->got, *sent = sn->sent, *err = sn->err;
	const uint64_t *packets = sn->packets;
	int outer_pkts, lost;
	uint64_t wg_tx, wg_rx, wg0_tx, wg0_err, veth_tx;
	char seen[256];

	wg_tx = after->wg.tx - before->wg.tx;
	wg_rx = after->wg.rx - before->wg.rx;
	wg0_tx = after->wg0.tx_packets - before->wg0.tx_packets;
	wg0_err = after->wg0.tx_errors - before->wg0.tx_errors;
	veth_tx = after->veth.tx_packets - before->veth.tx_packets;
	outer_pkts = sent[0] + sent[1];
	lost = outer_pkts - got[0] - got[1];
	krepro_info("outer %s through %s: %s rule counted %llu packets, %s rule %llu",
		    fam_name[outer], outer ? "ip6_route_me_harder()" : "ip_route_me_harder()",
		    fam_name[0], (unsigned long long)packets[0], fam_name[1],
		    (unsigned long long)packets[1]);
	krepro_info("with the rule: wg peer tx +%llu rx +%llu bytes; wg0 tx_packets +%llu "
		    "tx_errors +%llu; veth1 tx_packets +%llu",
		    (unsigned long long)wg_tx, (unsigned long long)wg_rx,
		    (unsigned long long)wg0_tx, (unsigned long long)wg0_err,
		    (unsigned long long)veth_tx);
	/* The outer family's rule saw its family's inner echoes and the outer
	 * packet of every echo (and, with the bug, ICMP errors): at least that. */
	if (packets[outer] < (uint64_t)(sent[outer] + outer_pkts))
		krepro_broken("the %s %s rule saw %llu packets, fewer than the %d inner echoes "
			      "of its family and the %d outer packets: WireGuard's packets did "
			      "not all pass it", rule, fam_name[outer],
			      (unsigned long long)packets[outer], sent[outer], outer_pkts);
	if (!wg_tx)
		krepro_broken("WireGuard sent nothing to its peer (peer tx +0 bytes): the echoes "
			      "never reached the tunnel");
	snprintf(seen, sizeof(seen), "%s %d/%d%s%s, %s %d/%d%s%s", fam_name[0], got[0], sent[0],
		 err[0] ? " error: " : "", echo_error(err[0]), fam_name[1], got[1], sent[1],
		 err[1] ? " error: " : "", echo_error(err[1]));
	if (lost) {
		if (wg0_err < (uint64_t)lost)
			krepro_broken("echoes over wg0 lost once the %s is in (outer %s), echoes back: "
				      "%s; but wg0 counted %llu tx_errors for %d lost echoes: they "
				      "were lost elsewhere, not shown to be the re-route", rule,
				      fam_name[outer], seen, (unsigned long long)wg0_err, lost);
		krepro_fail("echoes over wg0 lost once the %s is in (outer %s), echoes back: %s; "
			    "wg0 tx_errors +%llu for %d lost (peer tx +%llu rx +%llu bytes): the "
			    "re-routed outer packets failed in wg0 instead of leaving for the peer",
			    rule, fam_name[outer], seen, (unsigned long long)wg0_err, lost,
			    (unsigned long long)wg_tx, (unsigned long long)wg_rx);
		return;
	}
	if (wg0_err || wg0_tx < (uint64_t)outer_pkts || veth_tx < (uint64_t)outer_pkts)
		krepro_broken("every echo came back with the %s in (outer %s), but wg0 counted "
			      "tx_packets +%llu tx_errors +%llu and veth1 tx_packets +%llu for %d "
			      "outer packets: not all of them went out through veth1", rule,
			      fam_name[outer], (unsigned long long)wg0_tx,
			      (unsigned long long)wg0_err, (unsigned long long)veth_tx, outer_pkts);
	krepro_pass("every echo over wg0 came back with the %s in (outer %s): %s; the rule "
		    "re-routed WireGuard's %d outer packets (%s rule %llu packets) and they "
		    "left through veth1 (wg0 tx_packets +%llu tx_errors +0, veth1 tx_packets "
		    "+%llu)", rule, fam_name[outer], seen, outer_pkts, fam_name[outer],
		    (unsigned long long)packets[outer], (unsigned long long)wg0_tx,
		    (unsigned long long)veth_tx);
}

static void run(int outer, bool nft)
{
	struct seen sn = { 0 };

	baseline(outer);
	snapshot(&sn.before);
	if (nft)
		nft_install();
	else
		xt_install();
	/* A family's first lost echo is the evidence: its others would only
	 * wait out ECHO_MS each (a FAIL run took ~50 s when they did). */
	for (int fam = 0; fam < 2; fam++)
		for (int i = 0; i < ECHOES && !sn.err[fam]; i++) {
			uint64_t errors = wg0_tx_errors();
			int ret = echo(fam, ECHO_MS, outer_failed, &errors);

			sn.sent[fam]++;
			if (!ret)
				sn.got[fam]++;
			else
				sn.err[fam] = -ret;
		}
	snapshot(&sn.after);
	if (nft)
		nft_remove(sn.packets);
	else
		xt_remove(sn.packets);
	judge(outer, nft ? "nft route chain" : "mangle MARK rule", &sn);
}

static void run_nft_outer_ipv4(void) { run(0, true); }
static void run_nft_outer_ipv6(void) { run(1, true); }
static void run_xt_outer_ipv4(void) { run(0, false); }
static void run_xt_outer_ipv6(void) { run(1, false); }

static void setup(void)
{
	for (int i = 0; i < 2; i++) {
		side[i].nsfd = krepro_netns_new();
		side[i].rtnl = krepro_nl_open(NETLINK_ROUTE);
		side[i].genl = krepro_nl_open(NETLINK_GENERIC);
		krepro_link_up(side[i].rtnl, "lo");
	}
	krepro_netns_enter(side[0].nsfd);
	nfnl = krepro_nl_open(NETLINK_NETFILTER);
	krepro_veth_add(side[0].rtnl, "veth1", "veth2", side[1].nsfd);
	for (int i = 0; i < 2; i++) {
		const char *veth = i ? "veth2" : "veth1";

		krepro_addr_add(side[i].rtnl, veth, veth_cidr[i][0]);
		krepro_addr_add(side[i].rtnl, veth, veth_cidr[i][1]);
		krepro_link_up(side[i].rtnl, veth);
	}
	for (int i = 0; i < 2; i++)
		krepro_wg_create(&side[i].wg, side[i].rtnl, side[i].genl, "wg0", wg_port[i]);
	for (int i = 0; i < 2; i++) {
		wg_set_peer(i, 0, true);
		krepro_addr_add(side[i].rtnl, "wg0", wg_cidr[i][0]);
		krepro_addr_add(side[i].rtnl, "wg0", wg_cidr[i][1]);
		krepro_link_up(side[i].rtnl, "wg0");
	}

	echo_pid = krepro_udp_echo_server(side[1].nsfd, ECHO_PORT);
	krepro_info("ns1 veth1 %s %s wg0 %s %s <-> ns2 veth2 %s %s wg0 %s %s, echo port %d",
		    veth_cidr[0][0], veth_cidr[0][1], wg_cidr[0][0], wg_cidr[0][1],
		    veth_cidr[1][0], veth_cidr[1][1], wg_cidr[1][0], wg_cidr[1][1], ECHO_PORT);
}

static void cleanup(void)
{
	if (echo_pid > 0) {
		kill(echo_pid, SIGKILL);
		waitpid(echo_pid, NULL, 0);
		echo_pid = 0;
	}
	/* The namespaces go with the last process in them. */
}

static const char *const kconfigs[] = {
	"CONFIG_NET_NS", "CONFIG_VETH", "CONFIG_WIREGUARD", "CONFIG_IPV6",
	"CONFIG_NF_TABLES_IPV4", "CONFIG_NF_TABLES_IPV6", "CONFIG_NETFILTER_XT_MARK",
	"CONFIG_IP_NF_MANGLE", "CONFIG_IP6_NF_MANGLE", NULL,
};

static const struct krepro_case cases[] = {
	{ "nft_outer_ipv4", run_nft_outer_ipv4 },
	{ "nft_outer_ipv6", run_nft_outer_ipv6 },
	{ "xt_outer_ipv4", run_xt_outer_ipv4 },
	{ "xt_outer_ipv6", run_xt_outer_ipv6 },
	{ NULL, NULL },
};

static const struct krepro_test test = {
	.name = "nft-wg-reroute",
	.summary = "netfilter re-route of WireGuard's outer packet uses the inner skb->sk: "
		   "traffic over a socket bound to wg0 stops",
	.fix_commit = "46d6c5ae953c (\"netfilter: use actual socket sk rather than skb sk "
		      "when routing harder\")",
	.bug_commit = "1da177e4c3f4 (\"Linux-2.6.12-rc2\")",
	.seed = "004-patch-netfilter-use-actual-socket-sk-rather-than-skb-sk-when-r.patch",
	.needs_kconfigs = kconfigs,
	/* Echoes lost over wg0, with its tx_errors: no debug option needed. */
	.own_evidence = true,
	.timeout = 240,
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
