// SPDX-License-Identifier: GPL-2.0
/*
 * The part of libmnl's API that krepro and libnftnl.a call, for static links.
 *
 * Debian ships libmnl only as a shared library (libmnl-dev has libmnl.so and
 * no libmnl.a), and reproducers are static. CMakeLists.txt links the real
 * libmnl.a when the machine has one and builds this file only when it does
 * not. The declarations are libmnl's own (<libmnl/libmnl.h>), so callers
 * cannot tell the two apart; the behaviour follows libmnl's documentation.
 * Only what `nm -u libnftnl.a` and repro/lib/net.c need is here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libmnl/libmnl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct mnl_socket {
	int fd;
	struct sockaddr_nl addr;
};

/* --- sockets --- */

struct mnl_socket *mnl_socket_open(int bus)
{
	struct mnl_socket *nl = calloc(1, sizeof(*nl));

	if (!nl)
		return NULL;
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, bus);
	if (nl->fd < 0) {
		free(nl);
		return NULL;
	}
	return nl;
}

int mnl_socket_bind(struct mnl_socket *nl, unsigned int groups, pid_t pid)
{
	socklen_t len = sizeof(nl->addr);

	nl->addr.nl_family = AF_NETLINK;
	nl->addr.nl_groups = groups;
	nl->addr.nl_pid = (__u32)pid;
	if (bind(nl->fd, (struct sockaddr *)&nl->addr, sizeof(nl->addr)) < 0)
		return -1;
	if (getsockname(nl->fd, (struct sockaddr *)&nl->addr, &len) < 0)
		return -1;
	if (len != sizeof(nl->addr) || nl->addr.nl_family != AF_NETLINK) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int mnl_socket_close(struct mnl_socket *nl)
{
	int ret = close(nl->fd);

	free(nl);
	return ret;
}

int mnl_socket_get_fd(const struct mnl_socket *nl)
{
	return nl->fd;
}

unsigned int mnl_socket_get_portid(const struct mnl_socket *nl)
{
	return nl->addr.nl_pid;
}

ssize_t mnl_socket_sendto(const struct mnl_socket *nl, const void *buf, size_t len)
{
	static const struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	return sendto(nl->fd, buf, len, 0, (const struct sockaddr *)&kernel, sizeof(kernel));
}

ssize_t mnl_socket_recvfrom(const struct mnl_socket *nl, void *buf, size_t bufsiz)
{
	struct sockaddr_nl from;
	struct iovec iov = { .iov_base = buf, .iov_len = bufsiz };
	struct msghdr msg = {
		.msg_name = &from, .msg_namelen = sizeof(from),
		.msg_iov = &iov, .msg_iovlen = 1,
	};
	ssize_t ret = recvmsg(nl->fd, &msg, 0);

	if (ret < 0)
		return ret;
	if (msg.msg_flags & MSG_TRUNC) {
		errno = ENOSPC;
		return -1;
	}
	if (msg.msg_namelen != sizeof(from)) {
		errno = EINVAL;
		return -1;
	}
	return ret;
}

/* --- messages --- */

struct nlmsghdr *mnl_nlmsg_put_header(void *buf)
{
	struct nlmsghdr *nlh = buf;

	memset(buf, 0, MNL_NLMSG_HDRLEN);
	nlh->nlmsg_len = MNL_NLMSG_HDRLEN;
	return nlh;
}

void *mnl_nlmsg_put_extra_header(struct nlmsghdr *nlh, size_t size)
{
	char *p = (char *)nlh + nlh->nlmsg_len;
	size_t len = MNL_ALIGN(size);

	nlh->nlmsg_len += len;
	memset(p, 0, len);
	return p;
}

void *mnl_nlmsg_get_payload(const struct nlmsghdr *nlh)
{
	return (char *)nlh + MNL_NLMSG_HDRLEN;
}

void *mnl_nlmsg_get_payload_offset(const struct nlmsghdr *nlh, size_t offset)
{
	return (char *)nlh + MNL_NLMSG_HDRLEN + MNL_ALIGN(offset);
}

void *mnl_nlmsg_get_payload_tail(const struct nlmsghdr *nlh)
{
	return (char *)nlh + MNL_ALIGN(nlh->nlmsg_len);
}

bool mnl_nlmsg_ok(const struct nlmsghdr *nlh, int len)
{
	return len >= (int)sizeof(struct nlmsghdr) &&
	       nlh->nlmsg_len >= sizeof(struct nlmsghdr) && (int)nlh->nlmsg_len <= len;
}

struct nlmsghdr *mnl_nlmsg_next(const struct nlmsghdr *nlh, int *len)
{
	*len -= (int)MNL_ALIGN(nlh->nlmsg_len);
	return (struct nlmsghdr *)((char *)nlh + MNL_ALIGN(nlh->nlmsg_len));
}

bool mnl_nlmsg_seq_ok(const struct nlmsghdr *nlh, unsigned int seq)
{
	return nlh->nlmsg_seq && seq ? nlh->nlmsg_seq == seq : true;
}

bool mnl_nlmsg_portid_ok(const struct nlmsghdr *nlh, unsigned int portid)
{
	return nlh->nlmsg_pid && portid ? nlh->nlmsg_pid == portid : true;
}

/* --- batches: netlink messages back to back in one buffer --- */

struct mnl_nlmsg_batch {
	char *buf;
	size_t limit;
	size_t buflen;
	char *cur;
	bool overflow;
};

struct mnl_nlmsg_batch *mnl_nlmsg_batch_start(void *buf, size_t limit)
{
	struct mnl_nlmsg_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->buf = buf;
	b->limit = limit;
	b->cur = buf;
	return b;
}

/* Take the current message into the batch; false when it does not fit. */
bool mnl_nlmsg_batch_next(struct mnl_nlmsg_batch *b)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)b->cur;

	if (b->buflen + nlh->nlmsg_len > b->limit) {
		b->overflow = true;
		return false;
	}
	b->buflen += nlh->nlmsg_len;
	b->cur = b->buf + b->buflen;
	return true;
}

