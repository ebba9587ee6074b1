/* SPDX-License-Identifier: GPL-2.0 */
/* tbctl's program on a device's hook: XDP (native or generic, in libxdp's
 * dispatcher or alone), or on the tc ingress or egress hook, through a
 * tcx link or as tbctl's own filter on the clsact qdisc; and whether the
 * device keeps the departure times it sets (action shape). */
#ifndef TB_HOOK_H
#define TB_HOOK_H

#include <stdbool.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "abi/tb_abi.h"
#include "lib/tcx.h"

/* Our tc filter's identity on the clsact hook, so replace and detach find
 * exactly it and leave other filters alone. */
#define TB_TC_HANDLE 0x7b1
#define TB_TC_PRIO 0x7b1

/* One of tbctl's programs found on a device: its mode and id. */
struct hooked {
	int mode;       /* enum tb_mode */
	__u32 id;
};

/* Whether dev is cfg's device in this network namespace: ifindexes of
 * other namespaces name other devices here. */
bool dev_here(const char *dev, const struct tb_config *cfg);
/* The clsact hook of mode (tc-ingress or tc-egress) on ifindex. */
void tc_hook_of(int ifindex, int mode, struct bpf_tc_hook *h);
/* What hook_program puts on a hook. */
struct hook_req {
	const char *dev;        /* whose pins hold the tcx link */
	int mode;               /* enum tb_mode */
	int ifindex;
	int prog_fd;
	bool replace;           /* tbctl's program there is swapped for it */
	bool tcx;               /* a tc mode, through a tcx link */
	struct tcx_place place; /* where a new tcx link goes */
	bool xdisp;             /* an XDP mode, through libxdp's dispatcher */
	unsigned int prio;      /* its run priority there */
	bool frags;             /* it takes frames of more than one buffer */
};
/* Attach r's program; *own_qdisc: tbctl made the clsact qdisc. -errno on
 * failure, said in e. */
struct tb_err;
int hook_program(const struct hook_req *r, bool *own_qdisc, struct tb_err *e);
/* The id of the program on ifindex's tcx hook of mode that what names
 * (a program's name, or its id in digits): 0, or -errno said in e (none,
 * or more than one of that name). */
int hook_tcx_find(int ifindex, int mode, const char *what, __u32 *id, struct tb_err *e);
/* The program of the tcx link dev's pins hold; 0 when there is none,
 * or it holds none. Read from the pin, which takes no capability. */
__u32 hook_tcx_link(const char *dev);
/* The programs on the tcx hook that holds program id (cfg's mode and
 * device), in the order they run, into ids[TCX_MAX_PROGS]: how many; 0
 * when id is not on a tcx hook. */
int hook_tcx_programs(const struct tb_config *cfg, __u32 id, __u32 *ids);
/* tbctl's program on ifindex's XDP hook of mode (xdp or xdpgeneric),
 * alone or in the dispatcher: program known (when not 0; found with
 * CAP_BPF alone), or one recognised as tbctl's; its id, or 0. */
__u32 xdp_prog(int ifindex, int mode, __u32 known);
/* Program id's name into name[BPF_OBJ_NAME_LEN]; "" when unreadable. */
void prog_name(__u32 id, char *name);
/* Where the kernel has multi-buffer XDP, let XDP program xdp (not loaded
 * yet) take frames of more than one buffer, and say so: its caller then
 * sets tb_xdp_frags, so that such a frame is charged whole. */
bool hook_xdp_frags(struct bpf_program *xdp);
/* tbctl's programs on ifindex in any mode, into h[4]; how many. */
int hooked_anywhere(int ifindex, struct hooked *h);
/* Whether program id, which uses a device's pins, is on ifindex here, now
 * named name: the device renamed. */
bool renamed_to(__u32 ifindex, __u32 id, char *name);
/* The id of the program on the hook cfg names (in a tc mode, through
 * dev's tcx link, read from its pin, or as tbctl's clsact filter), 0 when none of tbctl's is
 * there or dev is not cfg's device in this network namespace. */
__u32 hooked_prog(const char *dev, const struct tb_config *cfg);
/* The id of program fd; 0 when it cannot be read. */
__u32 prog_id(int fd);
/* Whether program prog_id uses map fd. */
bool prog_uses(__u32 prog_id, int fd);
/* A loaded program that uses map fd (on any device, in any network
 * namespace), 0 when none does. */
__u32 map_user(int fd);
/* Take program id off ifindex's hook of mode, and nothing else. */
int unhook(int ifindex, int mode, __u32 id);
/* Where the device of a device's pins is, as pins_prog finds it. */
enum hook_where {
	HOOK_HERE,      /* the device of its name and ifindex, here */
	HOOK_RENAMED,   /* its ifindex here, under another name */
	HOOK_AWAY,      /* neither: deleted, moved to another namespace, or the pins are another namespace's */
};
/* The program that polices with dev's pins, found with CAP_BPF alone, so
 * that every reader reports the same: tbctl's on the hook cfg names when
 * dev is cfg's device here; on cfg's ifindex here, its name into
 * name[IF_NAMESIZE], when the device was renamed; else the program of
 * dev's tcx link, on whichever device it is. 0 when there is none, or
 * none that can be seen from this namespace: a program on an XDP or
 * clsact hook of another namespace is out of its sight. */
__u32 pins_prog(const char *dev, const struct tb_config *cfg, enum hook_where *where, char *name);
/* Whether the departure times the program sets for rs's action shape
 * rules are kept: 1 when fq schedules dev's egress, 0 when not, -1 when
 * no rule is shape or dev is not cfg's device in this network namespace
 * (whose qdiscs are out of sight); -errno (< -1) when the qdiscs cannot
 * be read. */
struct ruleset;
int shape_paced(const char *dev, const struct tb_config *cfg, const struct ruleset *rs);

#endif
