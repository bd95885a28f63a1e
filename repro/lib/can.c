// SPDX-License-Identifier: GPL-2.0
/*
 * CAN for reproducers (can.h): the vcan link over rtnetlink (net.c), PF_CAN
 * sockets. Setup helpers end the case as BROKEN on error.
 */
#define _GNU_SOURCE
#include "can.h"
#include "net.h"

#include <libmnl/libmnl.h>
#include <linux/can.h>
#include <linux/can/raw.h>
#include <sys/socket.h>

int krepro_vcan_add(const char *name)
{
	struct mnl_socket *rtnl = krepro_nl_open(NETLINK_ROUTE);
	int ifindex;

	krepro_link_add(rtnl, name, "vcan");
	krepro_link_up(rtnl, name);
	ifindex = krepro_link_index(rtnl, name);
	mnl_socket_close(rtnl);
	return ifindex;
}

int krepro_can_socket(int type, int proto)
{
	return (int)SAFE(socket(PF_CAN, type | SOCK_CLOEXEC, proto));
}

int krepro_can_raw(int ifindex)
{
	struct sockaddr_can addr = { .can_family = AF_CAN, .can_ifindex = ifindex };
	int fd = krepro_can_socket(SOCK_RAW, CAN_RAW);

	SAFE(bind(fd, (struct sockaddr *)&addr, sizeof(addr)));
	return fd;
}
