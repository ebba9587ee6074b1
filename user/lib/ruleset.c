// SPDX-License-Identifier: GPL-2.0
/* Rules in the maps: rules[] slots, the prefix tries and the default rule
 * pointing at them, and the generation that tells buckets their cached
 * slot may be stale. A published slot is never rewritten, only retired. */
#include <errno.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "logic/order.h"
#include "logic/bucket.h"
#include "logic/match.h"
#include "lib/match_nodes.h"
#include "lib/ruleset.h"
#include "logic/counters.h"

void rule_prefix(const struct tb_rule *r, struct tb_prefix *p)
{
	memset(p, 0, sizeof(*p));
	p->family = r->family;
	p->len = r->prefixlen;
	memcpy(p->addr, r->addr, sizeof(p->addr));
	p->m = r->match;
}

bool rule_charges_shared(const struct tb_rule *r)
{
	return r->in_use && (r->scope == TB_SCOPE_SHARED || r->total.rate);
}

void rule_of_shared(const struct tb_rule *r, struct tb_rule *out)
{
	*out = *r;
	if (r->total.rate) {
		out->r = r->total;
		out->burst = r->total_burst;
	}
}

void rule_format(const struct tb_rule *r, char *buf, size_t len)
{
	struct tb_prefix p;

	rule_prefix(r, &p);
	prefix_format(&p, buf, len);
}

int ruleset_default(const struct ruleset *rs)
{
	int id = (int)rs->cfg.default_rule - 1;

	return id >= 0 && id < TB_MAX_RULES && rs->rules[id].in_use ? id : -1;
}

bool ruleset_shapes(const struct ruleset *rs)
{
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (rs->rules[i].in_use && rs->rules[i].action == TB_ACTION_SHAPE)
			return true;
	return false;
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

	if (p->m.proto) {
		int at = node_find(rs, p->family, p->len, p->addr);

		for (__u32 e = 0; at >= 0 && e < rs->nodes[at].n && e < TB_NODE_ENTRIES; e++)
			if (rs->nodes[at].e[e].rule == id)
				return true;
		return false;
	}
	if (!p->family)
		return ruleset_default(rs) == id;
	lpm_key(p, &k4, &k6, &key);
	return !bpf_map_lookup_elem(lpm_fd(rs, p), key, &v) && v == (__u32)id;
}

static int bump_gen(struct ruleset *rs, __u32 default_rule)
{
	struct tb_config cfg = rs->cfg;
	int err;

	cfg.gen++;
	cfg.default_rule = default_rule;
	err = state_write_config(&rs->m, &cfg);

	if (err)
		return err;
	rs->cfg = cfg;
	return 0;
}

/* tb_config.resolve_first says whether some rule is per-/LEN or has a
 * match, and match_reads what such rules read of a packet: set before
 * such a rule is published, so no packet charges its address's plain
 * bucket instead, and cleared once the last is retired. */
static int sync_flags(struct ruleset *rs)
{
	struct tb_config cfg = rs->cfg;
	int err;

	cfg.resolve_first = rs->ngrouped > 0 || rs->nmatched > 0;
	cfg.match_reads = !rs->nmatched ? 0 :
			  TB_READS_PROTO | (rs->ndport ? TB_READS_DPORT : 0) | (rs->nsport ? TB_READS_SPORT : 0) |
			  (rs->nflags ? TB_READS_FLAGS : 0);
	cfg.l4_mask = tb_l4_mask(cfg.match_reads);
	cfg.ban_rules = rs->nbanning > 0;
	if (cfg.resolve_first == rs->cfg.resolve_first && cfg.match_reads == rs->cfg.match_reads &&
	    cfg.ban_rules == rs->cfg.ban_rules)
		return 0;
	err = state_write_config(&rs->m, &cfg);

	if (err)
		return err;
	rs->cfg = cfg;
	return 0;
}

/* Point p at slot id (-1: at nothing), in one map update (a rule with a
 * match: in the nodes, skip retired), and invalidate every bucket's
 * cached slot. */
static int publish(struct ruleset *rs, const struct tb_prefix *p, int id, int skip)
{
	struct tb_lpm_v4 k4;
	struct tb_lpm_v6 k6;
	__u32 v = id;
	void *key;
	int err;

	if (p->m.proto) {
		err = nodes_sync(rs, skip, &rs->rules[id >= 0 ? id : skip], true);
		return err < 0 ? err : bump_gen(rs, rs->cfg.default_rule);
	}
	if (!p->family)
		return bump_gen(rs, id + 1);
	lpm_key(p, &k4, &k6, &key);
	/* The rule's slot is written before the prefix points at it. */
	tb_wmb();
	if (id < 0 ? bpf_map_delete_elem(lpm_fd(rs, p), key) : bpf_map_update_elem(lpm_fd(rs, p), key, &v, BPF_ANY))
		return -errno;
	return bump_gen(rs, rs->cfg.default_rule);
}

