/* SPDX-License-Identifier: GPL-2.0 */
/* tbctl's XDP program as one of the programs of libxdp's dispatcher, the
 * protocol by which XDP programs of different tools share a device's hook
 * (xdp-tools' lib/libxdp/protocol.org): put in, or swapped in place, by a
 * dispatcher built here as the protocol lays down (libxdp can neither set
 * a loaded program's priority nor replace one program), and taken out
 * through libxdp. */
#ifndef TB_XDISP_H
#define TB_XDISP_H

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/libbpf.h>

/* tbctl's run priority: after xdp-filter's 10, so that what a firewall
 * drops is not charged; before libxdp's default of 50, the priority of
 * programs that redirect or transmit and so end the chain. */
#define XDISP_PRIO_DEFAULT 20
/* The dispatcher's slots (libxdp's MAX_DISPATCHER_ACTIONS). */
#define XDISP_MAX_PROGS 10

struct tb_err;

/* A program on a device's XDP hook: the dispatcher's, in the order they
 * run, or the one attached without it. */
struct xdisp_prog {
	__u32 id;
	unsigned int prio;      /* 0 for a program attached without the dispatcher */
	char name[BPF_OBJ_NAME_LEN];
};

/* Make prog (of an object not loaded yet) load as an extension program,
 * as the dispatcher takes it: the descriptor of the anchor it names,
 * which the caller closes once the object is loaded; -errno said in e. */
int xdisp_prepare(struct bpf_program *prog, struct tb_err *e);
/* Whether a dispatcher may be used: not when LIBXDP_SKIP_DISPATCHER=1,
 * which libxdp honours too. */
bool xdisp_wanted(void);
/* Put extension program prog_fd into the dispatcher on ifindex's hook
 * (mode xdp or xdpgeneric; one is made where the hook is empty), at run
 * priority prio, frags: it takes frames of more than one buffer. -errno
 * said in e. */
int xdisp_attach(int ifindex, int mode, int prog_fd, unsigned int prio, bool frags, struct tb_err *e);
/* Put extension program new_fd where program old_id is, on ifindex's
 * hook of mode, in one atomic step: in old_id's slot of the dispatcher,
 * or, when old_id is attached without one, in a dispatcher of its own
 * that takes its place at priority prio. -errno said in e. */
int xdisp_replace(int ifindex, int mode, __u32 old_id, int new_fd, unsigned int prio, bool frags,
		  struct tb_err *e);
/* A dispatcher of the n extension programs progs[], in that order, on
 * no device (what it costs is measured by running it): its descriptor,
 * with the links that hold the programs in it into links[n]; -errno said
 * in e. */
int xdisp_build(const int *progs, int n, int *links, struct tb_err *e);
/* Take program id out of the dispatcher on ifindex's hook of mode. */
int xdisp_detach(int ifindex, int mode, __u32 id);
/* The programs on ifindex's hook of mode, into p[XDISP_MAX_PROGS]: how
 * many (0 when none), with *dispatcher the dispatcher's id, 0 when the
 * one program is attached without it. */
int xdisp_programs(int ifindex, int mode, struct xdisp_prog *p, __u32 *dispatcher);
/* Whether program id is an extension program, as the dispatcher holds. */
bool xdisp_is_component(__u32 id);

#endif