void mnl_nlmsg_batch_stop(struct mnl_nlmsg_batch *b)
{
	free(b);
}

size_t mnl_nlmsg_batch_size(struct mnl_nlmsg_batch *b)
{
	return b->buflen;
}

/* Empty the batch; a message that did not fit moves to the front. */
void mnl_nlmsg_batch_reset(struct mnl_nlmsg_batch *b)
{
	if (b->overflow) {
		struct nlmsghdr *nlh = (struct nlmsghdr *)b->cur;

		memmove(b->buf, b->cur, nlh->nlmsg_len);
		b->buflen = nlh->nlmsg_len;
		b->cur = b->buf + b->buflen;
		b->overflow = false;
	} else {
		b->buflen = 0;
		b->cur = b->buf;
	}
}

void *mnl_nlmsg_batch_head(struct mnl_nlmsg_batch *b)
{
	return b->buf;
}

void *mnl_nlmsg_batch_current(struct mnl_nlmsg_batch *b)
{
	return b->cur;
}

bool mnl_nlmsg_batch_is_empty(struct mnl_nlmsg_batch *b)
{
	return b->buflen == 0;
}

/* --- attributes --- */

uint16_t mnl_attr_get_type(const struct nlattr *attr)
{
	return attr->nla_type & NLA_TYPE_MASK;
}

uint16_t mnl_attr_get_len(const struct nlattr *attr)
{
	return attr->nla_len;
}

uint16_t mnl_attr_get_payload_len(const struct nlattr *attr)
{
	return (uint16_t)(attr->nla_len - MNL_ATTR_HDRLEN);
}

void *mnl_attr_get_payload(const struct nlattr *attr)
{
	return (char *)attr + MNL_ATTR_HDRLEN;
}

uint8_t mnl_attr_get_u8(const struct nlattr *attr)
{
	return *(uint8_t *)mnl_attr_get_payload(attr);
}

uint16_t mnl_attr_get_u16(const struct nlattr *attr)
{
	uint16_t v;

	memcpy(&v, mnl_attr_get_payload(attr), sizeof(v));
	return v;
}

uint32_t mnl_attr_get_u32(const struct nlattr *attr)
{
	uint32_t v;

	memcpy(&v, mnl_attr_get_payload(attr), sizeof(v));
	return v;
}

