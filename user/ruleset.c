// SPDX-License-Identifier: GPL-2.0
/* Rules in the maps: rules[] slots, the prefix tries and the default rule
 * pointing at them, and the generation that tells buckets their cached
 * slot may be stale. A published slot is never rewritten, only retired. */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include "bucket.h"
#include "ruleset.h"

void rule_prefix(const struct tb_rule *r, struct tb_prefix *p)
{
	memset(p, 0, sizeof(*p));
	p->family = r->family;
	p->len = r->prefixlen;
	memcpy(p->addr, r->addr, sizeof(p->addr));
}

int ruleset_load(struct ruleset *rs, const struct tb_maps *m)
{
	__u32 keys[TB_MAX_RULES], count = TB_MAX_RULES, out, zero = 0;
	int err;

	rs->m = *m;
	memset(rs->rules, 0, sizeof(rs->rules));
	if (bpf_map_lookup_elem(m->config, &zero, &rs->cfg))
		return -errno;
	err = bpf_map_lookup_batch(m->rules, NULL, &out, keys, rs->rules, &count, NULL);
	if (err && errno != ENOENT)
		return -errno;
	return 0;
}

int ruleset_default(const struct ruleset *rs)
{
	int id = (int)rs->cfg.default_rule - 1;

	return id >= 0 && id < TB_MAX_RULES && rs->rules[id].in_use ? id : -1;
}

static int lpm_key(const struct tb_prefix *p, struct tb_lpm_v4 *k4, struct tb_lpm_v6 *k6, void **key)
{
	k4->prefixlen = k6->prefixlen = p->len;
	memcpy(&k4->addr, p->addr, 4);
	memcpy(k6->addr, p->addr, 16);
	*key = p->family == 4 ? (void *)k4 : (void *)k6;
	return 0;
}

static int lpm_fd(const struct ruleset *rs, const struct tb_prefix *p)
{
	return p->family == 4 ? rs->m.prefixes_v4 : rs->m.prefixes_v6;
}

/* Whether slot id is the one p's trie entry (or the default) points at. */
static bool is_live(const struct ruleset *rs, const struct tb_prefix *p, int id)
{
	struct tb_lpm_v4 k4;
	struct tb_lpm_v6 k6;
	__u32 v;
	void *key;

	if (!p->family)
		return ruleset_default(rs) == id;
	lpm_key(p, &k4, &k6, &key);
	return !bpf_map_lookup_elem(lpm_fd(rs, p), key, &v) && v == (__u32)id;
}

/* Clear in_use and nothing else: a packet reading the slot meanwhile sees
 * either flag, and the same rule either way. */
static int retire(struct ruleset *rs, int id)
{
	struct tb_rule r = rs->rules[id];

	r.in_use = 0;
	if (bpf_map_update_elem(rs->m.rules, &id, &r, BPF_ANY))
		return -errno;
	rs->rules[id] = r;
	return 0;
}

int ruleset_find(struct ruleset *rs, const struct tb_prefix *p)
{
	int found = -1;
	struct tb_prefix q;

	for (int i = 0; i < TB_MAX_RULES; i++) {
		if (!rs->rules[i].in_use)
			continue;
		rule_prefix(&rs->rules[i], &q);
		if (!prefix_equal(&q, p))
			continue;
		if (found < 0) {
			found = i;
			continue;
		}
		/* Two slots for one prefix: a change was interrupted between
		 * publishing and retiring. Keep the published one. */
		if (is_live(rs, p, i)) {
			retire(rs, found);
			found = i;
		} else {
			retire(rs, i);
		}
	}
	return found;
}

static int free_slot(const struct ruleset *rs)
{
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (!rs->rules[i].in_use)
			return i;
	return -1;
}

static int free_shared_slot(const struct ruleset *rs)
{
	static __u8 used[TB_MAX_RULES];

	memset(used, 0, sizeof(used));
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (rs->rules[i].in_use)
			used[rs->rules[i].shared] = 1;
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (!used[i])
			return i;
	return -1;
}

static int bump_gen(struct ruleset *rs, __u32 default_rule)
{
	struct tb_config cfg = rs->cfg;
	__u32 zero = 0;

	cfg.gen++;
	cfg.default_rule = default_rule;
	if (bpf_map_update_elem(rs->m.config, &zero, &cfg, BPF_ANY))
		return -errno;
	rs->cfg = cfg;
	return 0;
}

/* Point p at slot id (-1: at nothing), in one map update, and invalidate
 * every bucket's cached slot. */
static int publish(struct ruleset *rs, const struct tb_prefix *p, int id)
{
	struct tb_lpm_v4 k4;
	struct tb_lpm_v6 k6;
	__u32 v = id;
	void *key;

	if (!p->family)
		return bump_gen(rs, id + 1);
	lpm_key(p, &k4, &k6, &key);
	if (id < 0 ? bpf_map_delete_elem(lpm_fd(rs, p), key) : bpf_map_update_elem(lpm_fd(rs, p), key, &v, BPF_ANY))
		return -errno;
	return bump_gen(rs, rs->cfg.default_rule);
}

int ruleset_set(struct ruleset *rs, const struct tb_prefix *p, const struct rule_spec *s)
{
	int old = ruleset_find(rs, p), id = free_slot(rs), shared, err;
	struct tb_rule r = {
		.r = tb_rate_make(s->rate, s->burst),
		.burst = s->burst,
		.in_use = 1,
		.cost = s->cost,
		.action = s->action,
		.scope = s->scope,
		.family = p->family,
		.prefixlen = p->len,
		.horizon_ns = s->horizon_ns,
	};

	if (!s->early || s->action == TB_ACTION_MONITOR || s->action == TB_ACTION_SHAPE)
		r.r.early = r.r.early_shift = 0;
	shared = old >= 0 ? rs->rules[old].shared : free_shared_slot(rs);
	if (id < 0 || shared < 0)
		return -ENOSPC;
	r.shared = shared;
	memcpy(r.addr, p->addr, sizeof(r.addr));
	if (old < 0 || rs->rules[old].cost != s->cost) {
		struct tb_shared sh = { .b = { .cost = s->cost } };

		/* Under the bucket's lock: the old rule may be charging it. */
		tb_fill(&sh.b.lvl, 0, &r.r);
		if (bpf_map_update_elem(rs->m.shared, &shared, &sh, BPF_F_LOCK))
			return -errno;
	}
	if (bpf_map_update_elem(rs->m.rules, &id, &r, BPF_ANY))
		return -errno;
	rs->rules[id] = r;
	err = publish(rs, p, id);
	if (err) {
		retire(rs, id);
		return err;
	}
	err = old >= 0 ? retire(rs, old) : 0;
	return err ? err : id;
}

int ruleset_del(struct ruleset *rs, const struct tb_prefix *p)
{
	int id = ruleset_find(rs, p), err;

	if (id < 0)
		return -ENOENT;
	err = publish(rs, p, -1);
	return err ? err : retire(rs, id);
}
