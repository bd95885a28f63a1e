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

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/genetlink.h>
#include <linux/if_link.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/xt_mark.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <linux/wireguard.h>
#include <netinet/in.h>
#include <linux/time_types.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
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

/* ns1 and ns2: the namespace, netlink sockets opened inside it, WG keys. */
static struct side {
	int nsfd;
	struct mnl_socket *rtnl, *genl;
	uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
} side[2];
static struct mnl_socket *nfnl;	/* ns1 */
static int wg_family;
static pid_t echo_pid;

static int fam_af(int fam)
{
	return fam ? AF_INET6 : AF_INET;
}

/* --- WireGuard over generic netlink --- */

static struct nlmsghdr *wg_msg(char *buf, uint8_t cmd, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = (uint16_t)wg_family;
	nlh->nlmsg_flags = flags;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = WG_GENL_VERSION;
	mnl_attr_put_strz(nlh, WGDEVICE_A_IFNAME, "wg0");
	return nlh;
}

static void wg_request(struct side *s, struct nlmsghdr *nlh, const char *what)
{
	int ret = krepro_nl_request(s->genl, nlh, NULL, NULL);

	if (ret)
		krepro_broken("WireGuard %s in ns%d: %s", what, (int)(s - side) + 1, strerror(-ret));
}

/* The peer's endpoint: the other side's veth address of family fam. */
static void put_endpoint(struct nlmsghdr *nlh, int other, int fam)
{
	struct krepro_addr a;

	krepro_parse_addr(veth_cidr[other][fam], &a);
	if (fam == 0) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(wg_port[other]) };

		memcpy(&sin.sin_addr, a.addr.v4, 4);
		mnl_attr_put(nlh, WGPEER_A_ENDPOINT, sizeof(sin), &sin);
	} else {
		struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6,
					     .sin6_port = htons(wg_port[other]) };

		memcpy(&sin6.sin6_addr, a.addr.v6, 16);
		mnl_attr_put(nlh, WGPEER_A_ENDPOINT, sizeof(sin6), &sin6);
	}
}

/* One peer (the other side) with its wg0 addresses as allowed IPs. */
static void wg_set_peer(int me, int fam_outer, bool allowed_ips)
{
	int other = !me;
	char buf[1024];
	struct nlmsghdr *nlh = wg_msg(buf, WG_CMD_SET_DEVICE, 0);
	struct nlattr *peers = mnl_attr_nest_start(nlh, WGDEVICE_A_PEERS);
	struct nlattr *peer = mnl_attr_nest_start(nlh, 0);

	mnl_attr_put(nlh, WGPEER_A_PUBLIC_KEY, WG_KEY_LEN, side[other].pub);
	put_endpoint(nlh, other, fam_outer);
	if (allowed_ips) {
		struct nlattr *ips;

		mnl_attr_put_u32(nlh, WGPEER_A_FLAGS, WGPEER_F_REPLACE_ALLOWEDIPS);
		ips = mnl_attr_nest_start(nlh, WGPEER_A_ALLOWEDIPS);
		for (int fam = 0; fam < 2; fam++) {
			struct nlattr *ip = mnl_attr_nest_start(nlh, (uint16_t)fam);
			struct krepro_addr a;

			krepro_parse_addr(wg_cidr[other][fam], &a);
			mnl_attr_put_u16(nlh, WGALLOWEDIP_A_FAMILY, (uint16_t)a.family);
			mnl_attr_put(nlh, WGALLOWEDIP_A_IPADDR, fam ? 16 : 4, &a.addr);
			mnl_attr_put_u8(nlh, WGALLOWEDIP_A_CIDR_MASK, fam ? 128 : 32);
			mnl_attr_nest_end(nlh, ip);
		}
		mnl_attr_nest_end(nlh, ips);
	}
	mnl_attr_nest_end(nlh, peer);
	mnl_attr_nest_end(nlh, peers);
	wg_request(&side[me], nlh, "set peer");
}

struct wg_state {
	uint8_t pub[WG_KEY_LEN];
	bool has_pub;
	uint64_t rx, tx;	/* the (only) peer's transfer counters */
	int64_t handshake_s;	/* its last handshake, seconds (0: none) */
};

