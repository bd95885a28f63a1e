// SPDX-License-Identifier: GPL-2.0
/*
 * can-j1939-echo: a CAN driver that echoes a sent frame must hand the stack a
 * clone that holds its own reference on the sending socket. Before upstream
 * 286228d382ba, can_create_echo_skb() passed the sender's own skb on when it
 * was not shared; if the sender closed its socket while the echo still sat
 * in a receive backlog, j1939_can_recv() later took a reference on a socket
 * whose refcount was already 0: "refcount_t: addition on 0; use-after-free".
 *
 * vcan with echo=1 echoes in its xmit; RPS moves the receive to CPU 1, which
 * 200 never-read CAN_RAW sockets slow down, so CPU 1's backlog lags while
 * CPU 0 sends one frame per socket and closes it at once. See README.md.
 */
#define _GNU_SOURCE
#include "krepro.h"
#include "can.h"
#include "net.h"
#include "race.h"
#include "sys.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/can.h>
#include <linux/can/j1939.h>
#include <linux/errqueue.h>
#include <linux/if_link.h>
#include <linux/net_tstamp.h>
#include <linux/sock_diag.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define IFNAME		"vcan0"
#define SENDER_CPU	0
#define RX_CPU		1
/* 29-bit id 0x1823ff40: priority 6, PGN 0x02300 to 0xff (broadcast), SA 0x40. */
#define FRAME_ID	0x1823ff40
#define FRAME_PGN	0x02300
#define FRAME_SA	0x40
#define FRAME_LEN	6	/* 0x01 0x23, then the round number */
#define LISTENERS	200	/* CAN_RAW sockets on vcan0 nobody reads */
/*
 * The bound: window hits as the receiver has counted them so far. Unpatched
 * runs reported at 191-318 of them, a patched run counts 1000 in about 4 s
 * (README, "Trigger"). Rounds and seconds are caps: the rounds' close times
 * fill closed_at[], and a run that reaches a cap first is not judged.
 */
#define MAX_HITS	1000
#define MAX_SENDS	100000
#define MAX_SECONDS	20.0
/* Echoes drain in under 2 s once the listeners close; a loaded host is slower. */
#define DRAIN_SECONDS	30.0
#define BACKLOG		1000	/* net.core.netdev_max_backlog: the default, made explicit */
#define KMSG_EVERY	64	/* sends between looks at kmsg */

static int ifindex;
static atomic_uint received, unexpected;
/*
 * Race coverage. Round r's socket was closed at closed_at[r] (published by
 * `closed`, the rounds closed so far); the kernel stamps each echo when CPU 1
 * starts its receive, just before j1939_can_recv(). An echo stamped after its
 * socket's close was taken by j1939 from a closed socket: the bug's window.
 */
static struct timespec closed_at[MAX_SENDS];
static atomic_uint closed, late_echoes, unstamped;
static atomic_int rx_errno;
static atomic_bool stop;

static void setup(void)
{
	char echo[8];

	if (krepro_read_line("/sys/module/vcan/parameters/echo", echo, sizeof(echo)) < 0 ||
	    echo[0] != 'Y')
		krepro_broken("vcan's echo is off: boot with vcan.echo=1 (run-in-qemu.sh does)");
	ifindex = krepro_vcan_add(IFNAME);
	/* The receive of every frame vcan echoes goes to CPU 1's backlog. */
	krepro_write_file("/sys/class/net/" IFNAME "/queues/rx-0/rps_cpus", "%x", 1u << RX_CPU);
	/*
	 * The lag the race needs is a full backlog on CPU 1: with the
	 * listeners cloning each echo, CPU 1 delivers only tens a second, so
	 * an echo waits there long after its socket closed. Set, not assumed.
	 */
	krepro_write_file("/proc/sys/net/core/netdev_max_backlog", "%d", BACKLOG);
	/* Stamp a received frame when CPU 1 dequeues it, not when vcan queues
	 * it on CPU 0 (before its socket closed): the stamp then tells whether
	 * j1939 met the echo after the close. */
	krepro_write_file("/proc/sys/net/core/netdev_tstamp_prequeue", "0");
}