int ruleset_invalidate(struct ruleset *rs)
{
	return bump_gen(rs, rs->cfg.default_rule);
}

static __u32 prefix_hash(const struct tb_prefix *p)
{
	__u32 h = 2166136261u ^ p->family ^ (__u32)p->len << 8;

	for (int i = 0; i < 16; i++)
		h = (h ^ p->addr[i]) * 16777619u;
	return h & (TB_RULE_HASH - 1);
}

static void index_add(struct ruleset *rs, int id)
{
	struct tb_prefix p;
	__u32 h;

	rule_prefix(&rs->rules[id], &p);
	h = prefix_hash(&p);
	rs->next[id] = rs->head[h];
	rs->head[h] = id + 1;
	rs->ngrouped += rs->rules[id].scope == TB_SCOPE_GROUP;
	rs->nbanning += !!rs->rules[id].ban_ms;
	if (has_match(&rs->rules[id])) {
		rs->nmatched++;
		rs->ndport += !!(rs->rules[id].match.ports & (TB_MATCH_DPORT | TB_MATCH_TYPE));
		rs->nsport += !!(rs->rules[id].match.ports & TB_MATCH_SPORT);
		rs->nflags += !!(rs->rules[id].match.ports & TB_MATCH_FLAGS);
		rs->class_rule[rs->rules[id].shared] = id + 1;
	}
	/* A prefix's first rule takes the shared slot on top of the stack. */
	if (rs->shared_refs[rs->rules[id].shared]++ == 0 && rs->nfree_shared &&
	    rs->free_shared[rs->nfree_shared - 1] == rs->rules[id].shared)
		rs->nfree_shared--;
}

static void index_del(struct ruleset *rs, int id)
{
	struct tb_prefix p;
	int *link;

	rule_prefix(&rs->rules[id], &p);
	for (link = &rs->head[prefix_hash(&p)]; *link; link = &rs->next[*link - 1])
		if (*link - 1 == id) {
			*link = rs->next[id];
			break;
		}
	rs->free_rules[rs->nfree_rules++] = id;
	rs->ngrouped -= rs->rules[id].scope == TB_SCOPE_GROUP;
	rs->nbanning -= !!rs->rules[id].ban_ms;
	if (has_match(&rs->rules[id])) {
		rs->nmatched--;
		rs->ndport -= !!(rs->rules[id].match.ports & (TB_MATCH_DPORT | TB_MATCH_TYPE));
		rs->nsport -= !!(rs->rules[id].match.ports & TB_MATCH_SPORT);
		rs->nflags -= !!(rs->rules[id].match.ports & TB_MATCH_FLAGS);
		if (rs->class_rule[rs->rules[id].shared] == id + 1)
			rs->class_rule[rs->rules[id].shared] = 0;
	}
	if (--rs->shared_refs[rs->rules[id].shared] == 0)
		rs->free_shared[rs->nfree_shared++] = rs->rules[id].shared;
}

/* Clear in_use and nothing else: a packet reading the slot meanwhile sees
 * either flag, and the same rule either way. */
static int retire(struct ruleset *rs, int id)
{
	struct tb_rule r = rs->rules[id];

	r.in_use = 0;
	if (bpf_map_update_elem(rs->m.rules, &id, &r, BPF_ANY))
		return -errno;
	index_del(rs, id);
	rs->rules[id] = r;
	return 0;
}

static int find_in_chain(const struct ruleset *rs, const struct tb_prefix *p, int skip)
{
	struct tb_prefix q;

	for (int i = rs->head[prefix_hash(p)]; i; i = rs->next[i - 1]) {
		if (i - 1 == skip)
			continue;
		rule_prefix(&rs->rules[i - 1], &q);
		if (prefix_equal(&q, p))
			return i - 1;
	}
	return -1;
}

int ruleset_find(const struct ruleset *rs, const struct tb_prefix *p)
{
	return find_in_chain(rs, p, -1);
}

static struct bpf_map_info map_info(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		memset(&info, 0, sizeof(info));
	return info;
}

/* Every slot of the rules map into rs->rules. An older layout's rules,
 * which attach ... replace reads, are shorter: each is copied to the
 * beginning of a zeroed slot, since fields are only ever appended with
 * zero meaning "as before" (tb_abi.h, TB_LAYOUT). */
