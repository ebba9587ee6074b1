/* SPDX-License-Identifier: GPL-2.0 */
/* tc state that tbctl checks or changes: the fq qdisc that action shape
 * needs on a device's egress (fq sends each packet no earlier than its
 * skb->tstamp, which the program sets), the clsact qdisc its tc modes
 * hook into, and the filters that others put there. */
#ifndef TB_QDISC_H
#define TB_QDISC_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* 1 when fq schedules every transmit queue of ifindex (fq at the root, or
 * under each class of a root mq), 0 when not, -errno on failure. */
int qdisc_fq_paces(int ifindex);
/* Make fq the root qdisc of ifindex, in place of the device's default.
 * -EEXIST: the root is a qdisc someone configured (its kind in root),
 * which is not replaced; -ENOENT: the kernel has no sch_fq. */
int qdisc_fq_install(int ifindex, char *root, size_t len);
/* 1 when ifindex has a clsact qdisc, 0 when not, -errno on failure. */
int qdisc_clsact_exists(int ifindex);
/* Delete the root qdisc of ifindex if it is fq: the kernel puts its
 * default back. -EINVAL: the root is now another kind, left in place;
 * -ENOENT: the root is the device's default. */
int qdisc_fq_delete(int ifindex);

/* The filters on one hook of a clsact qdisc: the one at a handle and
 * priority, and how many others. */
struct tc_filters {
	char kind[16];          /* of the filter there; "" when none is */
	__u32 prog_id;          /* its eBPF program; 0 for classic BPF or another kind */
	int others;
};
/* Read the filters on ifindex's clsact ingress (or egress) hook; none
 * when there is no clsact. 0 or -errno. */
int qdisc_clsact_filters(int ifindex, bool egress, __u32 handle, __u16 prio, struct tc_filters *f);
/* 1 when ifindex's clsact holds a filter on either hook, 0 when not (or
 * there is no clsact), -errno on failure. */
int qdisc_clsact_in_use(int ifindex);

#endif