static int wg_peer_attr_cb(const struct nlattr *attr, void *data)
{
	struct wg_state *st = data;
	struct __kernel_timespec ts;

	switch (mnl_attr_get_type(attr)) {
	case WGPEER_A_RX_BYTES:
		st->rx = mnl_attr_get_u64(attr);
		break;
	case WGPEER_A_TX_BYTES:
		st->tx = mnl_attr_get_u64(attr);
		break;
	case WGPEER_A_LAST_HANDSHAKE_TIME:
		if (mnl_attr_get_payload_len(attr) >= sizeof(ts)) {
			memcpy(&ts, mnl_attr_get_payload(attr), sizeof(ts));
			st->handshake_s = ts.tv_sec;
		}
		break;
	}
	return MNL_CB_OK;
}

static int wg_peers_cb(const struct nlattr *peer, void *data)
{
	return mnl_attr_parse_nested(peer, wg_peer_attr_cb, data);
}

static int wg_dev_attr_cb(const struct nlattr *attr, void *data)
{
	struct wg_state *st = data;

	if (mnl_attr_get_type(attr) == WGDEVICE_A_PUBLIC_KEY &&
	    mnl_attr_get_payload_len(attr) == WG_KEY_LEN) {
		memcpy(st->pub, mnl_attr_get_payload(attr), WG_KEY_LEN);
		st->has_pub = true;
	} else if (mnl_attr_get_type(attr) == WGDEVICE_A_PEERS) {
		return mnl_attr_parse_nested(attr, wg_peers_cb, data);
	}
	return MNL_CB_OK;
}

static int wg_dev_cb(const struct nlmsghdr *nlh, void *data)
{
	return mnl_attr_parse(nlh, sizeof(struct genlmsghdr), wg_dev_attr_cb, data);
}

static void wg_get(struct side *s, struct wg_state *st)
{
	char buf[256];
	struct nlmsghdr *nlh = wg_msg(buf, WG_CMD_GET_DEVICE, NLM_F_DUMP);
	int ret;

	memset(st, 0, sizeof(*st));
	ret = krepro_nl_request(s->genl, nlh, wg_dev_cb, st);
	if (ret)
		krepro_broken("WireGuard get device: %s", strerror(-ret));
}

/* wg0 in side i's namespace, a fresh private key, its public key read back. */
static void wg_create(int i)
{
	struct side *s = &side[i];
	struct wg_state st;
	char buf[256];
	struct nlmsghdr *nlh;

	krepro_link_add(s->rtnl, "wg0", "wireguard");
	if (getrandom(s->priv, sizeof(s->priv), 0) != sizeof(s->priv))
		krepro_broken("getrandom: %s", strerror(errno));
	s->priv[0] &= 248;	/* a Curve25519 private key, clamped */
	s->priv[31] = (s->priv[31] & 127) | 64;
	nlh = wg_msg(buf, WG_CMD_SET_DEVICE, 0);
	mnl_attr_put(nlh, WGDEVICE_A_PRIVATE_KEY, WG_KEY_LEN, s->priv);
	mnl_attr_put_u16(nlh, WGDEVICE_A_LISTEN_PORT, wg_port[i]);
	wg_request(s, nlh, "set private key");
	wg_get(s, &st);
	if (!st.has_pub)
		krepro_broken("WireGuard in ns%d gave no public key", i + 1);
	memcpy(s->pub, st.pub, WG_KEY_LEN);
}

/* --- the echo server in ns2 and the client in ns1 --- */

