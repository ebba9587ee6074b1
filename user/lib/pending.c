// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "logic/bucket.h"
#include "lib/pending.h"
#include "logic/order.h"
#include "lib/tables.h"
#include "logic/counters.h"

static int addr_cmp(const void *x, const void *y)
{
	return memcmp(x, y, sizeof(struct tb_addr));
}

/* Slot i of every CPU's dropcache and denycache (the drop slots' reset
 * epochs). The epochs are read first: a CPU empties a stale slot before
 * it writes the epoch, so counts read after an epoch that is current are
 * all of that epoch. */
static int slots_read(const struct tb_maps *m, __u32 i, struct tb_denyslot *deny, struct tb_dropslot *drop)
{
	if (bpf_map_lookup_elem(m->denycache, &i, deny))
		return -errno;
	/* The epoch, then the counts it covers: a program empties them
	 * before it writes the epoch (stages/caches.h). */
	tb_rmb();
	if (bpf_map_lookup_elem(m->dropcache, &i, drop))
		return -errno;
	return 0;
}

/* Call fn for slot i of each CPU's caches, for every i, all read at once
 * per i; stops at fn's first non-zero. */
static int slots_each(const struct tb_maps *m,
		      int (*fn)(__u32 i, const struct tb_denyslot *deny, const struct tb_dropslot *drop,
				void *ctx),
		      void *ctx)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	struct tb_denyslot *deny;
	struct tb_dropslot *drop;

	if (ncpu < 0)
		return ncpu;
	deny = calloc(ncpu, sizeof(*deny));
	drop = calloc(ncpu, sizeof(*drop));
	if (!deny || !drop)
		err = -ENOMEM;
	for (__u32 i = 0; !err && i < TB_DROPCACHE_SLOTS; i++) {
		err = slots_read(m, i, deny, drop);
		for (int cpu = 0; !err && cpu < ncpu; cpu++)
			err = fn(i, &deny[cpu], &drop[cpu], ctx);
	}
	free(deny);
	free(drop);
	return err;
}

static int pending_cmp(const void *x, const void *y)
{
	const struct tb_pending_at *a = x, *b = y;
	int c = addr_cmp(&a->addr, &b->addr);

	return c ? c : a->slot < b->slot ? -1 : a->slot > b->slot;
}

/* Note which address CPU's slot i holds counts of. */
static int pending_note(__u32 i, const struct tb_denyslot *deny, const struct tb_dropslot *drop, void *ctx)
{
	struct tb_pending *p = ctx;

	if (deny->drop_epoch == p->reset_epoch && (drop->dropped_packets || drop->monitored_packets))
		p->v[p->n++] = (struct tb_pending_at){ .addr = drop->addr, .slot = i };
	return 0;
}

int pending_read(const struct tb_maps *m, const struct tb_config *cfg, struct tb_pending *p)
{
	int ncpu = libbpf_num_possible_cpus(), err;
	size_t n = 0;

	if (ncpu < 0)
		return ncpu;
	*p = (struct tb_pending){ .reset_epoch = cfg->reset_epoch, .cfg = *cfg };
	p->v = calloc((size_t)TB_DROPCACHE_SLOTS * ncpu, sizeof(*p->v));
	err = p->v ? slots_each(m, pending_note, p) : -ENOMEM;
	if (err) {
		pending_free(p);
		return err;
	}
	qsort(p->v, p->n, sizeof(*p->v), pending_cmp);
	for (size_t i = 0; i < p->n; i++)
		if (!n || pending_cmp(&p->v[n - 1], &p->v[i]))
			p->v[n++] = p->v[i];
	p->n = n;
	return 0;
}

/* One read of a cache slot on every CPU, each CPU's flush sequence of it
 * taken before (seq0) and after (seq1). */
struct slot_read {
	struct tb_flushseq *seq0, *seq1;
	struct tb_denyslot *deny;
	struct tb_dropslot *drop;
};

/* Read slots at[0..n) into r[0..n): every sequence before, then every
 * slot, then every sequence after, each read after the ones before it
 * (the programs write in the other order: stages/caches.h). */
static int slots_read_around(const struct tb_maps *m, const struct tb_pending_at *at, size_t n,
			     struct slot_read *r)
{
	for (size_t j = 0; j < n; j++)
		if (bpf_map_lookup_elem(m->flushseq, &at[j].slot, r[j].seq0))
			return -errno;
	tb_rmb();
	for (size_t j = 0; j < n; j++) {
		int err = slots_read(m, at[j].slot, r[j].deny, r[j].drop);

		if (err)
			return err;
	}
	tb_rmb();
	for (size_t j = 0; j < n; j++)
		if (bpf_map_lookup_elem(m->flushseq, &at[j].slot, r[j].seq1))
			return -errno;
	return 0;
}

/* Add what CPU cpu's slot of read r counts for address a under the
 * reset epoch p is at. */
static void slot_add(const struct tb_pending *p, const struct tb_addr *a, const struct slot_read *r, int cpu,
		     struct tb_counters *sum)
{
	const struct tb_dropslot *d = &r->drop[cpu];

	if (r->deny[cpu].drop_epoch == p->reset_epoch && !addr_cmp(&d->addr, a)) {
		sum->dropped_packets += d->dropped_packets;
		sum->dropped_bytes += d->dropped_bytes;
		sum->monitored_packets += d->monitored_packets;
		sum->monitored_bytes += d->monitored_bytes;
	}
}

