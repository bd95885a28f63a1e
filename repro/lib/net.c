// SPDX-License-Identifier: GPL-2.0
/*
 * Network namespaces, rtnetlink and generic netlink for reproducers, through
 * libmnl. A netlink socket acts on the namespace it was opened in, so a
 * reproducer opens one per namespace and never has to switch back and forth.
 * Setup helpers end the case as BROKEN on error. See net.h.
 */
#define _GNU_SOURCE
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int krepro_netns_new(void)
{
	int fd;

	SAFE(unshare(CLONE_NEWNET));
	fd = (int)SAFE(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
	return fd;
}

void krepro_netns_enter(int fd)
{
	SAFE(setns(fd, CLONE_NEWNET));
}

struct mnl_socket *krepro_nl_open(int bus)
{
	struct mnl_socket *nl = SAFE_PTR(mnl_socket_open(bus));

	SAFE(mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID));
	return nl;
}

int krepro_nl_request(struct mnl_socket *nl, struct nlmsghdr *nlh,
		      int (*cb)(const struct nlmsghdr *, void *), void *data)
{
	static unsigned int seq;
	char buf[32768];
	ssize_t n;
	int ret;

	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = ++seq + (unsigned int)time(NULL);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		ret = mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, mnl_socket_get_portid(nl), cb, data);
	} while (ret > MNL_CB_STOP);
	return ret < 0 ? -errno : 0;
}

/* Build an RTM_*LINK request naming the link (index 0: the kernel looks the
 * name up in the socket's namespace). */
static struct nlmsghdr *link_msg(char *buf, int type, int flags, const char *name)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = (uint16_t)type;
	nlh->nlmsg_flags = (uint16_t)flags;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	return nlh;
}

static void must_request(struct mnl_socket *nl, struct nlmsghdr *nlh, const char *what,
			 const char *name)
{
	int ret = krepro_nl_request(nl, nlh, NULL, NULL);

	if (ret)
		krepro_broken("%s %s: %s", what, name, strerror(-ret));
}

void krepro_link_add(struct mnl_socket *rtnl, const char *name, const char *kind)
{
	char buf[1024];
	struct nlmsghdr *nlh = link_msg(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, name);
	struct nlattr *info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	int ret;

	mnl_attr_put_str(nlh, IFLA_INFO_KIND, kind);
	mnl_attr_nest_end(nlh, info);
	ret = krepro_nl_request(rtnl, nlh, NULL, NULL);
	if (ret == -EOPNOTSUPP)
		krepro_skip("the kernel has no \"%s\" link type", kind);
	if (ret)
		krepro_broken("create %s link %s: %s", kind, name, strerror(-ret));
}

void krepro_veth_add(struct mnl_socket *rtnl, const char *name, const char *peer,
		     int peer_netns_fd)
{
	char buf[1024];
	struct nlmsghdr *nlh = link_msg(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, name);
	struct nlattr *info, *data, *peer_info;
	struct ifinfomsg *ifi;

	info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_str(nlh, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	/* VETH_INFO_PEER holds an ifinfomsg and the peer's own attributes. */
	peer_info = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, peer);
	if (peer_netns_fd >= 0)
		mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)peer_netns_fd);
	mnl_attr_nest_end(nlh, peer_info);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, info);
	must_request(rtnl, nlh, "create veth pair", name);
}

void krepro_link_up(struct mnl_socket *rtnl, const char *name)
{
	char buf[256];
	struct nlmsghdr *nlh = link_msg(buf, RTM_NEWLINK, 0, name);
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);

	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	must_request(rtnl, nlh, "set up", name);
}

int krepro_link_del(struct mnl_socket *rtnl, const char *name)
{
	char buf[256];

	return krepro_nl_request(rtnl, link_msg(buf, RTM_DELLINK, 0, name), NULL, NULL);
}

void krepro_link_cleanup(const char *name)
{
	struct mnl_socket *rtnl = mnl_socket_open(NETLINK_ROUTE);
	int ret;

	if (!rtnl || mnl_socket_bind(rtnl, 0, MNL_SOCKET_AUTOPID) < 0) {
		krepro_info("rtnetlink: %s; %s left in place", strerror(errno), name);
		return;
	}
	ret = krepro_link_del(rtnl, name);
	if (ret && ret != -ENODEV)
		krepro_info("delete %s: %s", name, strerror(-ret));
	mnl_socket_close(rtnl);
}

