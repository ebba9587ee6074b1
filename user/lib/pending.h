/* SPDX-License-Identifier: GPL-2.0 */
/* Counts the CPUs hold in their caches and have not yet added to the
 * buckets: found, and added to a bucket as read, so that every count
 * made is in what tbctl reports once; and the reset epoch that makes
 * them stale. */
#ifndef TB_PENDING_H
#define TB_PENDING_H

#include "lib/state.h"

/* The over-limit packets the datapath counted per CPU (dropcache) and has
 * not yet added to the buckets, found by address in whichever slot
 * holds them. One entry per address and slot holding its counts. */
struct tb_pending_at {
	struct tb_addr addr;
	__u32 slot;
};

/* Those the caches held when read, sorted, and the epoch they count for. */
struct tb_pending {
	struct tb_pending_at *v;
	size_t n;
	__u16 reset_epoch;
	struct tb_config cfg;   /* as read: where the table places addresses */
};

/* Note where the CPUs' caches hold counts, made under the reset epoch cfg
 * is at, and of which address. Read before the buckets: an address with
 * none then can only have had batches flushed since, which its bucket
 * holds. */
int pending_read(const struct tb_maps *m, const struct tb_config *cfg, struct tb_pending *p);
/* Make *b, address a's bucket as read (zero: none), hold every count made
 * for a: its credit's admissions and, for an address p holds, what its
 * slots hold, read again around a fresh read of the bucket, so that a
 * batch flushed meanwhile is counted once (flushseq). 0, or -errno
 * (-EAGAIN: a flush overlapped each of many reads). */
int pending_add(const struct tb_maps *m, const struct tb_pending *p, const struct tb_addr *a,
		struct tb_bucket *b);
void pending_free(struct tb_pending *p);
/* The reset epoch after cfg's that no CPU's cache slot still holding
 * counts was counted under: a reset moves to it, which makes every CPU's
 * pending drops stale. */
int pending_epoch_next(const struct tb_maps *m, const struct tb_config *cfg, __u16 *next);
/* Start a reset from user space (before the buckets are deleted): the
 * next reset epoch goes to the config and to *cfg. reset counters has its
 * program write the epoch instead. */
int pending_restart(const struct tb_maps *m, struct tb_config *cfg);

#endif
