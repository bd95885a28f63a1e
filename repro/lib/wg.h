/* SPDX-License-Identifier: GPL-2.0 */
/*
 * WireGuard over generic netlink (wg.c, in krepro_net): what `wg set` and
 * `wg show` do, without the wg tool in the guest image.
 */
#ifndef KREPRO_WG_H
#define KREPRO_WG_H

#include "net.h"

#include <linux/wireguard.h>

/* A WireGuard link in one network namespace. */
struct krepro_wg {
	struct mnl_socket *genl;	/* opened in the link's namespace */
	int family;			/* the "wireguard" generic netlink family */
	const char *ifname;
	uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
};

/* What WG_CMD_GET_DEVICE says: the public key and the (only) peer's counters. */
struct krepro_wg_state {
	uint8_t pub[WG_KEY_LEN];
	bool has_pub;
	uint64_t rx, tx;	/* the peer's transfer counters, bytes */
	int64_t handshake_s;	/* its last handshake, seconds (0: none) */
};

/*
 * Create link ifname of kind wireguard (rtnl and genl opened in the same
 * namespace), give it a fresh private key and the listen port, and read its
 * public key back into wg. SKIP when the kernel has no WireGuard; BROKEN on
 * any other error.
 */
void krepro_wg_create(struct krepro_wg *wg, struct mnl_socket *rtnl, struct mnl_socket *genl,
		      const char *ifname, uint16_t port);
/*
 * Set the one peer: its public key and endpoint (address, port); with
 * allowed (n addresses, their prefix lengths as given) its allowed IPs are
 * replaced, with n == 0 they are kept. BROKEN on error.
 */
void krepro_wg_set_peer(const struct krepro_wg *wg, const uint8_t pub[WG_KEY_LEN],
			const struct krepro_addr *endpoint, uint16_t port,
			const struct krepro_addr *allowed, unsigned int n);
void krepro_wg_get(const struct krepro_wg *wg, struct krepro_wg_state *st);

#endif
