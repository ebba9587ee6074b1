/* SPDX-License-Identifier: GPL-2.0 */
/* The per-CPU caches that keep a flood from one address off its bucket:
 * the drops counted per CPU (dropcache, flushed by a sequence tbctl reads
 * around), and each CPU's copy of a bucket's bound (denycache). */
#ifndef TB_CACHES_H
#define TB_CACHES_H

#include "stages/place.h"
#include "stages/rule.h"
#include "logic/counters.h"

/* Add a slot's pending counts, made under reset epoch epoch, to its
 * address's bucket, under the lock the locked path counts under, and
 * empty it. A reset bumps the epoch before it zeroes the buckets under
 * their locks, so a flush that finds the epoch moved on comes after the
 * bucket was zeroed, and its counts were taken by the reset. The slot's
 * flush sequence (slot i), which tbctl reads around the slot from
 * another CPU, is odd from before the add until after the emptying: each
 * store ordered after the one before it. */
static __always_inline void tb_dropcache_flush(const struct tb_config *cfg, struct tb_dropslot *s,
					       __u32 i, __u16 epoch)
{
	struct tb_flushseq *q = bpf_map_lookup_elem(&flushseq, &i);
	struct tb_counters c = {
		.dropped_packets = s->dropped_packets,
		.dropped_bytes = s->dropped_bytes,
		.monitored_packets = s->monitored_packets,
		.monitored_bytes = s->monitored_bytes,
	};

	if (q)
		WRITE_ONCE(q->seq, q->seq + 1);
	tb_wmb();
	tb_add_counts(cfg, &s->addr, &c, epoch);
	s->dropped_packets = s->dropped_bytes = 0;
	s->monitored_packets = s->monitored_bytes = 0;
	if (q)
		tb_store_release(&q->seq, q->seq + 1);
}

/* Count an over-limit packet of key, whose cache slot is i, in this CPU's
 * dropcache, whose reset epoch d (the denycache slot i) keeps: the
 * bucket's counters are written only once a batch (or a collision)
 * flushes them. Counts of an earlier epoch are a reset's: emptied before
 * the epoch is written (release order: tbctl reads both from another
 * CPU), so tbctl never reads them as this one's.
 *
 * on_bucket says the drop was decided on key's bucket (not on this CPU's
 * copy of the bound). Such a drop, whose slot holds another address's
 * counts, is counted in the bucket instead: taking the slot would look up and
 * write a second bucket, and in a spoofed flood, whose addresses are each
 * too rare to keep a copy or a slot, every drop would. The slot stays its
 * holder's, so an address that floods keeps its batch. Not where no CPU
 * keeps copies of bounds (no owed[]): every drop is then decided on its
 * bucket, and only the slot keeps a flood's drops off it. */
static __always_inline void tb_dropcache_count(const struct tb_config *cfg, struct tb_denyslot *d,
					       const struct tb_addr *key, __u32 i, int on_bucket,
					       int monitor, __u64 len, __u32 pkts)
{
	struct tb_dropslot *s = bpf_map_lookup_elem(&dropcache, &i);
	__u16 epoch = READ_ONCE(cfg->reset_epoch);
	__u64 n;

	if (!s || !d)
		return;
	if (d->drop_epoch != epoch) {
		s->dropped_packets = s->dropped_bytes = 0;
		s->monitored_packets = s->monitored_bytes = 0;
		tb_store_release(&d->drop_epoch, epoch);
	}
	if (!tb_key_is(&s->addr, key)) {
		if (s->dropped_packets || s->monitored_packets) {
			struct tb_counters c = {};

			tb_counters_count(&c, 0, monitor, len, pkts);
			if (on_bucket && tb_owes(cfg) && tb_add_counts(cfg, key, &c, -1))
				return;
			tb_dropcache_flush(cfg, s, i, epoch);
		}
		s->addr = *key;
	}
	if (monitor) {
		n = s->monitored_packets += pkts;
		s->monitored_bytes += len;
	} else {
		n = s->dropped_packets += pkts;
		s->dropped_bytes += len;
	}
	if (n >= TB_DROPCACHE_BATCH)
		tb_dropcache_flush(cfg, s, i, epoch);
}

/* Whether this CPU's copy d is of key's bound under generation gen; and
 * then (tb_deny_cached) whether it shows that a packet of len bytes and
 * pkts segments certainly cannot be paid at now. */
static __always_inline int tb_deny_copied(const struct tb_denyslot *d, const struct tb_addr *key, __u32 gen)
{
	return d && d->gen == gen && tb_key_is(&d->addr, key);
}

static __always_inline int tb_deny_cached(const struct tb_denyslot *d, __u64 now, __u64 len, __u32 pkts)
{
	return tb_short(READ_ONCE(d->empty_ns), now, tb_units(d->cost, len, pkts) * TB_NANO, d->rate, d->fill_ns);
}

/* Keep bound e of key's bucket, under rule, in this CPU's copy d. Only
 * where re-created buckets start from what evicted ones owed (owed[]):
 * without that, eviction would refill a bucket behind the copy's back.
 * Shape never: a hook that delays departures does not tail drop; nor
 * remark, whose verdict needs the rule's DSCP, which the copy has no
 * room for (tb_denied_by_bound, which has the rule, decides it); nor a
 * rule that bans, whose refusals count only where the rule is known. The
 * bound is cleared first and written last, so a program that runs on
 * this CPU while this one is preempted mid-write (a test run may be)
 * finds a copy that denies nothing, never one that mixes two. */
static __always_inline void tb_deny_keep(struct tb_denyslot *d, const struct tb_config *cfg,
					 const struct tb_addr *key, __u32 gen, __u64 e,
					 const struct tb_rule *rule)
{
	if (!d || rule->action == TB_ACTION_SHAPE || rule->action == TB_ACTION_REMARK || rule->ban_ms ||
	    !tb_owes(cfg))
		return;
	WRITE_ONCE(d->empty_ns, 0);
	barrier();
	d->addr = *key;
	d->rate = rule->r.rate;
	d->fill_ns = rule->r.fill_ns;
	d->gen = gen;
	d->cost = rule->cost;
	d->action = rule->action;
	barrier();
	WRITE_ONCE(d->empty_ns, e);
}

#endif
