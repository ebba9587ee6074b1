// SPDX-License-Identifier: GPL-2.0
/* Rules in the maps: rules[] slots, the prefix tries pointing at them, and
 * the generation that tells buckets their cached slot may be stale. */
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
	__u32 keys[TB_MAX_RULES], count = TB_MAX_RULES, out;
	int err;

	rs->m = *m;
	memset(rs->rules, 0, sizeof(rs->rules));
	err = bpf_map_lookup_batch(m->rules, NULL, &out, keys, rs->rules, &count, NULL);
	if (err && errno != ENOENT)
		return -errno;
	return 0;
}

int ruleset_find(const struct ruleset *rs, const struct tb_prefix *p)
{
	struct tb_prefix q;

	if (!p->family)
		return rs->rules[TB_DEFAULT_RULE].in_use ? TB_DEFAULT_RULE : -1;
	for (int i = 1; i < TB_MAX_RULES; i++) {
		if (!rs->rules[i].in_use)
			continue;
		rule_prefix(&rs->rules[i], &q);
		if (prefix_equal(&q, p))
			return i;
	}
	return -1;
}

static int free_slot(const struct ruleset *rs)
{
	for (int i = 1; i < TB_MAX_RULES; i++)
		if (!rs->rules[i].in_use)
			return i;
	return -1;
}

static int lpm_update(const struct tb_maps *m, const struct tb_prefix *p, __u32 id, int del)
{
	struct tb_lpm_v4 k4 = { .prefixlen = p->len };
	struct tb_lpm_v6 k6 = { .prefixlen = p->len };
	int fd = p->family == 4 ? m->prefixes_v4 : m->prefixes_v6;
	void *key = p->family == 4 ? (void *)&k4 : (void *)&k6;

	memcpy(&k4.addr, p->addr, 4);
	memcpy(k6.addr, p->addr, 16);
	if (del)
		return bpf_map_delete_elem(fd, key) ? -errno : 0;
	return bpf_map_update_elem(fd, key, &id, BPF_ANY) ? -errno : 0;
}

int config_bump_gen(const struct tb_maps *m)
{
	struct tb_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->config, &zero, &cfg))
		return -errno;
	cfg.gen++;
	return bpf_map_update_elem(m->config, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

int ruleset_set(struct ruleset *rs, const struct tb_prefix *p, const struct rule_spec *s)
{
	int id = ruleset_find(rs, p);
	bool created = id < 0;
	struct tb_rule r = {
		.r = tb_rate_make(s->rate, s->burst),
		.burst = s->burst,
		.in_use = 1,
		.cost = s->cost,
		.action = s->action,
		.scope = s->scope,
		.family = p->family,
		.prefixlen = p->len,
	};
	int err;

	memcpy(r.addr, p->addr, sizeof(r.addr));
	if (created)
		id = p->family ? free_slot(rs) : TB_DEFAULT_RULE;
	if (id < 0)
		return -ENOSPC;
	if (created || rs->rules[id].cost != s->cost) {
		struct tb_shared sh = { .b = { .cost = s->cost } };

		tb_fill(&sh.b.lvl, 0, &r.r);
		if (bpf_map_update_elem(rs->m.shared, &id, &sh, BPF_ANY))
			return -errno;
	}
	if (bpf_map_update_elem(rs->m.rules, &id, &r, BPF_ANY))
		return -errno;
	if (created && p->family) {
		err = lpm_update(&rs->m, p, id, 0);
		if (err) {
			struct tb_rule none = {};

			bpf_map_update_elem(rs->m.rules, &id, &none, BPF_ANY);
			return err;
		}
	}
	rs->rules[id] = r;
	err = config_bump_gen(&rs->m);
	return err ? err : id;
}

int ruleset_del(struct ruleset *rs, const struct tb_prefix *p)
{
	struct tb_rule none = {};
	int id = ruleset_find(rs, p), err;

	if (id < 0)
		return -ENOENT;
	if (p->family) {
		err = lpm_update(&rs->m, p, id, 1);
		if (err)
			return err;
	}
	if (bpf_map_update_elem(rs->m.rules, &id, &none, BPF_ANY))
		return -errno;
	rs->rules[id] = none;
	return config_bump_gen(&rs->m);
}
