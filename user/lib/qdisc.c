// SPDX-License-Identifier: GPL-2.0
/* tc over rtnetlink, with libmnl: the root qdisc (fq, for action shape),
 * the clsact qdisc, and the filters on it. */
#include <errno.h>
#include <stdio.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include "lib/qdisc.h"

/* One request, answered by an ack or by a dump that cb reads. */
static int rtnl_talk(struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	unsigned int seq = nlh->nlmsg_seq = time(NULL), port;
	int ret, err = 0;

	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		err = -errno;
		goto out;
	}
	port = mnl_socket_get_portid(nl);
	do {
		ret = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (ret < 0) {
			err = -errno;
			break;
		}
		ret = mnl_cb_run(buf, ret, seq, port, cb, data);
	} while (ret > 0);
	if (ret < 0 && !err)
		err = -errno;
out:
	mnl_socket_close(nl);
	return err;
}

static struct nlmsghdr *qdisc_msg(char *buf, int type, int flags, int ifindex, __u32 parent)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct tcmsg *tc;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	tc = mnl_nlmsg_put_extra_header(nlh, sizeof(*tc));
	tc->tcm_family = AF_UNSPEC;
	tc->tcm_ifindex = ifindex;
	tc->tcm_parent = parent;
	return nlh;
}

struct qdisc_scan {
	int ifindex;
	char root[IFNAMSIZ];  /* kind of the root qdisc */
	__u32 mq;           /* handle of a root mq, 0 if none */
	int root_fq;
	int mq_children;
	int mq_fq;
	int clsact;
};

static int scan_one(const struct nlmsghdr *nlh, void *data)
{
	struct qdisc_scan *s = data;
	const struct tcmsg *tc = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *attr;
	const char *kind = "";

	if (tc->tcm_ifindex != s->ifindex)
		return MNL_CB_OK;
	mnl_attr_for_each(attr, nlh, sizeof(*tc))
		if (mnl_attr_get_type(attr) == TCA_KIND)
			kind = mnl_attr_get_str(attr);
	if (tc->tcm_parent == TC_H_CLSACT) {
		s->clsact = 1;
	} else if (tc->tcm_parent == TC_H_ROOT) {
		snprintf(s->root, sizeof(s->root), "%s", kind);
		s->root_fq = !strcmp(kind, "fq");
		if (!strcmp(kind, "mq"))
			s->mq = tc->tcm_handle;
	} else if (s->mq && TC_H_MAJ(tc->tcm_parent) == s->mq) {
		s->mq_children++;
		s->mq_fq += !strcmp(kind, "fq");
	}
	return MNL_CB_OK;
}

static int scan(int ifindex, struct qdisc_scan *s)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];

	memset(s, 0, sizeof(*s));
	s->ifindex = ifindex;
	/* The kernel dumps a root before the qdiscs under it. */
	return rtnl_talk(qdisc_msg(buf, RTM_GETQDISC, NLM_F_DUMP, ifindex, 0), scan_one, s);
}

int qdisc_fq_paces(int ifindex)
{
	struct qdisc_scan s;
	int err = scan(ifindex, &s);

	if (err)
		return err;
	return s.root_fq || (s.mq && s.mq_children && s.mq_children == s.mq_fq);
}

int qdisc_clsact_exists(int ifindex)
{
	struct qdisc_scan s;
	int err = scan(ifindex, &s);

	return err ? err : s.clsact;
}

int qdisc_fq_install(int ifindex, char *root, size_t len)
{
	/* What a device has unless someone configured it. */
	static const char *const defaults[] = { "", "noqueue", "pfifo_fast", "fq_codel", "mq", NULL };
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct qdisc_scan s;
	struct nlmsghdr *nlh;
	int err = scan(ifindex, &s), i;

	if (err)
		return err;
	for (i = 0; defaults[i] && strcmp(defaults[i], s.root); i++)
		;
	if (!defaults[i]) {
		snprintf(root, len, "%s", s.root);
		return -EEXIST;
	}
	nlh = qdisc_msg(buf, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK, ifindex, TC_H_ROOT);
	mnl_attr_put_strz(nlh, TCA_KIND, "fq");
	return rtnl_talk(nlh, NULL, NULL);
}

int qdisc_fq_delete(int ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = qdisc_msg(buf, RTM_DELQDISC, NLM_F_ACK, ifindex, TC_H_ROOT);

	/* With a kind, the kernel deletes the root only if it is of that
	 * kind, in the same step (-EINVAL if not). */
	mnl_attr_put_strz(nlh, TCA_KIND, "fq");
	return rtnl_talk(nlh, NULL, NULL);
}

struct filter_scan {
	int ifindex;
	__u32 handle;
	__u16 prio;
	struct tc_filters *f;
};

static int filter_opts(const struct nlattr *attr, void *data)
{
	if (mnl_attr_get_type(attr) == TCA_BPF_ID && mnl_attr_get_payload_len(attr) >= sizeof(__u32))
		*(__u32 *)data = mnl_attr_get_u32(attr);
	return MNL_CB_OK;
}

static int filter_one(const struct nlmsghdr *nlh, void *data)
{
	struct filter_scan *s = data;
	const struct tcmsg *tc = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *attr;
	const char *kind = "";
	__u32 id = 0;

	/* Handle 0: the entry of a priority's filter list, not a filter. */
	if (tc->tcm_ifindex != s->ifindex || !tc->tcm_handle)
		return MNL_CB_OK;
	mnl_attr_for_each(attr, nlh, sizeof(*tc)) {
		if (mnl_attr_get_type(attr) == TCA_KIND)
			kind = mnl_attr_get_str(attr);
		else if (mnl_attr_get_type(attr) == TCA_OPTIONS)
			mnl_attr_parse_nested(attr, filter_opts, &id);
	}
	if (tc->tcm_handle == s->handle && TC_H_MAJ(tc->tcm_info) >> 16 == s->prio) {
		snprintf(s->f->kind, sizeof(s->f->kind), "%s", kind);
		s->f->prog_id = !strcmp(kind, "bpf") ? id : 0;
	} else {
		s->f->others++;
	}
	return MNL_CB_OK;
}

int qdisc_clsact_filters(int ifindex, bool egress, __u32 handle, __u16 prio, struct tc_filters *f)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct filter_scan s = { ifindex, handle, prio, f };

	memset(f, 0, sizeof(*f));
	return rtnl_talk(qdisc_msg(buf, RTM_GETTFILTER, NLM_F_DUMP, ifindex,
				   TC_H_MAKE(TC_H_CLSACT, egress ? TC_H_MIN_EGRESS : TC_H_MIN_INGRESS)),
			 filter_one, &s);
}

int qdisc_clsact_in_use(int ifindex)
{
	struct tc_filters f;
	int err = 0, n = 0;

	/* No filter has handle 0: every one counts among the others. */
	for (int egress = 0; egress < 2 && !err; egress++) {
		err = qdisc_clsact_filters(ifindex, egress, 0, 0, &f);
		n += f.others;
	}
	return err ? err : n > 0;
}
