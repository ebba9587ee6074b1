/* SPDX-License-Identifier: GPL-2.0 */
/* What tbctl's programs order memory with (bpf/logic/order.h), checked
 * against this machine and kernel before they load. */
#ifndef TB_LIB_ORDER_H
#define TB_LIB_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* 0 when a machine (uname -m) whose kernel takes fetching BPF atomics or
 * not (fetch) can run programs that order in form (an object's
 * tb_order_form); else -ENOTSUP, with why. */
int order_check(__u8 form, const char *machine, bool fetch, char *why, size_t n);
/* order_check on this machine and kernel. */
int order_supported(__u8 form, char *why, size_t n);
/* Whether this kernel takes BPF's fetching atomics (5.12 on), and its
 * load-acquire and store-release (6.15 on): the latter is what an
 * object's tb_acq_rel is set to before it loads. */
bool order_fetch_atomics(void);
bool order_acq_rel(void);

#endif