static int read_rules(struct ruleset *rs, int fd, __u32 value_size)
{
	__u32 keys[TB_MAX_RULES], count = TB_MAX_RULES, out;
	char *v = (char *)rs->rules;
	int err;

	if (!value_size || value_size > sizeof(struct tb_rule))
		return -EPROTO;
	memset(rs->rules, 0, sizeof(rs->rules));
	if (value_size < sizeof(struct tb_rule) && !(v = calloc(TB_MAX_RULES, value_size)))
		return -ENOMEM;
	err = bpf_map_lookup_batch(fd, NULL, &out, keys, v, &count, NULL) && errno != ENOENT ? -errno : 0;
	if (v != (char *)rs->rules) {
		for (__u32 k = 0; !err && k < count && keys[k] < TB_MAX_RULES; k++)
			memcpy(&rs->rules[keys[k]], v + (size_t)k * value_size, value_size);
		free(v);
	}
	return err;
}

/* A slot that is in no packet's path: interrupted for good, which a
 * writer (holding the device's lock) repairs by retiring it, or in
 * progress, which a reader only leaves out of its copy. */
static int drop_slot(struct ruleset *rs, int id, bool repair)
{
	if (repair)
		return retire(rs, id);
	index_del(rs, id);
	rs->rules[id].in_use = 0;
	return 0;
}

/* Build the indexes from rules[]. A prefix found in two slots keeps its
 * published one: a change caught between publishing and retiring. One in
 * a single slot is kept only if published: a rule set of a new prefix
 * caught before publishing, or a rule del after unpublishing. */
static int index_build(struct ruleset *rs, bool repair)
{
	int err;

	memset(rs->head, 0, sizeof(rs->head));
	memset(rs->shared_refs, 0, sizeof(rs->shared_refs));
	rs->nfree_rules = rs->nfree_shared = rs->ngrouped = rs->nbanning = rs->nmatched = rs->ndport = rs->nsport = rs->nflags = 0;
	memset(rs->class_rule, 0, sizeof(rs->class_rule));
	for (int i = TB_MAX_RULES - 1; i >= 0; i--) {
		if (!rs->rules[i].in_use)
			rs->free_rules[rs->nfree_rules++] = i;
	}
	for (int i = 0; i < TB_MAX_RULES; i++) {
		struct tb_prefix p;
		int other;

		if (!rs->rules[i].in_use)
			continue;
		rule_prefix(&rs->rules[i], &p);
		other = find_in_chain(rs, &p, -1);
		index_add(rs, i);
		if (other >= 0 && (err = drop_slot(rs, is_live(rs, &p, i) ? other : i, repair)))
			return err;
	}
	for (int i = 0; i < TB_MAX_RULES; i++) {
		struct tb_prefix p;

		if (!rs->rules[i].in_use)
			continue;
		rule_prefix(&rs->rules[i], &p);
		if (!is_live(rs, &p, i) && (err = drop_slot(rs, i, repair)))
			return err;
	}
	/* From the references left, whatever index_del pushed meanwhile. */
	rs->nfree_shared = 0;
	for (int i = TB_MAX_RULES - 1; i >= 0; i--)
		if (!rs->shared_refs[i])
			rs->free_shared[rs->nfree_shared++] = i;
	return 0;
}

static int load(struct ruleset *rs, const struct tb_maps *m, bool repair)
{
	struct bpf_map_info info = map_info(m->rules);
	struct tb_config cfg = {};      /* an older layout's config is shorter */
	__u32 zero = 0;
	int err;

	if (bpf_map_lookup_elem(m->config, &zero, &cfg))
		return -errno;
	rs->m = *m;
	if (info.id && info.id == rs->rules_map_id && cfg.gen == rs->cfg.gen) {
		rs->cfg = cfg;
		return 0;
	}
	rs->cfg = cfg;
	rs->rules_map_id = 0;
	err = read_rules(rs, m->rules, info.value_size);
	if (!err)
		err = nodes_read(rs);
	if (!err)
		err = index_build(rs, repair);
	/* A change interrupted between nodes leaves some pointing at a slot
	 * index_build retired, which a later rule may take. */
	if (!err && repair && rs->m.nodes >= 0 && (err = nodes_sync(rs, -1, NULL, true)) > 0)
		err = bump_gen(rs, rs->cfg.default_rule);
	if (err)
		return err;
	rs->rules_map_id = info.id;
	return 0;
}

int ruleset_load(struct ruleset *rs, const struct tb_maps *m)
{
	return load(rs, m, true);
}

int ruleset_read(struct ruleset *rs, const struct tb_maps *m)
{
	return load(rs, m, false);
}