uint64_t mnl_attr_get_u64(const struct nlattr *attr)
{
	uint64_t v;

	memcpy(&v, mnl_attr_get_payload(attr), sizeof(v));
	return v;
}

const char *mnl_attr_get_str(const struct nlattr *attr)
{
	return mnl_attr_get_payload(attr);
}

bool mnl_attr_ok(const struct nlattr *attr, int len)
{
	return len >= (int)sizeof(struct nlattr) && attr->nla_len >= sizeof(struct nlattr) &&
	       (int)attr->nla_len <= len;
}

struct nlattr *mnl_attr_next(const struct nlattr *attr)
{
	return (struct nlattr *)((char *)attr + MNL_ALIGN(attr->nla_len));
}

int mnl_attr_type_valid(const struct nlattr *attr, uint16_t max)
{
	if (mnl_attr_get_type(attr) > max) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return 1;
}

/* The payload length each fixed-size type must have; 0: no fixed size. */
static const size_t type_len[MNL_TYPE_MAX] = {
	[MNL_TYPE_U8] = sizeof(uint8_t),
	[MNL_TYPE_U16] = sizeof(uint16_t),
	[MNL_TYPE_U32] = sizeof(uint32_t),
	[MNL_TYPE_U64] = sizeof(uint64_t),
	[MNL_TYPE_MSECS] = sizeof(uint64_t),
};

