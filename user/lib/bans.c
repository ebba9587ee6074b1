// SPDX-License-Identifier: GPL-2.0
/* The manual ban list and the automatic bans, read and written in the
 * maps (bans.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "logic/ban.h"
#include "lib/bans.h"
#include "lib/grow.h"
#include "lib/ruleset.h"

/* The manual list's tries of side (0 or 1), v4 and v6. */
static void side_fds(const struct tb_maps *m, int side, int fd[2])
{
	fd[0] = side ? m->bans1_v4 : m->bans0_v4;
	fd[1] = side ? m->bans1_v6 : m->bans0_v6;
}

static int by_prefix(const void *x, const void *y)
{
	const struct ban *a = x, *b = y;
	int c;

	if (a->p.family != b->p.family)
		return a->p.family - b->p.family;
	c = memcmp(a->p.addr, b->p.addr, sizeof(a->p.addr));
	if (c || a->p.len != b->p.len)
		return c ? c : a->p.len - b->p.len;
	return a->order < b->order ? -1 : a->order > b->order;
}

static bool same_prefix(const struct ban *a, const struct ban *b)
{
	return a->p.family == b->p.family && a->p.len == b->p.len && !memcmp(a->p.addr, b->p.addr, 16);
}

/* Append one entry of a trie (v6 or not) to *v, unless ended by now. */
static int take_entry(const void *key, int v6, const struct tb_ban *b, __u64 now, struct ban **v, size_t *n,
		      size_t *cap)
{
	const struct tb_lpm_v4 *k4 = key;
	const struct tb_lpm_v6 *k6 = key;
	struct ban *e;

	if (!tb_ban_holds(b->own_ns, now))
		return 0;
	if (GROW(*v, *n, *cap, 64))
		return -ENOMEM;
	e = &(*v)[(*n)++];
	memset(e, 0, sizeof(*e));
	e->p.family = v6 ? 6 : 4;
	e->p.len = v6 ? k6->prefixlen : k4->prefixlen;
	memcpy(e->p.addr, v6 ? (const void *)k6->addr : (const void *)&k4->addr, v6 ? 16 : 4);
	e->own_ns = b->own_ns;
	e->added_ns = b->added_ns;
	return 0;
}

int bans_read(const struct tb_maps *m, __u64 now, struct ban **out, size_t *n)
{
	struct tb_config cfg;
	struct tb_lpm_v6 key, next;
	struct tb_ban b;
	size_t cap = 0;
	int fd[2], err = state_read_config(m, &cfg);

	*out = NULL;
	*n = 0;
	if (err)
		return err;
	side_fds(m, cfg.ban_side, fd);
	for (int v6 = 0; v6 < 2 && !err; v6++) {
		for (void *prev = NULL; !bpf_map_get_next_key(fd[v6], prev, &next); prev = &key) {
			memcpy(&key, &next, sizeof(key));
			if (bpf_map_lookup_elem(fd[v6], &key, &b))
				continue;       /* gone meanwhile */
			if ((err = take_entry(&key, v6, &b, now, out, n, &cap)))
				break;
		}
		if (!err && errno != ENOENT)
			err = -errno;
	}
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
		return err;
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), by_prefix);
	return 0;
}

static bool prefix_covers(const struct tb_prefix *outer, const struct tb_prefix *inner)
{
	struct tb_addr a = {};

	if (outer->family != inner->family || outer->len > inner->len)
		return false;
	if (inner->family == 4) {
		a.w[2] = htonl(0xffff);
		memcpy(&a.w[3], inner->addr, 4);
	} else {
		memcpy(a.w, inner->addr, 16);
	}
	return prefix_contains(outer, &a);
}

/* Empty trie fd. */
static int trie_clear(int fd)
{
	struct tb_lpm_v6 key;

	while (!bpf_map_get_next_key(fd, NULL, &key))
		if (bpf_map_delete_elem(fd, &key) && errno != ENOENT)
			return -errno;
	return errno == ENOENT ? 0 : -errno;
}

/* Write sorted v into the tries fd, each entry's end the latest of its
 * own and of the prefixes around it: those come first in the sort, and
 * stay on the stack while they hold the entries after them. */
static int tries_fill(const int fd[2], const struct ban *v, size_t n)
{
	size_t *stack = malloc((n ? n : 1) * sizeof(*stack)), depth = 0;
	__u64 *end = malloc((n ? n : 1) * sizeof(*end));
	int err = stack && end ? 0 : -ENOMEM;

	for (size_t i = 0; i < n && !err; i++) {
		struct tb_lpm_v4 k4 = { .prefixlen = v[i].p.len };
		struct tb_lpm_v6 k6 = { .prefixlen = v[i].p.len };
		int v6 = v[i].p.family == 6;
		struct tb_ban b;

		while (depth && !prefix_covers(&v[stack[depth - 1]].p, &v[i].p))
			depth--;
		end[i] = v[i].own_ns;
		if (depth && end[stack[depth - 1]] > end[i])
			end[i] = end[stack[depth - 1]];
		b = (struct tb_ban){ .until_ns = end[i], .own_ns = v[i].own_ns, .added_ns = v[i].added_ns };
		memcpy(&k4.addr, v[i].p.addr, 4);
		memcpy(k6.addr, v[i].p.addr, 16);
		if (bpf_map_update_elem(fd[v6], v6 ? (void *)&k6 : (void *)&k4, &b, BPF_ANY))
			err = -errno;
		stack[depth++] = i;
	}
	free(stack);
	free(end);
	return err;
}