static _Noreturn void echo_server(int ready_fd)
{
	struct pollfd pfd[2];
	char buf[256];

	for (int fam = 0; fam < 2; fam++) {
		struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(ECHO_PORT) };
		struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(ECHO_PORT) };
		int one = 1, fd = socket(fam_af(fam), SOCK_DGRAM, 0);

		if (fd < 0 || (fam && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
		    bind(fd, fam ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
			 fam ? sizeof(a6) : sizeof(a4))) {
			fprintf(stderr, "echo server: %s socket: %s\n", fam_name[fam], strerror(errno));
			_exit(1);
		}
		pfd[fam] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	for (;;) {
		if (poll(pfd, 2, -1) < 0)
			continue;
		for (int fam = 0; fam < 2; fam++) {
			struct sockaddr_storage from;
			socklen_t flen = sizeof(from);
			ssize_t n;

			if (!(pfd[fam].revents & POLLIN))
				continue;
			n = recvfrom(pfd[fam].fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
			if (n > 0)
				sendto(pfd[fam].fd, buf, (size_t)n, 0, (struct sockaddr *)&from, flen);
		}
	}
}

/*
 * One echo from a UDP socket bound to wg0 to ns2's wg0 address: 0 when it
 * came back within timeout_ms, else -errno (-ETIMEDOUT when nothing came).
 */
static int echo(int fam, int timeout_ms)
{
	static unsigned int seq;
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(ECHO_PORT) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(ECHO_PORT) };
	char msg[64], buf[64];
	struct krepro_addr dst;
	double deadline = krepro_now() + timeout_ms / 1000.0;
	int fd, ret = -ETIMEDOUT;

	krepro_parse_addr(wg_cidr[1][fam], &dst);
	memcpy(&a4.sin_addr, dst.addr.v4, 4);
	memcpy(&a6.sin6_addr, dst.addr.v6, 16);
	fd = (int)SAFE(socket(fam_af(fam), SOCK_DGRAM | SOCK_CLOEXEC, 0));
	SAFE(setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, "wg0", 4));
	snprintf(msg, sizeof(msg), "krepro echo %d.%u", getpid(), ++seq);
	if (connect(fd, fam ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
		    fam ? sizeof(a6) : sizeof(a4)) < 0 ||
	    send(fd, msg, strlen(msg), 0) < 0) {
		ret = -errno;
		goto out;
	}
	for (double left; (left = deadline - krepro_now()) > 0;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		/* Rounded up: a wait of 0 ms would spin out the last one. */
		if (poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0) {	/* an ICMP error for this socket */
			ret = -errno;
			break;
		}
		if ((size_t)n == strlen(msg) && !memcmp(buf, msg, (size_t)n)) {
			ret = 0;
			break;
		}
	}
out:
	close(fd);
	return ret;
}

/* --- the rules: nftables route chains, or the legacy mangle tables --- */

/* Send a batch of nf_tables messages and wait for each one's ACK. */
static int nft_batch(struct mnl_nlmsg_batch *b, int nmsgs)
{
	char rbuf[8192];

	if (mnl_socket_sendto(nfnl, mnl_nlmsg_batch_head(b), mnl_nlmsg_batch_size(b)) < 0)
		return -errno;
	for (int acked = 0; acked < nmsgs;) {
		struct pollfd pfd = { .fd = mnl_socket_get_fd(nfnl), .events = POLLIN };
		ssize_t n;
		int ret;

		if (poll(&pfd, 1, 5000) <= 0)
			return -ETIMEDOUT;
		n = mnl_socket_recvfrom(nfnl, rbuf, sizeof(rbuf));
		if (n < 0)
			return -errno;
		ret = mnl_cb_run(rbuf, (size_t)n, 0, mnl_socket_get_portid(nfnl), NULL, NULL);
		if (ret < 0)
			return -errno;
		acked++;
	}
	return 0;
}

/* In ip and ip6: table krepro { chain out { type route hook output priority
 * mangle; counter meta mark set 1 } } (what `nft` would send). */
