/* SPDX-License-Identifier: GPL-2.0 */
/* tbctl's control programs (tb.bpf.c: the reset, the upgrade's merge,
 * the fleet's credit): loaded over a device's pins and run once per call
 * through BPF_PROG_TEST_RUN, with a request as the packet. */
#ifndef TB_CTLPROG_H
#define TB_CTLPROG_H

#include <stdbool.h>
#include <linux/types.h>
#include <bpf/libbpf.h>

struct tb;

/* dev's object over its pins, with only the program named name loaded:
 * the hooks' verification takes seconds on an emulated machine. NULL,
 * with errno, on failure. */
struct tb *ctlprog_open(const char *dev, __u32 max_addrs, const char *name);
/* Run prog once over the request data (len bytes), copied back into it
 * when back: 0 when it returned XDP_PASS, -EINVAL when it refused, or
 * -errno when it could not run. */
int ctlprog_run(const struct bpf_program *prog, void *data, __u32 len, bool back);

#endif
