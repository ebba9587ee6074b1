/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TB_CLOCK_H
#define TB_CLOCK_H

#include <linux/types.h>

/* CLOCK_MONOTONIC in ns: the datapath's bpf_ktime_get_ns(), so that
 * times user space reads from the maps and its own compare. */
__u64 now_ns(void);

#endif
