/* SPDX-License-Identifier: GPL-2.0 */
/* Credit: units set aside from a per-address bucket under its lock, from
 * which packets are admitted with one compare-and-swap and no lock. */
#ifndef TB_CREDIT_H
#define TB_CREDIT_H

#include "logic/charge.h"
#include "logic/table.h"
#include "logic/counters.h"

/* Take the bucket's credit back, counting what it admitted; the caller
 * holds the lock. The unspent part returns to the level (bucket.h,
 * tb_unspend) unless the level is kept in another unit from now on. The
 * hold ages first: it needs the gap since the latest charge (hold.h). */
static __always_inline void tb_take_credit(struct tb_bucket *b, const struct tb_terms *t, __u64 now)
{
	__u64 w = __sync_lock_test_and_set(&b->credit, 0);

	tb_credit_counted(b, w, &b->c);
	if (b->cost == t->unit) {
		/* The word is a peak bucket's lack where the rule has one. */
		if (!t->peak.rate)
			tb_hold_age(&b->lvl.hold, b->lvl.last_ns, now);
		b->lvl.tokens = tb_unspend(&b->lvl, now, &t->r, b->credit_granted, tb_credit_unspent(w));
		if (now > b->lvl.last_ns)
			b->lvl.last_ns = now;
	}
	b->credit_granted = b->credit_from = 0;
}

/* After a charge that passed, set credit aside from the level of a
 * per-address bucket (tb_account took any older credit back). The caller
 * holds the lock. */
static __always_inline void tb_grant(struct tb_bucket *b, const struct tb_terms *t, int out)
{
	if (out != TB_FIT || !tb_credit_fits(&b->lvl, &t->r, t->credit))
		return;
	b->lvl.tokens -= (__u64)t->credit * TB_NANO;
	b->credit_granted = b->credit_from = t->credit;
	WRITE_ONCE(b->credit, (__u64)b->tag << TB_CREDIT_TAG_SHIFT | t->credit);
}

/* Admit a packet of key, of units that counts other in the other
 * measure, from the credit of the bucket of way w of s, without the lock:
 * a compare-and-swap, retried a few times against other CPUs doing the
 * same. The word read is key's if the way still holds key after it, and
 * its tag fails the swap once the way has changed hands. 0 when the
 * credit cannot pay: the packet takes the lock. */
static __always_inline int tb_spend_credit(struct tb_set *s, int w, const struct tb_addr *key,
					   __u64 units, __u64 other)
{
	struct tb_bucket *b = &s->b[w & (TB_WAYS - 1)];
	__u64 c = READ_ONCE(b->credit), seen, next;

	if (!tb_way_holds(s, w, key, c >> TB_CREDIT_TAG_SHIFT))
		return 0;
	for (int i = 0; i < 4 && (next = tb_credit_spend(c, units, other)); i++) {
		seen = __sync_val_compare_and_swap(&b->credit, c, next);
		if (seen == c)
			return 1;
		/* Another address's word since: not key's to spend. */
		if ((seen ^ c) >> TB_CREDIT_TAG_SHIFT)
			return 0;
		c = seen;
	}
	return 0;
}

#endif