int mnl_attr_validate2(const struct nlattr *attr, enum mnl_attr_data_type type, size_t exp_len)
{
	uint16_t len = mnl_attr_get_payload_len(attr);
	const char *p = mnl_attr_get_payload(attr);

	if (type >= MNL_TYPE_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (attr->nla_len < MNL_ATTR_HDRLEN) {
		errno = ERANGE;
		return -1;
	}
	switch (type) {
	case MNL_TYPE_FLAG:
		if (len) {
			errno = ERANGE;
			return -1;
		}
		break;
	case MNL_TYPE_NUL_STRING:
		if (!len || p[len - 1]) {
			errno = EINVAL;
			return -1;
		}
		break;
	case MNL_TYPE_STRING:
		if (!len) {
			errno = ERANGE;
			return -1;
		}
		break;
	case MNL_TYPE_NESTED:
		if (len && len < MNL_ATTR_HDRLEN) {
			errno = ERANGE;
			return -1;
		}
		break;
	default:
		break;
	}
	if (exp_len && len != exp_len) {
		errno = ERANGE;
		return -1;
	}
	return 0;
}

int mnl_attr_validate(const struct nlattr *attr, enum mnl_attr_data_type type)
{
	if (type >= MNL_TYPE_MAX) {
		errno = EINVAL;
		return -1;
	}
	return mnl_attr_validate2(attr, type, type_len[type]);
}

int mnl_attr_parse_payload(const void *payload, size_t len, mnl_attr_cb_t cb, void *data)
{
	const struct nlattr *attr = payload;
	int left = (int)len, ret;

	while (mnl_attr_ok(attr, left)) {
		ret = cb(attr, data);
		if (ret <= MNL_CB_STOP)
			return ret;
		left -= (int)MNL_ALIGN(attr->nla_len);
		attr = mnl_attr_next(attr);
	}
	return MNL_CB_OK;
}

int mnl_attr_parse(const struct nlmsghdr *nlh, unsigned int offset, mnl_attr_cb_t cb, void *data)
{
	const char *start = mnl_nlmsg_get_payload_offset(nlh, offset);

	return mnl_attr_parse_payload(start, (size_t)((const char *)nlh + nlh->nlmsg_len - start),
				      cb, data);
}

int mnl_attr_parse_nested(const struct nlattr *nested, mnl_attr_cb_t cb, void *data)
{
	return mnl_attr_parse_payload(mnl_attr_get_payload(nested),
				      mnl_attr_get_payload_len(nested), cb, data);
}

void mnl_attr_put(struct nlmsghdr *nlh, uint16_t type, size_t len, const void *data)
{
	struct nlattr *attr = mnl_nlmsg_get_payload_tail(nlh);
	size_t total = MNL_ATTR_HDRLEN + len;

	attr->nla_type = type;
	attr->nla_len = (uint16_t)total;
	memcpy(mnl_attr_get_payload(attr), data, len);
	memset((char *)attr + total, 0, MNL_ALIGN(total) - total);
	nlh->nlmsg_len += MNL_ALIGN(total);
}

void mnl_attr_put_u8(struct nlmsghdr *nlh, uint16_t type, uint8_t v)
{
	mnl_attr_put(nlh, type, sizeof(v), &v);
}

void mnl_attr_put_u16(struct nlmsghdr *nlh, uint16_t type, uint16_t v)
{
	mnl_attr_put(nlh, type, sizeof(v), &v);
}

void mnl_attr_put_u32(struct nlmsghdr *nlh, uint16_t type, uint32_t v)
{
	mnl_attr_put(nlh, type, sizeof(v), &v);
}

void mnl_attr_put_u64(struct nlmsghdr *nlh, uint16_t type, uint64_t v)
{
	mnl_attr_put(nlh, type, sizeof(v), &v);
}

void mnl_attr_put_str(struct nlmsghdr *nlh, uint16_t type, const char *s)
{
	mnl_attr_put(nlh, type, strlen(s), s);
}

void mnl_attr_put_strz(struct nlmsghdr *nlh, uint16_t type, const char *s)
{
	mnl_attr_put(nlh, type, strlen(s) + 1, s);
}

struct nlattr *mnl_attr_nest_start(struct nlmsghdr *nlh, uint16_t type)
{
	struct nlattr *start = mnl_nlmsg_get_payload_tail(nlh);

	start->nla_type = NLA_F_NESTED | type;
	start->nla_len = MNL_ATTR_HDRLEN;
	nlh->nlmsg_len += MNL_ATTR_HDRLEN;
	return start;
}

void mnl_attr_nest_end(struct nlmsghdr *nlh, struct nlattr *start)
{
	start->nla_len = (uint16_t)((char *)mnl_nlmsg_get_payload_tail(nlh) - (char *)start);
}

void mnl_attr_nest_cancel(struct nlmsghdr *nlh, struct nlattr *start)
{
	nlh->nlmsg_len -= (uint32_t)((char *)mnl_nlmsg_get_payload_tail(nlh) - (char *)start);
}

/* --- callbacks --- */

/*
 * Run cb on each data message in buf. Control messages: an error message
 * (an ACK when its error is 0) and NLMSG_DONE end the run (MNL_CB_STOP, or
 * MNL_CB_ERROR with errno); a message for another socket is ESRCH, for
 * another request EPROTO.
 */
int mnl_cb_run(const void *buf, size_t numbytes, unsigned int seq, unsigned int portid,
	       mnl_cb_t cb, void *data)
{
	const struct nlmsghdr *nlh = buf;
	int len = (int)numbytes, ret = MNL_CB_OK;

	while (mnl_nlmsg_ok(nlh, len)) {
		if (!mnl_nlmsg_portid_ok(nlh, portid)) {
			errno = ESRCH;
			return MNL_CB_ERROR;
		}
		if (!mnl_nlmsg_seq_ok(nlh, seq)) {
			errno = EPROTO;
			return MNL_CB_ERROR;
		}
		if (nlh->nlmsg_flags & NLM_F_DUMP_INTR) {
			errno = EINTR;
			return MNL_CB_ERROR;
		}
		if (nlh->nlmsg_type >= NLMSG_MIN_TYPE) {
			if (cb) {
				ret = cb(nlh, data);
				if (ret <= MNL_CB_STOP)
					return ret;
			}
		} else if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);

			if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + sizeof(*err)) {
				errno = EBADMSG;
				return MNL_CB_ERROR;
			}
			errno = err->error < 0 ? -err->error : err->error;
			return err->error == 0 ? MNL_CB_STOP : MNL_CB_ERROR;
		} else if (nlh->nlmsg_type == NLMSG_DONE) {
			return MNL_CB_STOP;
		}	/* NLMSG_NOOP, NLMSG_OVERRUN: nothing to do */
		nlh = mnl_nlmsg_next(nlh, &len);
	}
	return ret;
}