struct link_info {
	int index;
	struct rtnl_link_stats64 stats;
	bool has_stats;
};

static int link_attr_cb(const struct nlattr *attr, void *data)
{
	struct link_info *li = data;

	if (mnl_attr_get_type(attr) == IFLA_STATS64 &&
	    mnl_attr_get_payload_len(attr) >= sizeof(li->stats)) {
		memcpy(&li->stats, mnl_attr_get_payload(attr), sizeof(li->stats));
		li->has_stats = true;
	}
	return MNL_CB_OK;
}

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct link_info *li = data;

	li->index = ifi->ifi_index;
	return mnl_attr_parse(nlh, sizeof(*ifi), link_attr_cb, data);
}

static void link_get(struct mnl_socket *rtnl, const char *name, struct link_info *li)
{
	char buf[256];
	struct nlmsghdr *nlh = link_msg(buf, RTM_GETLINK, 0, name);
	int ret;

	memset(li, 0, sizeof(*li));
	ret = krepro_nl_request(rtnl, nlh, link_cb, li);
	if (ret || !li->index)
		krepro_broken("look up link %s: %s", name, ret ? strerror(-ret) : "no answer");
}

int krepro_link_index(struct mnl_socket *rtnl, const char *name)
{
	struct link_info li;

	link_get(rtnl, name, &li);
	return li.index;
}

void krepro_link_stats(struct mnl_socket *rtnl, const char *name, struct rtnl_link_stats64 *st)
{
	struct link_info li;

	link_get(rtnl, name, &li);
	if (!li.has_stats)
		krepro_broken("link %s: no IFLA_STATS64 in the answer", name);
	*st = li.stats;
}

int krepro_parse_addr(const char *text, struct krepro_addr *a)
{
	char host[INET6_ADDRSTRLEN];
	const char *slash = strchr(text, '/');
	size_t len = slash ? (size_t)(slash - text) : strlen(text);

	memset(a, 0, sizeof(*a));
	if (len >= sizeof(host))
		return -1;
	memcpy(host, text, len);
	host[len] = '\0';
	a->family = strchr(host, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(a->family, host, &a->addr) != 1)
		return -1;
	a->prefixlen = slash ? atoi(slash + 1) : (a->family == AF_INET ? 32 : 128);
	return 0;
}

void krepro_addr_add(struct mnl_socket *rtnl, const char *name, const char *cidr)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct krepro_addr a;
	struct ifaddrmsg *ifa;
	size_t alen;

	if (krepro_parse_addr(cidr, &a))
		krepro_broken("bad address %s", cidr);
	alen = a.family == AF_INET ? 4 : 16;
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (uint8_t)a.family;
	ifa->ifa_prefixlen = (uint8_t)a.prefixlen;
	/* No duplicate address detection: the address is usable at once. */
	ifa->ifa_flags = a.family == AF_INET6 ? IFA_F_NODAD : 0;
	ifa->ifa_index = (uint32_t)krepro_link_index(rtnl, name);
	mnl_attr_put(nlh, IFA_LOCAL, alen, &a.addr);
	mnl_attr_put(nlh, IFA_ADDRESS, alen, &a.addr);
	must_request(rtnl, nlh, "add address to", name);
}

static int family_attr_cb(const struct nlattr *attr, void *data)
{
	if (mnl_attr_get_type(attr) == CTRL_ATTR_FAMILY_ID)
		*(int *)data = mnl_attr_get_u16(attr);
	return MNL_CB_OK;
}

static int family_cb(const struct nlmsghdr *nlh, void *data)
{
	return mnl_attr_parse(nlh, sizeof(struct genlmsghdr), family_attr_cb, data);
}

int krepro_genl_family(struct mnl_socket *genl, const char *name)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;
	int id = 0, ret;

	nlh->nlmsg_type = GENL_ID_CTRL;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = CTRL_CMD_GETFAMILY;
	g->version = 1;
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, name);
	ret = krepro_nl_request(genl, nlh, family_cb, &id);
	if (ret == -ENOENT)
		krepro_skip("no generic netlink family \"%s\"", name);
	if (ret || !id)
		krepro_broken("generic netlink family %s: %s", name,
			      ret ? strerror(-ret) : "no id in the answer");
	return id;
}

