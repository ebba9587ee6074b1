// SPDX-License-Identifier: GPL-2.0
/* The rules' match nodes (tb_abi.h, struct tb_node): per prefix with a
 * rule that has a match, the entries a packet's protocol and ports pick
 * its rule from, compiled from the rules and published where the match
 * trie points. */
#include <errno.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "logic/order.h"
#include "logic/match.h"
#include "lib/match_nodes.h"

bool has_match(const struct tb_rule *r)
{
	return r->match.proto != 0;
}

/* Whether the prefix (family, len, addr) lies within rule r's (the
 * default's holds all). */
static bool within(const struct tb_rule *r, __u8 family, __u8 len, const __u8 *addr)
{
	struct tb_prefix rp;
	struct tb_addr a = {};

	if (!r->family)
		return true;
	if (r->family != family || r->prefixlen > len)
		return false;
	if (family == 4) {
		a.w[2] = htonl(0xffff);
		memcpy(&a.w[3], addr, 4);
	} else {
		memcpy(a.w, addr, 16);
	}
	rule_prefix(r, &rp);
	return prefix_contains(&rp, &a);
}

/* Ports, TCP flags and ICMP types count alike: what a match gives of
 * them, and how many packets' values they take (narrower first). */
static int ports_given(const struct tb_match *m)
{
	return __builtin_popcount(m->ports & (TB_MATCH_DPORT | TB_MATCH_SPORT | TB_MATCH_FLAGS | TB_MATCH_TYPE));
}

static __u32 ports_width(const struct tb_match *m)
{
	return (m->ports & (TB_MATCH_DPORT | TB_MATCH_TYPE) ? m->dport[1] - m->dport[0] : 0x10000) +
	       (m->ports & TB_MATCH_SPORT ? m->sport[1] - m->sport[0] : 0x10000) +
	       (m->ports & TB_MATCH_FLAGS ? (1u << (8 - __builtin_popcount(m->flags_mask))) - 1 : 0x100);
}

/* The order a node tries its entries in (tb_abi.h, struct tb_node). */
static int entry_order(const void *x, const void *y)
{
	const struct tb_node_entry *a = x, *b = y;

	if (a->plen1 != b->plen1)
		return b->plen1 - a->plen1;
	if (ports_given(&a->m) != ports_given(&b->m))
		return ports_given(&b->m) - ports_given(&a->m);
	if (ports_width(&a->m) != ports_width(&b->m))
		return ports_width(&a->m) < ports_width(&b->m) ? -1 : 1;
	return memcmp(&a->m, &b->m, sizeof(a->m));
}

/* The rules with a match, in rs->rules but skip, by prefix. */
struct matched {
	int id[TB_MAX_RULES];
	int n;
};

static const struct ruleset *matched_rs;

static int by_rule_prefix(const void *x, const void *y)
{
	const struct tb_rule *a = &matched_rs->rules[*(const int *)x], *b = &matched_rs->rules[*(const int *)y];

	if (a->family != b->family)
		return a->family - b->family;
	if (a->prefixlen != b->prefixlen)
		return a->prefixlen - b->prefixlen;
	return memcmp(a->addr, b->addr, sizeof(a->addr));
}

static void matched_of(const struct ruleset *rs, int skip, struct matched *m)
{
	m->n = 0;
	for (int i = 0; i < TB_MAX_RULES; i++)
		if (i != skip && rs->rules[i].in_use && has_match(&rs->rules[i]))
			m->id[m->n++] = i;
	matched_rs = rs;
	qsort(m->id, m->n, sizeof(m->id[0]), by_rule_prefix);
}

/* The node of the prefix of rule p from the rules with a match m: 0, or
 * -E2BIG where more than TB_NODE_ENTRIES apply. */
static int node_make(const struct ruleset *rs, const struct matched *m, const struct tb_rule *p,
		     struct tb_node *n)
{
	memset(n, 0, sizeof(*n));
	n->family = p->family;
	n->len = p->prefixlen;
	memcpy(n->addr, p->addr, sizeof(n->addr));
	for (int k = 0; k < m->n; k++) {
		const struct tb_rule *r = &rs->rules[m->id[k]];

		if (p->family ? !within(r, p->family, p->prefixlen, p->addr) : r->family != 0)
			continue;
		if (n->n == TB_NODE_ENTRIES)
			return -E2BIG;
		n->e[n->n++] = (struct tb_node_entry){ .m = r->match, .rule = m->id[k],
						       .plen1 = r->family ? r->prefixlen + 1 : 0 };
	}
	qsort(n->e, n->n, sizeof(n->e[0]), entry_order);
	return 0;
}

static int node_lpm(const struct ruleset *rs, const struct tb_node *n, struct tb_lpm_v4 *k4,
		    struct tb_lpm_v6 *k6, void **key)
{
	k4->prefixlen = k6->prefixlen = n->len;
	memcpy(&k4->addr, n->addr, 4);
	memcpy(k6->addr, n->addr, 16);
	*key = n->family == 4 ? (void *)k4 : (void *)k6;
	return n->family == 4 ? rs->m.matches_v4 : rs->m.matches_v6;
}

/* The live node of a prefix, or -1. */
int node_find(const struct ruleset *rs, __u8 family, __u8 len, const __u8 *addr)
{
	for (int i = 0; i < TB_MAX_NODES; i++)
		if (rs->node_live[i] && rs->nodes[i].family == family && rs->nodes[i].len == len &&
		    !memcmp(rs->nodes[i].addr, addr, 16))
			return i;
	return -1;
}

