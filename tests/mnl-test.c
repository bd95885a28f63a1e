// SPDX-License-Identifier: GPL-2.0
/*
 * Unit test of the libmnl the reproducers link (repro/lib/mnl.c where the
 * machine has no libmnl.a): build messages, parse them back, run the
 * callback loop over data, ACK and error messages. No socket is opened.
 * The same file passes against Debian's libmnl.so (gcc mnl-test.c -lmnl).
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond) do { \
	if (!(cond)) { \
		printf("not ok: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		failures++; \
	} \
} while (0)

struct seen {
	unsigned int u32, nested_u8, count;
	char str[16];
};

static int nested_cb(const struct nlattr *attr, void *data)
{
	struct seen *s = data;

	if (mnl_attr_get_type(attr) == 1 && mnl_attr_validate(attr, MNL_TYPE_U8) == 0)
		s->nested_u8 = mnl_attr_get_u8(attr);
	return MNL_CB_OK;
}

static int attr_cb(const struct nlattr *attr, void *data)
{
	struct seen *s = data;

	s->count++;
	switch (mnl_attr_get_type(attr)) {
	case 1:
		CHECK(mnl_attr_validate(attr, MNL_TYPE_U32) == 0);
		CHECK(mnl_attr_validate(attr, MNL_TYPE_U16) < 0 && errno == ERANGE);
		s->u32 = mnl_attr_get_u32(attr);
		break;
	case 2:
		CHECK(mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) == 0);
		snprintf(s->str, sizeof(s->str), "%s", mnl_attr_get_str(attr));
		break;
	case 3:
		CHECK(attr->nla_type & NLA_F_NESTED);
		return mnl_attr_parse_nested(attr, nested_cb, data);
	}
	return MNL_CB_OK;
}

static int msg_cb(const struct nlmsghdr *nlh, void *data)
{
	return mnl_attr_parse(nlh, sizeof(unsigned int), attr_cb, data);
}

int main(void)
{
	char buf[1024] __attribute__((aligned(4)));
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf), *ack;
	struct nlmsgerr *err;
	unsigned int *extra;
	struct nlattr *nest;
	struct seen s = { 0 };
	size_t len;

	nlh->nlmsg_type = NLMSG_MIN_TYPE + 1;
	nlh->nlmsg_seq = 7;
	extra = mnl_nlmsg_put_extra_header(nlh, sizeof(*extra));
	*extra = 0xabcd;
	mnl_attr_put_u32(nlh, 1, 0x12345678);
	mnl_attr_put_strz(nlh, 2, "wg0");		/* 4 bytes: no padding */
	nest = mnl_attr_nest_start(nlh, 3);
	mnl_attr_put_u8(nlh, 1, 42);			/* 1 byte, 3 of padding */
	mnl_attr_nest_end(nlh, nest);
	CHECK(nlh->nlmsg_len == 16 + 4 + 8 + 8 + (4 + 8));
	CHECK(nest->nla_len == 12);
	CHECK(*(unsigned int *)mnl_nlmsg_get_payload(nlh) == 0xabcd);

	/* The data message, then an ACK for it, in one buffer. */
	len = nlh->nlmsg_len;
	ack = (struct nlmsghdr *)(buf + len);
	mnl_nlmsg_put_header(ack);
	ack->nlmsg_type = NLMSG_ERROR;
	ack->nlmsg_seq = 7;
	err = mnl_nlmsg_put_extra_header(ack, sizeof(*err));
	err->error = 0;
	len += ack->nlmsg_len;
	CHECK(mnl_cb_run(buf, len, 7, 0, msg_cb, &s) == MNL_CB_STOP);
	CHECK(s.count == 3 && s.u32 == 0x12345678 && !strcmp(s.str, "wg0") && s.nested_u8 == 42);

	/* Another request's answer; then a kernel error. */
	CHECK(mnl_cb_run(buf, len, 8, 0, msg_cb, &s) == MNL_CB_ERROR && errno == EPROTO);
	err->error = -EEXIST;
	CHECK(mnl_cb_run(ack, ack->nlmsg_len, 7, 0, NULL, NULL) == MNL_CB_ERROR &&
	      errno == EEXIST);

	/* A batch takes whole messages only. */
	{
		char bbuf[64];
		struct mnl_nlmsg_batch *b = mnl_nlmsg_batch_start(bbuf, sizeof(bbuf));
		struct nlmsghdr *m = mnl_nlmsg_put_header(mnl_nlmsg_batch_current(b));

		CHECK(mnl_nlmsg_batch_is_empty(b));
		mnl_attr_put_u64(m, 1, 1);
		CHECK(mnl_nlmsg_batch_next(b) && mnl_nlmsg_batch_size(b) == 28);
		m = mnl_nlmsg_put_header(mnl_nlmsg_batch_current(b));
		mnl_attr_put(m, 1, 24, bbuf);	/* 16 + 28 more: 72 > 64 */
		CHECK(!mnl_nlmsg_batch_next(b) && mnl_nlmsg_batch_size(b) == 28);
		mnl_nlmsg_batch_stop(b);
	}
	printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
	return failures ? 1 : 0;
}