static void cleanup(void)
{
	krepro_link_cleanup(IFNAME);
}

/* Like `testj1939 -B -r vcan0`: any name, PGN and address; broadcasts too. */
static int j1939_receiver(void)
{
	struct sockaddr_can addr = {
		.can_family = AF_CAN,
		.can_ifindex = ifindex,
		.can_addr.j1939 = { .name = J1939_NO_NAME, .pgn = J1939_NO_PGN,
				    .addr = J1939_NO_ADDR },
	};
	struct timeval tv = { .tv_usec = 100000 };
	/* Software receive stamps; unlike SO_TIMESTAMPNS, a frame the kernel
	 * did not stamp gets none rather than one taken at recvmsg(). */
	int stamps = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
	int one = 1, fd = krepro_can_socket(SOCK_DGRAM, CAN_J1939);

	SAFE(setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one)));
	SAFE(setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &stamps, sizeof(stamps)));
	SAFE(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	SAFE(bind(fd, (struct sockaddr *)&addr, sizeof(addr)));
	return fd;
}

/* The kernel's software receive stamp of a frame, if it has one. */
static bool rx_stamp(struct msghdr *mh, struct timespec *ts)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPING) {
			struct scm_timestamping st;

			memcpy(&st, CMSG_DATA(c), sizeof(st));
			*ts = st.ts[0];
			return ts->tv_sec || ts->tv_nsec;
		}
	return false;
}

static bool later(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec ? a->tv_sec > b->tv_sec : a->tv_nsec > b->tv_nsec;
}

/* An echo of round `round` stamped at `ts`: was its socket closed by then? */
static void count_window(uint32_t round, const struct timespec *ts)
{
	if (round < atomic_load_explicit(&closed, memory_order_acquire) &&
	    later(ts, &closed_at[round]))
		atomic_fetch_add(&late_echoes, 1);
}

static void *receive(void *arg)
{
	int fd = *(int *)arg;

	krepro_pin_cpu(RX_CPU);
	while (!atomic_load(&stop)) {
		struct sockaddr_can from;
		unsigned char data[8];
		char control[CMSG_SPACE(sizeof(struct scm_timestamping))];
		struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
		struct msghdr mh = {
			.msg_name = &from, .msg_namelen = sizeof(from),
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = control, .msg_controllen = sizeof(control),
		};
		struct timespec ts;
		uint32_t round;
		ssize_t n = recvmsg(fd, &mh, 0);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			atomic_store(&rx_errno, errno);
			break;
		}
		if (n != FRAME_LEN || data[0] != 0x01 || data[1] != 0x23 ||
		    from.can_addr.j1939.pgn != FRAME_PGN || from.can_addr.j1939.addr != FRAME_SA) {
			atomic_fetch_add(&unexpected, 1);
			continue;
		}
		atomic_fetch_add(&received, 1);
		memcpy(&round, data + 2, sizeof(round));
		if (rx_stamp(&mh, &ts))
			count_window(round, &ts);
		else
			atomic_fetch_add(&unstamped, 1);
	}
	return NULL;
}

/*
 * One round: a new CAN_RAW socket sends the frame and is closed at once.
 * The frame carries its round number, so its echo can be matched with the
 * time its socket closed.
 */
static void send_and_close(uint32_t round)
{
	struct can_frame frame = {
		.can_id = FRAME_ID | CAN_EFF_FLAG, .len = FRAME_LEN, .data = { 0x01, 0x23 },
	};
	int fd = krepro_can_raw(ifindex);
	ssize_t n;

	memcpy(frame.data + 2, &round, sizeof(round));
	n = write(fd, &frame, sizeof(frame));
	if (n != (ssize_t)sizeof(frame))
		krepro_broken("round %u: write to CAN_RAW returned %zd: %s", round, n,
			      n < 0 ? strerror(errno) : "short write");
	close(fd);
	clock_gettime(CLOCK_REALTIME, &closed_at[round]);
	atomic_store_explicit(&closed, round + 1, memory_order_release);
}