int ruleset_set(struct ruleset *rs, const struct tb_prefix *p, const struct rule_spec *s)
{
	int old = ruleset_find(rs, p), id, shared, err;
	struct tb_rule r = {
		.r = s->action == TB_ACTION_PASS ? (struct tb_rate){ 0 } : tb_rate_make(s->rate, s->burst),
		.burst = s->burst,
		.in_use = 1,
		.cost = s->cost,
		.action = s->action,
		.scope = s->scope,
		.family = p->family,
		.group_len = s->scope == TB_SCOPE_GROUP ? s->group_len : 0,
		.prefixlen = p->len,
		.horizon_ns = s->horizon_ns,
		.dscp = s->action == TB_ACTION_REMARK ? s->dscp : 0,
		.ban_ms = s->ban_ms,
		.ban_after = s->ban_ms ? s->ban_after : 0,
		.match = p->m,
	};

	if (s->total_rate) {
		r.total = tb_rate_make(s->total_rate, s->total_burst);
		r.total_burst = s->total_burst;
	}
	r.fleet = s->fleet;
	if (s->share_rate) {
		r.share = tb_rate_make(s->share_rate, s->share_burst);
		r.share.early = r.share.early_shift = 0;
		r.share_burst = s->share_burst;
	}
	if (s->peak_rate) {
		r.peak = tb_rate_make(s->peak_rate, s->peak_burst);
		r.peak.early = r.peak.early_shift = 0;
		r.peak_burst = s->peak_burst;
	}
	if (!rule_spec_signals(s))
		r.r.early = r.r.early_shift = r.total.early = r.total.early_shift = 0;
	shared = old >= 0 ? rs->rules[old].shared :
	         rs->nfree_shared ? rs->free_shared[rs->nfree_shared - 1] : -1;
	/* A change needs a free slot while the old one is live: a new rule
	 * may not take the last, or no rule could be changed any more. */
	if (rs->nfree_rules < (old < 0 ? 2 : 1) || shared < 0)
		return -ENOSPC;
	id = rs->free_rules[rs->nfree_rules - 1];
	r.shared = shared;
	memcpy(r.addr, p->addr, sizeof(r.addr));
	if ((err = nodes_fit(rs, &r, id, old)))
		return err;
	if (old < 0 || rs->rules[old].cost != s->cost) {
		struct tb_shared sh = { .b = { .cost = s->cost } };

		/* Under the bucket's lock: the old rule may be charging it. */
		tb_fill(&sh.b.lvl, 0, s->total_rate ? &r.total : &r.r);
		if (bpf_map_update_elem(rs->m.shared, &shared, &sh, BPF_F_LOCK))
			return -errno;
	}
	if (bpf_map_update_elem(rs->m.rules, &id, &r, BPF_ANY))
		return -errno;
	rs->nfree_rules--;
	rs->rules[id] = r;
	index_add(rs, id);
	err = sync_flags(rs);
	if (!err)
		err = publish(rs, p, id, old);
	if (err) {
		retire(rs, id);
		return err;
	}
	err = old >= 0 ? retire(rs, old) : 0;
	if (!err)
		err = sync_flags(rs);
	return err ? err : id;
}

int ruleset_del(struct ruleset *rs, const struct tb_prefix *p)
{
	int id = ruleset_find(rs, p), err;

	if (id < 0)
		return -ENOENT;
	err = publish(rs, p, -1, id);
	if (!err)
		err = retire(rs, id);
	return err ? err : sync_flags(rs);
}

void rule_spec_of(const struct tb_rule *r, struct rule_spec *s)
{
	*s = (struct rule_spec){ .rate = r->r.rate, .burst = r->burst, .horizon_ns = r->horizon_ns,
				 .cost = r->cost, .action = r->action, .scope = r->scope, .group_len = r->group_len,
				 .early = r->r.early != 0, .total_rate = r->total.rate, .total_burst = r->total_burst,
				 .fleet = r->fleet, .share_rate = r->share.rate, .share_burst = r->share_burst,
				 .dscp = r->dscp, .peak_rate = r->peak.rate, .peak_burst = r->peak_burst,
				 .ban_ms = r->ban_ms, .ban_after = r->ban_after };
}

bool rule_spec_signals(const struct rule_spec *s)
{
	return s->early && (s->action == TB_ACTION_DROP || s->action == TB_ACTION_MARK);
}