/* Whether no flush of a CPU's slot began or ended between its flush
 * sequence reads x and y. */
static bool unflushed(const struct tb_flushseq *x, const struct tb_flushseq *y)
{
	return x->seq == y->seq && !(x->seq & 1);
}

/* Reads before giving up on an address whose slots flush during each. */
#define PENDING_TRIES 1000

/* Slots, bucket, slots: a CPU's slot counts are taken from the first read
 * when no flush of it overlapped that read and the bucket's (its flush
 * sequence the same from before the one to after the other), else from
 * the second when none overlapped the bucket's read and the second. Its
 * batches are then each in the bucket or in the slot taken, never in
 * both nor in neither. at[0..n) are a's slots. */
static int pending_reread(const struct tb_maps *m, const struct tb_pending *p, const struct tb_addr *a,
			  const struct tb_pending_at *at, size_t n, struct tb_bucket *b)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	struct tb_flushseq *seq;
	struct tb_denyslot *deny;
	struct tb_dropslot *drop;
	struct slot_read *r;
	size_t per;

	if (ncpu < 0)
		return ncpu;
	per = 2 * n * ncpu;     /* two reads of n slots, every CPU's copy */
	r = calloc(2 * n, sizeof(*r));
	seq = calloc(2 * per, sizeof(*seq));
	deny = calloc(per, sizeof(*deny));
	drop = calloc(per, sizeof(*drop));
	if (!r || !seq || !deny || !drop)
		err = -ENOMEM;
	for (size_t j = 0; !err && j < 2 * n; j++)
		r[j] = (struct slot_read){ .seq0 = seq + 2 * j * ncpu, .seq1 = seq + (2 * j + 1) * ncpu,
					   .deny = deny + j * ncpu, .drop = drop + j * ncpu };
	for (int tries = 0; !err; tries++) {
		struct tb_bucket nb;
		struct tb_counters sum = {};
		bool whole = true;

		if (tries == PENDING_TRIES) {
			err = -EAGAIN;
			break;
		}
		err = slots_read_around(m, at, n, r);
		if (!err && (err = bucket_get(m, &p->cfg, a, &nb)) == -ENOENT) {
			/* Evicted meanwhile: it took its counts with it. */
			memset(&nb, 0, sizeof(nb));
			err = 0;
		}
		if (!err)
			err = slots_read_around(m, at, n, r + n);
		for (size_t j = 0; !err && whole && j < n; j++)
			for (int cpu = 0; whole && cpu < ncpu; cpu++) {
				const struct slot_read *x = &r[j], *y = &r[n + j];
				const struct slot_read *use = unflushed(&x->seq0[cpu], &y->seq0[cpu]) ? x :
							      unflushed(&x->seq1[cpu], &y->seq1[cpu]) ? y : NULL;

				whole = use != NULL;
				if (whole)
					slot_add(p, a, use, cpu, &sum);
			}
		if (!err && whole) {
			tb_counters_add(&nb.c, &sum);
			*b = nb;
			break;
		}
	}
	free(r);
	free(seq);
	free(deny);
	free(drop);
	return err;
}

int pending_add(const struct tb_maps *m, const struct tb_pending *p, const struct tb_addr *a,
		struct tb_bucket *b)
{
	struct tb_counters credit = {};
	size_t lo = 0, hi = p->n, end;

	/* The first of a's entries, if any. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr_cmp(&p->v[mid].addr, a) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < p->n && !addr_cmp(&p->v[end].addr, a); end++)
		;
	if (end > lo) {
		int err = pending_reread(m, p, a, p->v + lo, end - lo, b);

		if (err)
			return err;
	}
	tb_credit_counted(b, b->credit, &credit);
	tb_counters_add(&b->c, &credit);
	return 0;
}

void pending_free(struct tb_pending *p)
{
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

/* Mark in ctx the epoch a slot still holding counts was counted under. */
static int epoch_held(__u32 i, const struct tb_denyslot *deny, const struct tb_dropslot *drop, void *ctx)
{
	unsigned char *held = ctx;

	(void)i;
	if (drop->dropped_packets || drop->monitored_packets)
		held[deny->drop_epoch] = 1;
	return 0;
}

/* A slot no packet has touched since some earlier reset keeps its counts
 * and epoch, and must not be read as current when the 16-bit epoch comes
 * round to its value again. */
int pending_epoch_next(const struct tb_maps *m, const struct tb_config *cfg, __u16 *next)
{
	unsigned char *held = calloc(1 << 16, 1);
	int err = held ? slots_each(m, epoch_held, held) : -ENOMEM;

	*next = cfg->reset_epoch + 1;
	for (int tries = 1; !err && held[*next]; tries++) {
		if (tries == 1 << 16)
			err = -EBUSY;
		(*next)++;
	}
	free(held);
	return err;
}

int pending_restart(const struct tb_maps *m, struct tb_config *cfg)
{
	struct tb_config next = *cfg;
	int err = pending_epoch_next(m, cfg, &next.reset_epoch);

	if (!err)
		err = state_write_config(m, &next);
	if (err)
		return err;
	*cfg = next;
	return 0;
}