/* --- a UDP echo --- */

/* The echo server's loop, in its namespace: IPv4 and IPv6 sockets on port;
 * writes a byte to ready_fd once both listen. */
static _Noreturn void echo_server(uint16_t port, int ready_fd)
{
	struct pollfd pfd[2];
	char buf[256];

	for (int v6 = 0; v6 < 2; v6++) {
		struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
		struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port) };
		int one = 1, fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);

		if (fd < 0 || (v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
		    bind(fd, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
			 v6 ? sizeof(a6) : sizeof(a4))) {
			fprintf(stderr, "echo server: IPv%d socket: %s\n", v6 ? 6 : 4, strerror(errno));
			_exit(1);
		}
		pfd[v6] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	for (;;) {
		if (poll(pfd, 2, -1) < 0)
			continue;
		for (int v6 = 0; v6 < 2; v6++) {
			struct sockaddr_storage from;
			socklen_t flen = sizeof(from);
			ssize_t n;

			if (!(pfd[v6].revents & POLLIN))
				continue;
			n = recvfrom(pfd[v6].fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
			if (n > 0)
				sendto(pfd[v6].fd, buf, (size_t)n, 0, (struct sockaddr *)&from, flen);
		}
	}
}

pid_t krepro_udp_echo_server(int nsfd, uint16_t port)
{
	int ready[2];
	pid_t pid;
	char c;

	SAFE(pipe(ready));
	fflush(stdout);
	pid = (pid_t)SAFE(fork());
	if (pid == 0) {
		close(ready[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setns(nsfd, CLONE_NEWNET) < 0)
			_exit(1);
		echo_server(port, ready[1]);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		krepro_broken("the UDP echo server (port %u) did not start", port);
	close(ready[0]);
	return pid;
}

/* A connected UDP socket to dst:port, bound to dev (NULL: none). */
static int echo_socket(const struct krepro_addr *dst, uint16_t port, const char *dev)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port) };
	bool v6 = dst->family == AF_INET6;
	int fd = (int)SAFE(socket(dst->family, SOCK_DGRAM | SOCK_CLOEXEC, 0));

	memcpy(&a4.sin_addr, dst->addr.v4, 4);
	memcpy(&a6.sin6_addr, dst->addr.v6, 16);
	if (dev)
		SAFE(setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, (socklen_t)strlen(dev) + 1));
	if (connect(fd, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
		    v6 ? sizeof(a6) : sizeof(a4)) < 0) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

int krepro_udp_echo_until(const struct krepro_addr *dst, uint16_t port, const char *dev,
			  int timeout_ms, bool (*lost)(void *arg), void *arg)
{
	static unsigned int seq;
	char msg[64], buf[64];
	double deadline = krepro_now() + timeout_ms / 1000.0;
	int fd = echo_socket(dst, port, dev), ret = -ETIMEDOUT;

	if (fd < 0)
		return -errno;
	snprintf(msg, sizeof(msg), "krepro echo %d.%u", getpid(), ++seq);
	if (send(fd, msg, strlen(msg), 0) < 0)
		ret = -errno;
	for (double left; ret == -ETIMEDOUT && (left = deadline - krepro_now()) > 0;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		/* Rounded up: a wait of 0 ms would spin out the last one. */
		int wait_ms = (int)(left * 1000) + 1;
		ssize_t n;

		if (lost && wait_ms > 20)
			wait_ms = 20;
		if (poll(&pfd, 1, wait_ms) <= 0) {
			if (lost && lost(arg))
				ret = -ECANCELED;
			continue;
		}
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0)	/* an ICMP error for this socket */
			ret = -errno;
		else if ((size_t)n == strlen(msg) && !memcmp(buf, msg, (size_t)n))
			ret = 0;
	}
	close(fd);
	return ret;
}

int krepro_udp_echo(const struct krepro_addr *dst, uint16_t port, const char *dev,
		    int timeout_ms)
{
	return krepro_udp_echo_until(dst, port, dev, timeout_ms, NULL, NULL);
}