/* Whether slot r already is what s asks for. */
static bool rule_is(const struct tb_rule *r, const struct rule_spec *s)
{
	struct rule_spec have;
	bool early = rule_spec_signals(s);

	rule_spec_of(r, &have);
	return have.rate == s->rate && have.burst == s->burst && have.cost == s->cost &&
	       have.action == s->action && have.scope == s->scope && have.early == early &&
	       (s->scope != TB_SCOPE_GROUP || have.group_len == s->group_len) &&
	       have.total_rate == s->total_rate && (!s->total_rate || have.total_burst == s->total_burst) &&
	       have.fleet == s->fleet && have.share_rate == s->share_rate &&
	       (!s->share_rate || have.share_burst == s->share_burst) &&
	       (s->action != TB_ACTION_SHAPE || have.horizon_ns == s->horizon_ns) &&
	       (s->action != TB_ACTION_REMARK || have.dscp == s->dscp) && have.peak_rate == s->peak_rate &&
	       (!s->peak_rate || have.peak_burst == s->peak_burst) && have.ban_ms == s->ban_ms &&
	       (!s->ban_ms || have.ban_after == s->ban_after);
}

static int by_prefix_bytes(const void *x, const void *y)
{
	return memcmp(x, y, sizeof(struct tb_prefix));
}

int ruleset_apply(struct ruleset *rs, const struct tb_prefix *p, const struct rule_spec *s, int n)
{
	struct tb_prefix *sorted = malloc((n ? n : 1) * sizeof(*sorted));
	int err = 0;

	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, p, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), by_prefix_bytes);
	for (int i = 0; i < TB_MAX_RULES && !err; i++) {
		struct tb_prefix q;

		if (!rs->rules[i].in_use)
			continue;
		memset(&q, 0, sizeof(q));
		rule_prefix(&rs->rules[i], &q);
		if (!bsearch(&q, sorted, n, sizeof(*sorted), by_prefix_bytes))
			err = ruleset_del(rs, &q);
	}
	for (int i = 0; i < n && !err; i++) {
		int id = ruleset_find(rs, &p[i]);

		if (id < 0 || !rule_is(&rs->rules[id], &s[i]))
			err = ruleset_set(rs, &p[i], &s[i]);
		err = err < 0 ? err : 0;
	}
	free(sorted);
	return err;
}

int ruleset_rule_of(const struct ruleset *rs, const struct tb_maps *m, const struct tb_addr *a,
		    const struct tb_bucket *b, __u32 gen)
{
	struct tb_addr base;
	__u32 id, len, class = tb_key_class(a);
	int err;

	if (b && b->gen == gen && rs->rules[tb_cached_rule(b)].in_use)
		return tb_cached_rule(b);
	/* A key of a rule with a match names it by its class, an IPv6
	 * address's through the rule its bucket cached, which, retired,
	 * still says its class. */
	if (!class && b && a->w[0])
		class = tb_rule_class(&rs->rules[tb_cached_rule(b)]);
	if (class)
		return class <= TB_MAX_RULES && rs->class_rule[class - 1] ? rs->class_rule[class - 1] - 1 : -1;
	/* A group's rule is its members': its first address's, unless a
	 * rule for a longer prefix holds that one. */
	if (group_base(a, &base, &len))
		a = &base;
	if (addr_is_v4(a)) {
		struct tb_lpm_v4 k = { .prefixlen = 32, .addr = a->w[3] };

		err = bpf_map_lookup_elem(m->prefixes_v4, &k, &id);
	} else {
		struct tb_lpm_v6 k = { .prefixlen = 128 };

		memcpy(k.addr, a->w, sizeof(k.addr));
		err = bpf_map_lookup_elem(m->prefixes_v6, &k, &id);
	}
	if (!err && id < TB_MAX_RULES && rs->rules[id].in_use)
		return id;
	return ruleset_default(rs);
}

int ruleset_key_of(const struct ruleset *rs, const struct tb_maps *m, const struct tb_addr *a,
		   struct tb_addr *key)
{
	int id = ruleset_rule_of(rs, m, a, NULL, 0);

	*key = *a;
	if (id >= 0)
		tb_rule_key(key, &rs->rules[id], !addr_is_v4(a), rs->cfg.place_key);
	return id;
}

void ruleset_key_address(const struct ruleset *rs, const struct tb_addr *key, int rule, struct tb_addr *a)
{
	*a = *key;
	if (rule >= 0 && rule < TB_MAX_RULES && has_match(&rs->rules[rule]))
		tb_class_unkey(a, tb_rule_class(&rs->rules[rule]), rs->cfg.place_key);
}

void ruleset_addr_format(const struct ruleset *rs, const struct tb_addr *key, int rule, char *buf, size_t len)
{
	struct tb_addr a;

	ruleset_key_address(rs, key, rule, &a);
	addr_format(&a, buf, len);
}
