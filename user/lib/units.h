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
/* A time (tc's units: s, ms, us, ns; a bare number is us) in ns, at most
 * max_ns; what names the keyword in errors. */
int parse_time(const char *s, const char *what, __u64 max_ns, __u64 *ns, char *err, size_t errlen);
void format_time(__u64 ns, char *buf, size_t len);
/* A ban's duration (ms, s, m or min, h, d; a bare number is seconds),
 * in whole ms, in ns, at most max_ns. */
int parse_duration(const char *s, const char *what, __u64 max_ns, __u64 *ns, char *err, size_t errlen);
/* The largest unit that keeps it exact; else seconds to the ms (or ms),
 * rounded up. */
void format_duration(__u64 ns, char *buf, size_t len);
/* tc's style: "10Mbit", "1500bit", "64Kb", "1Mb", "1500b"; "10kpps", "16pkt". */
void format_rate(__u64 per_sec, int packets, char *buf, size_t len);
void format_size(__u64 units, int packets, char *buf, size_t len);

#endif
