/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Network namespaces, rtnetlink, generic netlink and a UDP echo (net.c, in
 * the library krepro_net; link with libmnl).
 */
#ifndef KREPRO_NET_H
#define KREPRO_NET_H

#include "krepro.h"

#include <stdint.h>
#include <sys/types.h>

struct mnl_socket;
struct nlmsghdr;
struct rtnl_link_stats64;

/* unshare(CLONE_NEWNET): the calling process is now in a new, empty network
 * namespace (only lo, down); returns an fd that refers to it. */
int krepro_netns_new(void);
/* setns() into the namespace fd refers to. */
void krepro_netns_enter(int fd);

/*
 * A bound netlink socket (NETLINK_ROUTE, NETLINK_GENERIC, ...). It acts on the
 * network namespace it was opened in, wherever the process goes later: open
 * one per namespace. The helpers below name links by name in that namespace.
 */
struct mnl_socket *krepro_nl_open(int bus);
/* Send one request (NLM_F_REQUEST|NLM_F_ACK added; the sequence number set),
 * run cb (may be NULL) on each answer until the ACK or NLMSG_DONE.
 * Returns 0 or -errno (the kernel's error). */
int krepro_nl_request(struct mnl_socket *nl, struct nlmsghdr *nlh,
		      int (*cb)(const struct nlmsghdr *nlh, void *data), void *data);

/* rtnetlink: create a link of a kind ("wireguard", ...; SKIP when the kernel
 * lacks it), a veth pair whose peer goes to the namespace peer_netns_fd
 * refers to (-1: this one), set a link up, add an address "10.0.0.1/24" or
 * "fd00::1/64" (IPv6 without DAD), read a link's index and counters. */
void krepro_link_add(struct mnl_socket *rtnl, const char *name, const char *kind);
void krepro_veth_add(struct mnl_socket *rtnl, const char *name, const char *peer,
		     int peer_netns_fd);
void krepro_link_up(struct mnl_socket *rtnl, const char *name);
/* Delete a link: 0 or -errno (-ENODEV: no such link); never BROKEN, so a
 * cleanup can call it whatever setup got to. */
int krepro_link_del(struct mnl_socket *rtnl, const char *name);
/* A cleanup's delete of link name in the calling process's namespace, over a
 * netlink socket of its own: never BROKEN; a failure other than "no such
 * link" is said as a diagnostic. */
void krepro_link_cleanup(const char *name);
void krepro_addr_add(struct mnl_socket *rtnl, const char *name, const char *cidr);
int krepro_link_index(struct mnl_socket *rtnl, const char *name);
void krepro_link_stats(struct mnl_socket *rtnl, const char *name,
		       struct rtnl_link_stats64 *stats);

/* An address parsed from "10.0.0.1", "fd00::1/64" (no prefix: a host). */
struct krepro_addr {
	int family;			/* AF_INET or AF_INET6 */
	int prefixlen;
	union {
		unsigned char v4[4];
		unsigned char v6[16];
	} addr;
};
int krepro_parse_addr(const char *text, struct krepro_addr *addr);

/* Generic netlink: the id of a family by name (SKIP when it does not exist). */
int krepro_genl_family(struct mnl_socket *genl, const char *name);

/* A UDP echo server on port (IPv4 and IPv6, any address) in a child process
 * in the namespace nsfd refers to; returns its pid once it listens. It dies
 * with its parent; the caller may kill it sooner. BROKEN on error. */
pid_t krepro_udp_echo_server(int nsfd, uint16_t port);
/* One datagram to dst:port from a socket bound to device dev (NULL: none):
 * 0 when it came back within timeout_ms, else -errno (-ETIMEDOUT when
 * nothing came). */
int krepro_udp_echo(const struct krepro_addr *dst, uint16_t port, const char *dev,
		    int timeout_ms);
/* The same, but the wait ends early, -ECANCELED, once lost(arg) says the
 * datagram cannot come back (a counter showed it dropped); lost() is asked
 * every 20 ms of the wait. */
int krepro_udp_echo_until(const struct krepro_addr *dst, uint16_t port, const char *dev,
			  int timeout_ms, bool (*lost)(void *arg), void *arg);

#endif