/* A free nodes[] slot, the one free longest where the cursor can tell:
 * a packet that read the trie before a change may still be reading the
 * slot that change retired. */
static int node_alloc(struct ruleset *rs)
{
	for (int k = 0; k < TB_MAX_NODES; k++) {
		int i = (rs->node_cursor + k) % TB_MAX_NODES;

		if (!rs->node_live[i]) {
			rs->node_cursor = (i + 1) % TB_MAX_NODES;
			return i;
		}
	}
	return -1;
}

/* Point the prefix of node n at slot id (-1: at none): its trie entry, or
 * the default's in the config. */
static int node_point(struct ruleset *rs, const struct tb_node *n, int id)
{
	struct tb_lpm_v4 k4;
	struct tb_lpm_v6 k6;
	__u32 v = id;
	void *key;
	int fd, err;

	if (!n->family) {
		struct tb_config cfg = rs->cfg;

		cfg.default_node = id + 1;
		if ((err = state_write_config(&rs->m, &cfg)))
			return err;
		rs->cfg = cfg;
		return 0;
	}
	fd = node_lpm(rs, n, &k4, &k6, &key);
	/* The node's slot is written before the prefix points at it. */
	tb_wmb();
	if (id < 0 ? bpf_map_delete_elem(fd, key) : bpf_map_update_elem(fd, key, &v, BPF_ANY))
		return -errno;
	return 0;
}

/* Make the nodes what rs->rules but skip say, after a change of rule
 * changed (NULL: of any), each changed node written to a fresh slot and
 * then published; with write false, only whether they fit. Returns how
 * many nodes it wrote or removed, -E2BIG (a node too long) or -ENOSPC
 * (too many nodes). A node outside the changed rule's prefix is as it
 * was. */
int nodes_sync(struct ruleset *rs, int skip, const struct tb_rule *changed, bool write)
{
	static bool wanted[TB_MAX_NODES];
	static struct matched m;
	int err, nodes = 0, written = 0;

	memset(wanted, 0, sizeof(wanted));
	matched_of(rs, skip, &m);
	for (int k = 0; k < m.n; k++) {
		const struct tb_rule *r = &rs->rules[m.id[k]];
		struct tb_node n;
		int at, id;

		if (k && !by_rule_prefix(&m.id[k - 1], &m.id[k]))
			continue;       /* the prefix's node is made */
		if (++nodes >= TB_MAX_NODES)
			return -ENOSPC;
		at = node_find(rs, r->family, r->prefixlen, r->addr);
		if (at >= 0 && changed && !within(changed, r->family, r->prefixlen, r->addr)) {
			wanted[at] = true;
			continue;
		}
		if ((err = node_make(rs, &m, r, &n)))
			return err;
		if (!write)
			continue;
		if (at >= 0 && !memcmp(&rs->nodes[at], &n, sizeof(n))) {
			wanted[at] = true;
			continue;
		}
		if ((id = node_alloc(rs)) < 0)
			return -ENOSPC;
		if (bpf_map_update_elem(rs->m.nodes, &id, &n, BPF_ANY) || node_point(rs, &n, id))
			return -errno;
		rs->nodes[id] = n;
		rs->node_live[id] = wanted[id] = true;
		if (at >= 0)
			rs->node_live[at] = false;
		written++;
	}
	for (int i = 0; write && i < TB_MAX_NODES; i++)
		if (rs->node_live[i] && !wanted[i]) {
			if ((err = node_point(rs, &rs->nodes[i], -1)))
				return err;
			rs->node_live[i] = false;
			written++;
		}
	return written;
}

/* Whether rule r, at slot id, would leave every node within its bounds,
 * where slot old (-1: none) is retired. */
int nodes_fit(struct ruleset *rs, const struct tb_rule *r, int id, int old)
{
	struct tb_rule keep = rs->rules[id];
	int err;

	if (!has_match(r) && (old < 0 || !has_match(&rs->rules[old])))
		return 0;
	rs->rules[id] = *r;
	err = nodes_sync(rs, old, r, false);
	rs->rules[id] = keep;
	return err;
}

/* The nodes as published: every slot, and which the tries point at. */
int nodes_read(struct ruleset *rs)
{
	__u32 keys[TB_MAX_NODES], count = TB_MAX_NODES, out;
	int err;

	memset(rs->node_live, 0, sizeof(rs->node_live));
	memset(rs->nodes, 0, sizeof(rs->nodes));
	if (rs->m.nodes < 0)
		return 0;
	err = bpf_map_lookup_batch(rs->m.nodes, NULL, &out, keys, rs->nodes, &count, NULL) && errno != ENOENT ?
		      -errno : 0;
	for (int i = 0; !err && i < TB_MAX_NODES; i++) {
		struct tb_lpm_v4 k4;
		struct tb_lpm_v6 k6;
		__u32 v;
		void *key;
		int fd;

		if (!rs->nodes[i].n)
			continue;
		if (!rs->nodes[i].family) {
			rs->node_live[i] = rs->cfg.default_node == (__u32)i + 1;
			continue;
		}
		fd = node_lpm(rs, &rs->nodes[i], &k4, &k6, &key);
		rs->node_live[i] = !bpf_map_lookup_elem(fd, key, &v) && v == (__u32)i;
	}
	return err;
}
