// SPDX-License-Identifier: GPL-2.0
/*
 * Network links over rtnetlink with libnl-route (Debian ships its static
 * archive; libmnl's -dev package has none, and reproducers are static).
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "krepro_net.h"

#include <errno.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

static struct nl_sock *rtnl_open(void)
{
	struct nl_sock *sk = nl_socket_alloc();
	int err;

	if (!sk)
		krepro_broken("nl_socket_alloc: out of memory");
	err = nl_connect(sk, NETLINK_ROUTE);
	if (err < 0)
		krepro_broken("connect to rtnetlink: %s", nl_geterror(err));
	return sk;
}

int krepro_link_add(const char *name, const char *kind)
{
	struct nl_sock *sk = rtnl_open();
	struct rtnl_link *link = rtnl_link_alloc();
	int err, ifindex;

	if (!link)
		krepro_broken("rtnl_link_alloc: out of memory");
	rtnl_link_set_name(link, name);
	err = rtnl_link_set_type(link, kind);
	if (err >= 0)
		err = rtnl_link_add(sk, link, NLM_F_CREATE | NLM_F_EXCL);
	if (err < 0)
		krepro_broken("ip link add %s type %s: %s", name, kind, nl_geterror(err));
	rtnl_link_put(link);
	nl_socket_free(sk);
	ifindex = (int)if_nametoindex(name);
	if (!ifindex)
		krepro_broken("link %s was added but has no ifindex: %s", name, strerror(errno));
	return ifindex;
}

void krepro_link_up(const char *name)
{
	struct nl_sock *sk = rtnl_open();
	struct rtnl_link *link, *change = rtnl_link_alloc();
	int err;

	if (!change)
		krepro_broken("rtnl_link_alloc: out of memory");
	err = rtnl_link_get_kernel(sk, 0, name, &link);
	if (err < 0)
		krepro_broken("ip link show %s: %s", name, nl_geterror(err));
	rtnl_link_set_flags(change, IFF_UP);
	err = rtnl_link_change(sk, link, change, 0);
	if (err < 0)
		krepro_broken("ip link set %s up: %s", name, nl_geterror(err));
	rtnl_link_put(change);
	rtnl_link_put(link);
	nl_socket_free(sk);
}

int krepro_link_del(const char *name)
{
	int ifindex = (int)if_nametoindex(name);
	struct nl_sock *sk;
	struct rtnl_link *link;
	int err;

	if (!ifindex)
		return -ENODEV;
	sk = nl_socket_alloc();
	link = rtnl_link_alloc();
	if (!sk || !link) {
		err = -ENOMEM;
		goto out;
	}
	err = nl_connect(sk, NETLINK_ROUTE);
	if (err >= 0) {
		rtnl_link_set_ifindex(link, ifindex);
		err = rtnl_link_delete(sk, link);
	}
	if (err < 0) {
		krepro_info("ip link del %s: %s", name, nl_geterror(err));
		err = -EIO;
	}
out:
	if (link)
		rtnl_link_put(link);
	if (sk)
		nl_socket_free(sk);
	return err;
}