/* What the CPUs cached of the bans made stale, in a config write of its
 * own: one that read the new generation reads what was written before
 * it (stages/ban.h). */
static int gen_bump(const struct tb_maps *m)
{
	struct tb_config cfg;
	int err = state_read_config(m, &cfg);

	if (err)
		return err;
	cfg.ban_gen++;
	return state_write_config(m, &cfg);
}

int bans_write(const struct tb_maps *m, struct ban *v, size_t n)
{
	struct tb_config cfg;
	int fd[2], err = state_read_config(m, &cfg), side;

	if (err)
		return err;
	side = !cfg.ban_side;
	side_fds(m, side, fd);
	if (n)
		qsort(v, n, sizeof(*v), by_prefix);
	/* The side not in force was in force before the last write: a packet
	 * that read it then was done long before this command began. */
	if ((err = trie_clear(fd[0])) || (err = trie_clear(fd[1])) || (err = tries_fill(fd, v, n)))
		return err;
	cfg.ban_side = side;
	cfg.bans_v4 = cfg.bans_v6 = 0;
	for (size_t i = 0; i < n; i++)
		v[i].p.family == 6 ? cfg.bans_v6++ : cfg.bans_v4++;
	if ((err = state_write_config(m, &cfg)))
		return err;
	return gen_bump(m);
}

int bans_put(const struct tb_maps *m, const struct banfile_entry *e, size_t n, bool replace, __u64 now)
{
	struct ban *v = NULL, *g;
	size_t have = 0, out = 0, fam[2] = { 0, 0 };
	int err = replace ? 0 : bans_read(m, now, &v, &have);

	if (err)
		return err;
	g = realloc(v, (have + n + 1) * sizeof(*v));
	if (!g) {
		free(v);
		return -ENOMEM;
	}
	v = g;
	for (size_t i = 0; i < have; i++)
		v[i].order = i;
	for (size_t i = 0; i < n; i++)
		v[have + i] = (struct ban){ .p = e[i].p, .added_ns = now, .order = have + i,
					    .own_ns = e[i].dur_ns ? now + e[i].dur_ns : TB_BAN_FOREVER };
	qsort(v, have + n, sizeof(*v), by_prefix);
	/* Of a run of one prefix, the last (the latest put) stays. */
	for (size_t i = 0; i < have + n; i++) {
		if (i + 1 < have + n && same_prefix(&v[i], &v[i + 1]))
			continue;
		fam[v[i].p.family == 6]++;
		v[out++] = v[i];
	}
	err = fam[0] > TB_MAX_BANS || fam[1] > TB_MAX_BANS ? -E2BIG : bans_write(m, v, out);
	free(v);
	return err;
}

int bans_del(const struct tb_maps *m, const struct tb_prefix *p, __u64 now)
{
	struct ban *v, key = { .p = *p };
	size_t n, out = 0;
	int err = bans_read(m, now, &v, &n);

	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		if (!same_prefix(&v[i], &key))
			v[out++] = v[i];
	err = out == n ? -ENOENT : bans_write(m, v, out);
	free(v);
	return err;
}

static bool holds(const struct tb_autoban *a, __u64 now)
{
	return a->rule && tb_ban_holds(a->until_ns, now);
}

int autobans_read(const struct tb_maps *m, __u64 now, struct autoban **out, size_t *n)
{
	struct tb_addr key, next;
	struct tb_autoban a;
	size_t cap = 0;
	int err = 0;

	*out = NULL;
	*n = 0;
	for (void *prev = NULL; !bpf_map_get_next_key(m->autobans, prev, &next); prev = &key) {
		key = next;
		if (bpf_map_lookup_elem(m->autobans, &key, &a) || !holds(&a, now))
			continue;
		if ((err = GROW(*out, *n, cap, 64)))
			break;
		(*out)[*n].key = key;
		(*out)[(*n)++].a = a;
	}
	if (!err && errno != ENOENT)
		err = -errno;
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return err;
}

int autoban_shared_slot(const struct tb_addr *key)
{
	__u32 w1 = ntohl(key->w[1]);

	if (key->w[0] || key->w[2] || key->w[3] || !(w1 & TB_BAN_SHARED))
		return -1;
	return w1 & 0xffff;
}

/* Whether key, made under rule (slot, -1: not known) of rs, is of an
 * address or group inside p. */
static bool key_inside(const struct ruleset *rs, const struct tb_addr *key, int rule, const struct tb_prefix *p)
{
	struct tb_addr a, base;
	__u32 len;

	if (autoban_shared_slot(key) >= 0)
		return false;
	ruleset_key_address(rs, key, rule, &a);
	if (group_base(&a, &base, &len))
		return len >= p->len && prefix_contains(p, &base);
	if (addr_is_v4(&a))
		a.w[1] = 0;
	return prefix_contains(p, &a);
}

int autobans_lift(const struct tb_maps *m, const struct ruleset *rs, const struct tb_prefix *p, __u64 now,
		  int *lifted)
{
	struct autoban *v;
	size_t n;
	int err = autobans_read(m, now, &v, &n);

	*lifted = 0;
	for (size_t i = 0; i < n && !err; i++) {
		if (!key_inside(rs, &v[i].key, (int)v[i].a.rule - 1, p))
			continue;
		if (bpf_map_delete_elem(m->autobans, &v[i].key) && errno != ENOENT)
			err = -errno;
		else
			(*lifted)++;
	}
	free(v);
	return err || !*lifted ? err : gen_bump(m);
}