static void nft_install(void)
{
	static char buf[16384];
	struct mnl_nlmsg_batch *b = SAFE_PTR(mnl_nlmsg_batch_start(buf, sizeof(buf)));
	uint32_t seq = (uint32_t)time(NULL);
	int nmsgs = 0, ret;

	nftnl_batch_begin(mnl_nlmsg_batch_current(b), seq++);
	mnl_nlmsg_batch_next(b);
	for (int fam = 0; fam < 2; fam++) {
		uint16_t nfproto = fam ? NFPROTO_IPV6 : NFPROTO_IPV4;
		struct nftnl_table *t = SAFE_PTR(nftnl_table_alloc());
		struct nftnl_chain *c = SAFE_PTR(nftnl_chain_alloc());
		struct nftnl_rule *r = SAFE_PTR(nftnl_rule_alloc());
		struct nftnl_expr *e;
		struct nlmsghdr *nlh;

		nftnl_table_set_str(t, NFTNL_TABLE_NAME, NFT_TABLE);
		nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWTABLE, nfproto,
					    NLM_F_CREATE | NLM_F_ACK, seq++);
		nftnl_table_nlmsg_build_payload(nlh, t);
		mnl_nlmsg_batch_next(b);

		nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, NFT_TABLE);
		nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, "out");
		nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "route");
		nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
		nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, -150);	/* NF_IP_PRI_MANGLE */
		nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
		nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWCHAIN, nfproto,
					    NLM_F_CREATE | NLM_F_ACK, seq++);
		nftnl_chain_nlmsg_build_payload(nlh, c);
		mnl_nlmsg_batch_next(b);

		nftnl_rule_set_str(r, NFTNL_RULE_TABLE, NFT_TABLE);
		nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, "out");
		e = SAFE_PTR(nftnl_expr_alloc("counter"));
		nftnl_rule_add_expr(r, e);
		e = SAFE_PTR(nftnl_expr_alloc("immediate"));
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DATA, MARK);
		nftnl_rule_add_expr(r, e);
		e = SAFE_PTR(nftnl_expr_alloc("meta"));
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, NFT_META_MARK);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_SREG, NFT_REG_1);
		nftnl_rule_add_expr(r, e);
		nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWRULE, nfproto,
					    NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK, seq++);
		nftnl_rule_nlmsg_build_payload(nlh, r);
		mnl_nlmsg_batch_next(b);
		nmsgs += 3;
		nftnl_rule_free(r);
		nftnl_chain_free(c);
		nftnl_table_free(t);
	}
	nftnl_batch_end(mnl_nlmsg_batch_current(b), seq++);
	mnl_nlmsg_batch_next(b);
	ret = nft_batch(b, nmsgs);
	mnl_nlmsg_batch_stop(b);
	if (ret == -EOPNOTSUPP || ret == -ENOENT)
		krepro_skip("nf_tables refused the route chain: %s", strerror(-ret));
	if (ret)
		krepro_broken("install the nft route chains: %s", strerror(-ret));
}

static int nft_counter_cb(const struct nlmsghdr *nlh, void *data)
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

/* Packets the rule of family fam counted; then both tables are deleted. */
static void nft_remove(uint64_t packets[2])
{
	static char buf[8192];
	struct mnl_nlmsg_batch *b;
	uint32_t seq = (uint32_t)time(NULL);
	int ret;

	for (int fam = 0; fam < 2; fam++) {
		struct nftnl_rule *r = SAFE_PTR(nftnl_rule_alloc());
		struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETRULE,
							     fam ? NFPROTO_IPV6 : NFPROTO_IPV4,
							     NLM_F_DUMP, 0);

		nftnl_rule_set_str(r, NFTNL_RULE_TABLE, NFT_TABLE);
		nftnl_rule_nlmsg_build_payload(nlh, r);
		nftnl_rule_free(r);
		packets[fam] = 0;
		ret = krepro_nl_request(nfnl, nlh, nft_counter_cb, &packets[fam]);
		if (ret)
			krepro_broken("read the nft rule counters: %s", strerror(-ret));
	}
	b = SAFE_PTR(mnl_nlmsg_batch_start(buf, sizeof(buf)));
	nftnl_batch_begin(mnl_nlmsg_batch_current(b), seq++);
	mnl_nlmsg_batch_next(b);
	for (int fam = 0; fam < 2; fam++) {
		struct nftnl_table *t = SAFE_PTR(nftnl_table_alloc());
		struct nlmsghdr *nlh;

		nftnl_table_set_str(t, NFTNL_TABLE_NAME, NFT_TABLE);
		nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_DELTABLE,
					    fam ? NFPROTO_IPV6 : NFPROTO_IPV4, NLM_F_ACK, seq++);
		nftnl_table_nlmsg_build_payload(nlh, t);
		mnl_nlmsg_batch_next(b);
		nftnl_table_free(t);
	}
	nftnl_batch_end(mnl_nlmsg_batch_current(b), seq++);
	mnl_nlmsg_batch_next(b);
	ret = nft_batch(b, 2);
	mnl_nlmsg_batch_stop(b);
	if (ret)
		krepro_broken("delete the nft tables: %s", strerror(-ret));
}

