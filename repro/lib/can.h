/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CAN (can.c, in krepro_net): a vcan link brought up over rtnetlink, and
 * PF_CAN sockets. Setup helpers end the case as BROKEN on error.
 */
#ifndef KREPRO_CAN_H
#define KREPRO_CAN_H

#include "krepro.h"

/* Create the vcan link `name` (SKIP when the kernel has no vcan) and set it
 * up: its ifindex. */
int krepro_vcan_add(const char *name);
/* A PF_CAN socket (SOCK_RAW and CAN_RAW, SOCK_DGRAM and CAN_J1939, ...),
 * close-on-exec. */
int krepro_can_socket(int type, int proto);
/* A CAN_RAW socket bound to the CAN interface ifindex. */
int krepro_can_raw(int ifindex);

#endif
