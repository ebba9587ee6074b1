/* SPDX-License-Identifier: GPL-2.0 */
/* tc through tcx links: tbctl's tc program as one of the programs on a
 * device's tcx hook, held by a bpf_link that is pinned with tbctl's
 * state. Linux 6.6 added tcx; Debian 12's headers (Linux 6.1's UAPI,
 * libbpf 1.1) lack it, so what tbctl uses of it is defined here. */
#ifndef TB_TCX_H
#define TB_TCX_H

#include <stdbool.h>
#include <linux/types.h>

/* Linux 6.6's enum bpf_attach_type BPF_TCX_INGRESS and BPF_TCX_EGRESS,
 * enum bpf_link_type BPF_LINK_TYPE_TCX, and the attach flags
 * BPF_F_BEFORE, BPF_F_AFTER and BPF_F_ID. Named apart from the UAPI's,
 * which newer headers define as enum members. */
#define TB_TCX_INGRESS 46
#define TB_TCX_EGRESS 47
#define TB_LINK_TYPE_TCX 11
#define TB_F_BEFORE (1U << 3)
#define TB_F_AFTER (1U << 4)
#define TB_F_ID (1U << 5)

/* The most programs one tcx hook holds (the kernel's BPF_MPROG_MAX). */
#define TCX_MAX_PROGS 64

/* Where a new link goes on the hook: before (or, with after, after)
 * program id; id 0 is the hook's first place (after: its last). */
struct tcx_place {
	bool after;
	__u32 id;
};

/* Whether this kernel has tcx: 1 yes, 0 no, -errno when it cannot be
 * told. Asked of ifindex's ingress hook. */
int tcx_supported(int ifindex);
/* The programs on ifindex's tcx hook (egress or ingress), in the order
 * they run, into ids[TCX_MAX_PROGS], with the links that hold them
 * (0: attached without one) into links, when not NULL: how many, or
 * -errno. */
int tcx_progs(int ifindex, bool egress, __u32 *ids, __u32 *links);
/* Attach prog_fd to ifindex's tcx hook at place through a new link,
 * pinned at pin: 0 or -errno, and nothing left behind on failure. */
int tcx_attach(int ifindex, bool egress, int prog_fd, const struct tcx_place *place, const char *pin);
/* Swap the program of the link pinned at pin for prog_fd, only if it is
 * still old_id: the hook is never without one of them, and no packet
 * runs both. 0 or -errno. */
int tcx_update(const char *pin, int prog_fd, __u32 old_id);
/* The program of the link pinned at pin; 0 when there is none, or the
 * link holds none any more (its device gone, or detached). */
__u32 tcx_link_prog(const char *pin);
/* Take program prog_id off ifindex's tcx hook by detaching the link
 * that holds it (its pin, if any, then holds a link to nothing): 0,
 * -ENOENT when no link there holds it, or -errno. */
int tcx_detach(int ifindex, bool egress, __u32 prog_id);

#endif
