/* SPDX-License-Identifier: GPL-2.0 */
/* Upgrades that grow the shared buckets: once the swap has settled, each
 * older shared bucket is moved into this layout's exactly once. A moved
 * bucket stays behind empty, its counters zero and its refill clock at
 * TB_MOVED_NS, so a rerun after a kill takes only what was counted since.
 * The caller holds the older bucket's lock. */
#ifndef TB_MIGRATE_H
#define TB_MIGRATE_H

#include "tb_abi.h"

static __always_inline int tb_moved(const struct tb_bucket *ob)
{
	return ob->lvl.last_ns >= TB_MOVED_NS;
}

/* Take older bucket ob over: into nb go its level, its cached rule and
 * its counters (fields later layouts added stay as nb has them), and ob
 * is left moved. A bucket already moved gives only the counters counted
 * since, with a moved level. */
static __always_inline void tb_take(struct tb_bucket *nb, struct tb_bucket *ob)
{
	__builtin_memcpy(nb, ob, TB_BUCKET_COMMON);
	ob->lvl.tokens = 0;
	ob->lvl.last_ns = TB_MOVED_NS;
	ob->lvl.peak = 0;
	ob->empty_ns = 0;
	__builtin_memset(&ob->c, 0, sizeof(ob->c));
}

/* Into a shared bucket of this layout that stood in, moved, for the
 * older one until the merge: the level and cached rule of the bucket
 * taken over, from. Its counters are added by the caller. */
static __always_inline void tb_settle_level(struct tb_bucket *b, const struct tb_bucket *from)
{
	b->lvl = from->lvl;
	b->empty_ns = from->empty_ns;
	b->gen = from->gen;
	b->rule = from->rule;
	b->cost = from->cost;
}

#endif
