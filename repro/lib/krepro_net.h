/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Network links over rtnetlink (libnl-route), for reproducers that need a
 * virtual device. Link the reproducer with krepro_net (CMakeLists.txt).
 */
#ifndef KREPRO_NET_H
#define KREPRO_NET_H

/* Create link `name` of kind `kind` ("vcan", "dummy", "wireguard", ...), as
 * `ip link add NAME type KIND` does; returns its ifindex. BROKEN on error. */
int krepro_link_add(const char *name, const char *kind);
/* Set link `name` up, as `ip link set NAME up` does. BROKEN on error. */
void krepro_link_up(const char *name);
/* Delete link `name`; 0, or a negative errno (-ENODEV when it is not there).
 * Never BROKEN: cleanup calls it whatever setup managed to do. */
int krepro_link_del(const char *name);

#endif