/*
 * Echoes the kernel dropped: netif_rx() when CPU 1's backlog is full (vcan0's
 * rx_dropped), and the j1939 socket when its receive buffer is full.
 */
static unsigned long long echoes_dropped(struct mnl_socket *rtnl, int rx)
{
	struct rtnl_link_stats64 st;
	unsigned int mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	krepro_link_stats(rtnl, IFNAME, &st);
	SAFE(getsockopt(rx, SOL_SOCKET, SO_MEMINFO, mem, &len));
	return st.rx_dropped + mem[SK_MEMINFO_DROPS];
}

/*
 * A kernel report after the race started? Quote it, with the j1939_can_recv
 * frame of its trace (read on until the end of the trace, 2 s at most).
 */
static bool report_seen(int kmsg, unsigned int sent)
{
	char report[1024], frame[256];

	if (!krepro_kmsg_report(kmsg, report, sizeof(report)))
		return false;
	krepro_kmsg_trace(kmsg, "j1939_can_recv", frame, sizeof(frame), 2.0);
	/* The host decides whether the report is this bug (its signature:
	 * refcount_t, a j1939_ frame); any other report is OTHER. */
	if (frame[0])
		krepro_report("after %u sends (%.1f s): \"%s\", taken in %s: a reference on a "
			      "closed socket", sent, krepro_elapsed(), report, frame);
	else
		krepro_report("after %u sends (%.1f s): \"%s\" (no j1939_can_recv in its trace)",
			      sent, krepro_elapsed(), report);
	return true;
}

struct drain {
	struct mnl_socket *rtnl;
	int rx;
	unsigned int sent;
	unsigned long long dropped_before, dropped;
};

/* Is every echo sent received or counted as dropped? */
static bool drained(void *arg)
{
	struct drain *d = arg;

	d->dropped = echoes_dropped(d->rtnl, d->rx) - d->dropped_before;
	return atomic_load(&received) + d->dropped >= d->sent;
}

/* The counts, then the verdict of a race that saw no report. */
static void judge(const struct krepro_race *race, const struct drain *d, bool reported)
{
	/* A race stopped by its report printed its counts then (race.c). */
	if (!race->stopped)
		krepro_race_counts(race);
	krepro_info("the j1939 receiver got %u echoes (and %u unexpected frames), the kernel "
		    "dropped %llu (CPU 1's backlog full, or the j1939 socket's buffer); %u echoes "
		    "carried no receive stamp", atomic_load(&received), atomic_load(&unexpected),
		    d->dropped, atomic_load(&unstamped));
	if (atomic_load(&rx_errno))
		krepro_broken("j1939 recvfrom: %s", strerror(atomic_load(&rx_errno)));
	if (reported)
		return;
	/*
	 * Echoes not accounted for are no evidence of this bug (its evidence is
	 * the refcount report): a slow host can leave them in flight past the
	 * drain. The run then cannot say the window was exercised cleanly.
	 */
	if (atomic_load(&received) + d->dropped != d->sent || atomic_load(&unexpected))
		krepro_broken("of %u frames sent, the j1939 receiver got %u echoes and the "
			      "kernel dropped %llu (%u unexpected frames) after a %.0f s drain: "
			      "not every echo is accounted for, so the run is not judged",
			      d->sent, atomic_load(&received), d->dropped,
			      atomic_load(&unexpected), DRAIN_SECONDS);
	krepro_race_pass(race, "no kernel report; %u echoes received, %llu dropped",
			 atomic_load(&received), d->dropped);
}

/* The sender's side of the race, for krepro_race_run(). */
struct sender {
	int kmsg;
	bool reported;
};

/* One round: send and close; every KMSG_EVERY rounds, a look for a report. */
static bool send_round(struct krepro_race *r, void *arg)
{
	struct sender *s = arg;

	send_and_close((uint32_t)r->rounds++);
	r->hits = atomic_load(&late_echoes);
	if (r->rounds % KMSG_EVERY == 0)
		s->reported = report_seen(s->kmsg, (unsigned int)r->rounds);
	return !s->reported;
}

