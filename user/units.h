/* SPDX-License-Identifier: GPL-2.0 */
/* Rates and sizes with tc's units and tc's meaning (iproute2 tc_util.c):
 * a bare rate or "bit" is bits/s, "bps" is BYTES/s; sizes are bytes with
 * binary k/m/g. Packet-mode rates are packets/s, sizes packet counts. */
#ifndef TB_UNITS_H
#define TB_UNITS_H

#include <stddef.h>
#include <linux/types.h>

/* 0 on success; else -1 with err saying what is wrong with s. */
int parse_rate(const char *s, int packets, __u64 *per_sec, char *err, size_t errlen);
int parse_size(const char *s, int packets, __u64 *units, char *err, size_t errlen);
/* tc's style: "10Mbit", "1500bit", "64Kb", "1Mb", "1500b"; "10kpps", "16pkt". */
void format_rate(__u64 per_sec, int packets, char *buf, size_t len);
void format_size(__u64 units, int packets, char *buf, size_t len);

#endif
