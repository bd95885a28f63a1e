// SPDX-License-Identifier: GPL-2.0
/*
 * WireGuard over generic netlink (wg.h), through libmnl.
 */
#define _GNU_SOURCE
#include "wg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/time_types.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

static struct nlmsghdr *wg_msg(const struct krepro_wg *wg, char *buf, uint8_t cmd,
			       uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = (uint16_t)wg->family;
	nlh->nlmsg_flags = flags;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = WG_GENL_VERSION;
	mnl_attr_put_strz(nlh, WGDEVICE_A_IFNAME, wg->ifname);
	return nlh;
}

static void wg_request(const struct krepro_wg *wg, struct nlmsghdr *nlh, const char *what)
{
	int ret = krepro_nl_request(wg->genl, nlh, NULL, NULL);

	if (ret)
		krepro_broken("WireGuard %s on %s: %s", what, wg->ifname, strerror(-ret));
}

static void put_endpoint(struct nlmsghdr *nlh, const struct krepro_addr *a, uint16_t port)
{
	if (a->family == AF_INET) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

		memcpy(&sin.sin_addr, a->addr.v4, 4);
		mnl_attr_put(nlh, WGPEER_A_ENDPOINT, sizeof(sin), &sin);
	} else {
		struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

		memcpy(&sin6.sin6_addr, a->addr.v6, 16);
		mnl_attr_put(nlh, WGPEER_A_ENDPOINT, sizeof(sin6), &sin6);
	}
}

static void put_allowed_ips(struct nlmsghdr *nlh, const struct krepro_addr *allowed,
			    unsigned int n)
{
	struct nlattr *ips;

	mnl_attr_put_u32(nlh, WGPEER_A_FLAGS, WGPEER_F_REPLACE_ALLOWEDIPS);
	ips = mnl_attr_nest_start(nlh, WGPEER_A_ALLOWEDIPS);
	for (unsigned int i = 0; i < n; i++) {
		const struct krepro_addr *a = &allowed[i];
		struct nlattr *ip = mnl_attr_nest_start(nlh, (uint16_t)i);

		mnl_attr_put_u16(nlh, WGALLOWEDIP_A_FAMILY, (uint16_t)a->family);
		mnl_attr_put(nlh, WGALLOWEDIP_A_IPADDR, a->family == AF_INET6 ? 16 : 4, &a->addr);
		mnl_attr_put_u8(nlh, WGALLOWEDIP_A_CIDR_MASK, (uint8_t)a->prefixlen);
		mnl_attr_nest_end(nlh, ip);
	}
	mnl_attr_nest_end(nlh, ips);
}

void krepro_wg_set_peer(const struct krepro_wg *wg, const uint8_t pub[WG_KEY_LEN],
			const struct krepro_addr *endpoint, uint16_t port,
			const struct krepro_addr *allowed, unsigned int n)
{
	char buf[1024];
	struct nlmsghdr *nlh = wg_msg(wg, buf, WG_CMD_SET_DEVICE, 0);
	struct nlattr *peers = mnl_attr_nest_start(nlh, WGDEVICE_A_PEERS);
	struct nlattr *peer = mnl_attr_nest_start(nlh, 0);

	mnl_attr_put(nlh, WGPEER_A_PUBLIC_KEY, WG_KEY_LEN, pub);
	put_endpoint(nlh, endpoint, port);
	if (n)
		put_allowed_ips(nlh, allowed, n);
	mnl_attr_nest_end(nlh, peer);
	mnl_attr_nest_end(nlh, peers);
	wg_request(wg, nlh, "set peer");
}

static int peer_attr_cb(const struct nlattr *attr, void *data)
{
	struct krepro_wg_state *st = data;
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

static int peers_cb(const struct nlattr *peer, void *data)
{
	return mnl_attr_parse_nested(peer, peer_attr_cb, data);
}

static int dev_attr_cb(const struct nlattr *attr, void *data)
{
	struct krepro_wg_state *st = data;

	if (mnl_attr_get_type(attr) == WGDEVICE_A_PUBLIC_KEY &&
	    mnl_attr_get_payload_len(attr) == WG_KEY_LEN) {
		memcpy(st->pub, mnl_attr_get_payload(attr), WG_KEY_LEN);
		st->has_pub = true;
	} else if (mnl_attr_get_type(attr) == WGDEVICE_A_PEERS) {
		return mnl_attr_parse_nested(attr, peers_cb, data);
	}
	return MNL_CB_OK;
}

static int dev_cb(const struct nlmsghdr *nlh, void *data)
{
	return mnl_attr_parse(nlh, sizeof(struct genlmsghdr), dev_attr_cb, data);
}

void krepro_wg_get(const struct krepro_wg *wg, struct krepro_wg_state *st)
{
	char buf[256];
	struct nlmsghdr *nlh = wg_msg(wg, buf, WG_CMD_GET_DEVICE, NLM_F_DUMP);
	int ret;

	memset(st, 0, sizeof(*st));
	ret = krepro_nl_request(wg->genl, nlh, dev_cb, st);
	if (ret)
		krepro_broken("WireGuard get device %s: %s", wg->ifname, strerror(-ret));
}

void krepro_wg_create(struct krepro_wg *wg, struct mnl_socket *rtnl, struct mnl_socket *genl,
		      const char *ifname, uint16_t port)
{
	struct krepro_wg_state st;
	char buf[256];
	struct nlmsghdr *nlh;

	wg->genl = genl;
	wg->ifname = ifname;
	krepro_link_add(rtnl, ifname, "wireguard");
	wg->family = krepro_genl_family(genl, WG_GENL_NAME);
	if (getrandom(wg->priv, sizeof(wg->priv), 0) != sizeof(wg->priv))
		krepro_broken("getrandom: %s", strerror(errno));
	wg->priv[0] &= 248;	/* a Curve25519 private key, clamped */
	wg->priv[31] = (wg->priv[31] & 127) | 64;
	nlh = wg_msg(wg, buf, WG_CMD_SET_DEVICE, 0);
	mnl_attr_put(nlh, WGDEVICE_A_PRIVATE_KEY, WG_KEY_LEN, wg->priv);
	mnl_attr_put_u16(nlh, WGDEVICE_A_LISTEN_PORT, port);
	wg_request(wg, nlh, "set private key");
	krepro_wg_get(wg, &st);
	if (!st.has_pub)
		krepro_broken("WireGuard %s gave no public key", ifname);
	memcpy(wg->pub, st.pub, WG_KEY_LEN);
}