/* CAN_RAW sockets on vcan0 that nobody reads: each echo is cloned to them. */
static void open_listeners(int listeners[LISTENERS])
{
	for (int i = 0; i < LISTENERS; i++)
		listeners[i] = krepro_can_raw(ifindex);
}

static void run_race(void)
{
	int listeners[LISTENERS], rx = j1939_receiver();
	struct mnl_socket *rtnl = krepro_nl_open(NETLINK_ROUTE);
	struct sender sender = { .kmsg = krepro_kmsg_open() };
	struct krepro_race race = {
		.rounds_of = "send-and-close rounds", .window = "echoes that reached j1939 "
		"after their socket had closed", .max_hits = MAX_HITS, .max_rounds = MAX_SENDS,
		.max_seconds = MAX_SECONDS, .step = send_round, .ctx = &sender,
	};
	struct drain drain = { .rtnl = rtnl, .rx = rx, .dropped_before = echoes_dropped(rtnl, rx) };
	pthread_t thread;
	int err;

	if (sender.kmsg < 0)
		krepro_broken("open /dev/kmsg: %s", strerror(errno));
	open_listeners(listeners);
	err = pthread_create(&thread, NULL, receive, &rx);
	if (err)
		krepro_broken("pthread_create: %s", strerror(err));
	krepro_pin_cpu(SENDER_CPU);
	krepro_race_run(&race);
	/*
	 * Every echo is received or counted as dropped, once CPU 1 catches up.
	 * Closing the listeners first lets it: a full backlog behind 200 clones
	 * an echo takes half a minute to drain, without them it drains at once (see README).
	 */
	for (int i = 0; i < LISTENERS; i++)
		close(listeners[i]);
	drain.sent = (unsigned int)race.rounds;
	krepro_poll_until(drained, &drain, DRAIN_SECONDS, 0.1, NULL);
	atomic_store(&stop, true);
	pthread_join(thread, NULL);
	if (!sender.reported)
		sender.reported = report_seen(sender.kmsg, drain.sent);
	race.hits = atomic_load(&late_echoes);
	judge(&race, &drain, sender.reported);
	close(rx);
	close(sender.kmsg);
	mnl_socket_close(rtnl);
}

static const char *const kconfigs[] = {
	"CONFIG_CAN_VCAN", "CONFIG_CAN_RAW", "CONFIG_CAN_J1939", "CONFIG_RPS", NULL,
};

static const struct krepro_case cases[] = {
	{ "send_close_race", run_race },
	{ NULL, NULL },
};

/*
 * The bug's kernel report (README, Evidence): sock_hold() on the closed
 * socket, "refcount_t: addition on 0; use-after-free." (with its WARNING, one
 * report to the host), with j1939 in the trace. The "saturated" and other
 * refcount_t warnings that follow are consequences, not declared. No
 * detector: refcount_t checks its counts on every 6.1 kernel.
 */
static const struct krepro_signature signatures[] = {
	{ "REFCOUNT", "^refcount_t: addition on 0; use-after-free$", "j1939_.*", NULL },
	{ NULL },
};

static const struct krepro_test test = {
	.name = "can-j1939-echo",
	.summary = "echo skb not cloned: j1939 takes a reference on a closed socket",
	.fix_commit = "286228d382ba (\"can: can_create_echo_skb(): fix echo skb generation: "
		      "always use skb_clone()\")",
	.bug_commit = "0ae89beb283a (\"can: add destructor for self generated skbs\")",
	.seed = "005-patch-can-can-create-echo-skb-fix-echo-skb-generation-always-u.patch",
	.needs_kconfigs = kconfigs,
	.signatures = signatures,
	.min_cpus = 2,
	.alone = true,
	.timeout = 90,
	.cmdline = "vcan.echo=1",
	.setup = setup,
	.cleanup = cleanup,
	.cases = cases,
};

KREPRO_MAIN(test)
