// SPDX-License-Identifier: GPL-2.0
/* One read of a device's buckets for show, top and the metrics. */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include "logic/match.h"
#include "lib/snapshot.h"
#include "lib/pending.h"
#include "lib/tables.h"

int snapshot_begin(struct snapshot *sn, const struct tb_maps *m, struct ruleset *rs)
{
	int err;

	memset(sn, 0, sizeof(*sn));
	sn->m = m;
	sn->rs = rs;
	err = state_read_config(m, &sn->cfg);
	if (!err)
		err = ruleset_read(rs, m);
	/* Before the buckets: which addresses the caches hold counts of. */
	if (!err)
		err = pending_read(m, &sn->cfg, &sn->pending);
	return err;
}

struct each {
	struct snapshot *sn;
	int (*fn)(const struct tb_addr *, const struct tb_bucket *, int, void *);
	void *ctx;
};

static int each_bucket(const struct tb_addr *a, const struct tb_bucket *read, void *ctx)
{
	struct each *e = ctx;
	struct tb_bucket b = *read;
	int err = pending_add(e->sn->m, &e->sn->pending, a, &b);

	if (err)
		return err;
	return e->fn(a, &b, ruleset_rule_of(e->sn->rs, e->sn->m, a, &b, e->sn->cfg.gen), e->ctx);
}

int snapshot_foreach(struct snapshot *sn,
		     int (*fn)(const struct tb_addr *a, const struct tb_bucket *b, int rule, void *ctx), void *ctx)
{
	struct each e = { sn, fn, ctx };

	return buckets_foreach(sn->m, each_bucket, &e);
}

int snapshot_get(struct snapshot *sn, const struct tb_addr *a, struct tb_addr *key, struct tb_bucket *b,
		 int *rule)
{
	int err;

	ruleset_key_of(sn->rs, sn->m, a, key);
	err = bucket_get(sn->m, &sn->pending.cfg, key, b);
	if (!err)
		err = pending_add(sn->m, &sn->pending, key, b);
	if (!err)
		*rule = ruleset_rule_of(sn->rs, sn->m, key, b, sn->cfg.gen);
	return err;
}

int snapshot_matched(struct snapshot *sn, const struct tb_addr *a,
		     int (*fn)(const struct tb_addr *key, const struct tb_bucket *b, int rule, void *ctx), void *ctx)
{
	for (int id = 0; id < TB_MAX_RULES; id++) {
		const struct tb_rule *r = &sn->rs->rules[id];
		struct tb_prefix p;
		struct tb_bucket b;
		struct tb_addr key = *a;
		int err;

		if (!r->in_use || !r->match.proto || r->scope == TB_SCOPE_SHARED)
			continue;
		rule_prefix(r, &p);
		if (!prefix_contains(&p, a))
			continue;
		tb_rule_key(&key, r, !addr_is_v4(a), sn->cfg.place_key);
		err = bucket_get(sn->m, &sn->pending.cfg, &key, &b);
		if (err == -ENOENT)
			continue;
		if (!err)
			err = pending_add(sn->m, &sn->pending, &key, &b);
		if (!err)
			err = fn(&key, &b, id, ctx);
		if (err)
			return err;
	}
	return 0;
}

void snapshot_end(struct snapshot *sn)
{
	pending_free(&sn->pending);
}

void snapshot_fleet_key(const struct tb_maps *m, const struct tb_rule *rule, const struct tb_addr *addr, __u64 now,
			__u64 *credit, __u64 *refused)
{
	struct tb_fleet_key k = { .rule = rule->shared };
	struct tb_fleet_entry e;

	*credit = *refused = 0;
	if (addr)
		k.key = *addr;
	if (bpf_map_lookup_elem(m->fleet, &k, &e))
		return;
	*credit = e.credit > 0 && e.expires_ns > now ? (__u64)e.credit : 0;
	*refused = e.refused;
}
