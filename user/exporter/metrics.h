/* SPDX-License-Identifier: GPL-2.0 */
/* tbctl's counters and rules in the Prometheus text exposition format,
 * read from the pins at each call (stateless, like every command). */
#ifndef TB_METRICS_H
#define TB_METRICS_H

#include <stdio.h>

/* Per-address series are kept to the top N by dropped bytes, N at most
 * this: each address is a series of its own in Prometheus. */
#define METRICS_TOP_MAX 1000

/* Write the metrics of devs[0..n) (every attached device when n is 0),
 * with the top addresses by dropped bytes (0: none). A device that is not
 * attached, or is detached meanwhile, has no series but
 * tbctl_device_attached 0 when named. 0, or -errno when out fails. */
int metrics_write(FILE *out, const char *const *devs, int n, unsigned int top);

#endif
