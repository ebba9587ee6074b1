/* SPDX-License-Identifier: GPL-2.0 */
/* The fq qdisc that action shape needs on a device's egress: fq sends
 * each packet no earlier than its skb->tstamp, which the program sets. */
#ifndef TB_QDISC_H
#define TB_QDISC_H

#include <stddef.h>

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

#endif
