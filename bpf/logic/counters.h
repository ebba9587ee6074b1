/* SPDX-License-Identifier: GPL-2.0 */
/* A bucket's counters counted, its cached rule, and what its credit
 * word says (abi/tb_abi.h, struct tb_bucket) (pure). */
#ifndef TB_COUNTERS_LOGIC_H
#define TB_COUNTERS_LOGIC_H

#include "abi/tb_abi.h"

/* Always inlined: the datapath adds counters under a spin lock, where
 * 6.1's verifier allows no call. */
static inline __attribute__((always_inline)) void tb_counters_add(struct tb_counters *to,
								  const struct tb_counters *c)
{
	to->passed_packets += c->passed_packets;
	to->passed_bytes += c->passed_bytes;
	to->dropped_packets += c->dropped_packets;
	to->dropped_bytes += c->dropped_bytes;
	to->monitored_packets += c->monitored_packets;
	to->monitored_bytes += c->monitored_bytes;
}

/* Whether a rule of action passes packets over its limit (and counts
 * them monitored): monitor as they are, remark with its DSCP set (but
 * not over a peak rate, charge.h: TB_OVER_PEAK). */
static inline __attribute__((always_inline)) int tb_passes_over(int action)
{
	return action == TB_ACTION_MONITOR || action == TB_ACTION_REMARK;
}

/* Count a packet of pkts segments and len bytes as passed, as monitored
 * (over the limit, passed by a monitor or remark rule) or as dropped. */
static inline __attribute__((always_inline)) void tb_counters_count(struct tb_counters *c, int passed,
								    int monitor, __u64 len, __u32 pkts)
{
	if (passed) {
		c->passed_packets += pkts;
		c->passed_bytes += len;
	} else if (monitor) {
		c->monitored_packets += pkts;
		c->monitored_bytes += len;
	} else {
		c->dropped_packets += pkts;
		c->dropped_bytes += len;
	}
}

/* The rules[] index bucket b cached. */
static inline __attribute__((always_inline)) __u16 tb_cached_rule(const struct tb_bucket *b)
{
	return b->rule & TB_RULE_INDEX;
}

/* The unspent units of credit word w. */
static inline __attribute__((always_inline)) __u64 tb_credit_unspent(__u64 w)
{
	return w & TB_CREDIT_UNSPENT_MAX;
}

/* What the credit word w of bucket b admitted that its counters do not
 * hold yet: added to them when the credit is taken back, and by tbctl
 * when it reads them. tbctl's copy, taken without the lock, may pair a
 * word with a later grant: that counts nothing rather than wrapping. */
static inline __attribute__((always_inline)) void tb_credit_counted(const struct tb_bucket *b,
								    __u64 w, struct tb_counters *c)
{
	__u64 unspent = tb_credit_unspent(w), other = w >> 32 & TB_CREDIT_COUNT_MAX;
	__u64 units = b->credit_granted && b->credit_from > unspent ? b->credit_from - unspent : 0;

	c->passed_packets += b->cost == TB_COST_PACKETS ? units : other;
	c->passed_bytes += b->cost == TB_COST_PACKETS ? other : units;
}

#endif