/*
 * The legacy mangle table through IPT_SO_SET_REPLACE / IP6T_SO_SET_REPLACE,
 * as iptables-legacy does it: every hook's policy ACCEPT and, with the rule,
 * "-A OUTPUT -j MARK --set-xmark 1" first in OUTPUT. ipt_replace and
 * ip6t_replace have the same header; only the entry header differs.
 */
_Static_assert(offsetof(struct ipt_replace, entries) == offsetof(struct ip6t_replace, entries),
	       "ipt_replace and ip6t_replace headers differ");
_Static_assert(sizeof(struct ipt_getinfo) == sizeof(struct ip6t_getinfo),
	       "ipt_getinfo and ip6t_getinfo differ");

struct xt_mark_target {
	struct xt_entry_target target;
	struct xt_mark_tginfo2 info;
};

static size_t xt_put(char *p, int fam, const void *target, size_t tsize)
{
	size_t esize = fam ? sizeof(struct ip6t_entry) : sizeof(struct ipt_entry);

	if (fam) {
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

/* Replace family fam's mangle table; returns the MARK rule's packet count
 * from the table that was replaced (0 when it had none). */
static uint64_t xt_replace(int fam, bool with_rule)
{
	int level = fam ? SOL_IPV6 : SOL_IP;
	int fd = (int)SAFE(socket(fam_af(fam), SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW));
	struct ipt_getinfo info = { .name = "mangle" };
	socklen_t len = sizeof(info);
	static char buf[8192] __attribute__((aligned(8)));
	struct ipt_replace *repl = (struct ipt_replace *)buf;
	char *entries = buf + offsetof(struct ipt_replace, entries);
	struct xt_standard_target accept = {
		.target.u.user.target_size = XT_ALIGN(sizeof(accept)),
		.verdict = -NF_ACCEPT - 1,
	};
	struct xt_mark_target mark = {
		.target.u.user.target_size = XT_ALIGN(sizeof(mark)),
		.target.u.user.name = "MARK",
		.target.u.user.revision = 2,
		.info = { .mark = MARK, .mask = 0xffffffff },
	};
	struct xt_error_target error = {
		.target.u.user.target_size = XT_ALIGN(sizeof(error)),
		.target.u.user.name = XT_ERROR_TARGET,
		.errorname = XT_ERROR_TARGET,
	};
	struct xt_counters *counters;
	unsigned int n = 0, rule_index = 0;
	uint64_t pcnt = 0;
	size_t off = 0;

	_Static_assert(sizeof(accept) == XT_ALIGN(sizeof(accept)) &&
		       sizeof(mark) == XT_ALIGN(sizeof(mark)) &&
		       sizeof(error) == XT_ALIGN(sizeof(error)), "targets not aligned");
	if (getsockopt(fd, level, fam ? IP6T_SO_GET_INFO : IPT_SO_GET_INFO, &info, &len) < 0) {
		if (errno == ENOENT || errno == ENOPROTOOPT)
			krepro_skip("no %s mangle table: %s", fam_name[fam], strerror(errno));
		krepro_broken("%s mangle table info: %s", fam_name[fam], strerror(errno));
	}
	counters = SAFE_PTR(calloc(info.num_entries, sizeof(*counters)));
	memset(buf, 0, sizeof(buf));
	for (unsigned int h = 0; h < NF_INET_NUMHOOKS; h++) {
		if (!(info.valid_hooks & (1u << h)))
			continue;
		repl->hook_entry[h] = (unsigned int)off;
		if (with_rule && h == NF_INET_LOCAL_OUT) {
			n++;
			off += xt_put(entries + off, fam, &mark, sizeof(mark));
		}
		repl->underflow[h] = (unsigned int)off;
		off += xt_put(entries + off, fam, &accept, sizeof(accept));
		n++;
	}
	off += xt_put(entries + off, fam, &error, sizeof(error));
	n++;
	strcpy(repl->name, "mangle");
	repl->valid_hooks = info.valid_hooks;
	repl->num_entries = n;
	repl->size = (unsigned int)off;
	repl->num_counters = info.num_entries;
	repl->counters = counters;
	if (setsockopt(fd, level, fam ? IP6T_SO_SET_REPLACE : IPT_SO_SET_REPLACE, buf,
		       (socklen_t)(offsetof(struct ipt_replace, entries) + off)) < 0)
		krepro_broken("replace the %s mangle table: %s", fam_name[fam], strerror(errno));
	/* The old table had the rule where we put it (one entry per valid
	 * hook before OUTPUT): the kernel gave its counters back. */
	if (!with_rule && info.num_entries == n + 1) {
		for (unsigned int h = 0; h < NF_INET_LOCAL_OUT; h++)
			rule_index += !!(info.valid_hooks & (1u << h));
		pcnt = counters[rule_index].pcnt;
	}
	free(counters);
	close(fd);
	return pcnt;
}

static void xt_install(void)
{
	xt_replace(0, true);
	xt_replace(1, true);
}

static void xt_remove(uint64_t packets[2])
{
	packets[0] = xt_replace(0, false);
	packets[1] = xt_replace(1, false);
}

/* --- the cases --- */

struct counters {
	struct wg_state wg;
	struct rtnl_link_stats64 wg0, veth;
};

static void snapshot(struct counters *c)
{
	wg_get(&side[0], &c->wg);
	krepro_link_stats(side[0].rtnl, "wg0", &c->wg0);
	krepro_link_stats(side[0].rtnl, "veth1", &c->veth);
}

struct echo_try {
	int fam;
	int ret;	/* the last echo's: 0 or -errno */
};

/* One echo of a second, as krepro_poll_until() calls it. */
static bool echo_came_back(void *arg)
{
	struct echo_try *attempt = arg;

	attempt->ret = echo(attempt->fam, 1000);
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
static void run(int outer, bool nft)
{
	const char *rule = nft ? "nft route chain" : "mangle MARK rule";
	int got[2] = { 0, 0 }, sent[2] = { 0, 0 }, err[2] = { 0, 0 }, outer_pkts, lost;
	struct counters before, after;
	uint64_t packets[2], wg_tx, wg_rx, wg0_tx, wg0_err, veth_tx;
	char seen[256];

	baseline(outer);
	snapshot(&before);
	if (nft)
		nft_install();
	else
		xt_install();
	/* A family's first lost echo is the evidence: its others would only
	 * wait out ECHO_MS each (a FAIL run took ~50 s when they did). */
	for (int fam = 0; fam < 2; fam++)
		for (int i = 0; i < ECHOES && !err[fam]; i++) {
			int ret = echo(fam, ECHO_MS);

			sent[fam]++;
			if (!ret)
				got[fam]++;
			else
				err[fam] = -ret;
		}
	snapshot(&after);
	if (nft)
		nft_remove(packets);
	else
		xt_remove(packets);

	wg_tx = after.wg.tx - before.wg.tx;
	wg_rx = after.wg.rx - before.wg.rx;
	wg0_tx = after.wg0.tx_packets - before.wg0.tx_packets;
	wg0_err = after.wg0.tx_errors - before.wg0.tx_errors;
	veth_tx = after.veth.tx_packets - before.veth.tx_packets;
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
		 err[0] ? " error: " : "", err[0] ? strerror(err[0]) : "", fam_name[1],
		 got[1], sent[1], err[1] ? " error: " : "", err[1] ? strerror(err[1]) : "");
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

static void run_nft_outer_ipv4(void) { run(0, true); }
static void run_nft_outer_ipv6(void) { run(1, true); }
static void run_xt_outer_ipv4(void) { run(0, false); }
static void run_xt_outer_ipv6(void) { run(1, false); }

static void setup(void)
{
	int ready[2];
	char c;

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
	wg_family = krepro_genl_family(side[0].genl, WG_GENL_NAME);
	wg_create(0);
	wg_create(1);
	for (int i = 0; i < 2; i++) {
		wg_set_peer(i, 0, true);
		krepro_addr_add(side[i].rtnl, "wg0", wg_cidr[i][0]);
		krepro_addr_add(side[i].rtnl, "wg0", wg_cidr[i][1]);
		krepro_link_up(side[i].rtnl, "wg0");
	}

	SAFE(pipe(ready));
	fflush(stdout);
	echo_pid = (pid_t)SAFE(fork());
	if (echo_pid == 0) {
		close(ready[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setns(side[1].nsfd, CLONE_NEWNET) < 0)
			_exit(1);
		echo_server(ready[1]);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		krepro_broken("the echo server in ns2 did not start");
	close(ready[0]);
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
