// SPDX-License-Identifier: GPL-2.0
/* The grant protocol: a round's asks, a call of the store's function
 * (grant.lua) per hash tag, pipelined to each server, and its replies
 * checked before anything is taken from them. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include "fleet/cluster.h"
#include "fleet/store.h"
#include "fleet/store_conn.h"

unsigned int store_key(const char *fleet, const char *rule, const char *key, char *buf, size_t len)
{
	__u32 h = 2166136261u;
	unsigned int tag;

	for (const char *p = rule; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	h = (h ^ ' ') * 16777619u;
	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	tag = h % STORE_TAGS;
	snprintf(buf, len, "tbctl:{%s:%02u}:%s:%s", fleet, tag, rule, key);
	return tag;
}

/* One tag's call: its epoch key and its asks' keys and arguments. */
struct tag_call {
	const char **argv;
	int argc;
	char epoch_key[96];
	char (*nums)[24];
	int node;
	bool asked;                     /* ASK: try at ask */
	struct cluster_master ask;
};

static int call_make(struct tag_call *t, const char *fleet, unsigned int tag, const char *host, const char *run_id,
		     __u64 lease_ms, struct store_ask *a, const int *of, int n)
{
	int ni = 0;

	t->argv = calloc(8 + 7 * n, sizeof(*t->argv));
	t->nums = calloc(3 + 6 * n, sizeof(*t->nums));
	if (!t->argv || !t->nums)
		return -1;
	snprintf(t->epoch_key, sizeof(t->epoch_key), "tbctl:{%s:%02u}:epoch", fleet, tag);
	t->argv[0] = "FCALL";
	t->argv[1] = "tbctl_grant";
	snprintf(t->nums[ni], sizeof(t->nums[ni]), "%d", n + 1);
	t->argv[2] = t->nums[ni++];
	t->argv[3] = t->epoch_key;
	t->argc = 4;
	for (int i = 0; i < n; i++)
		t->argv[t->argc++] = a[of[i]].key;
	t->argv[t->argc++] = host;
	t->argv[t->argc++] = run_id;
	snprintf(t->nums[ni], sizeof(t->nums[ni]), "%llu", (unsigned long long)lease_ms);
	t->argv[t->argc++] = t->nums[ni++];
	t->argv[t->argc++] = "1";
	for (int i = 0; i < n; i++) {
		const struct store_ask *q = &a[of[i]];
		__u64 v[6] = { 1, q->rate, q->burst, q->have, q->want, q->ret };

		for (int j = 0; j < 6; j++) {
			snprintf(t->nums[ni], sizeof(t->nums[ni]), "%llu", (unsigned long long)v[j]);
			t->argv[t->argc++] = t->nums[ni++];
		}
	}
	return 0;
}

/* The function's reply to a tag's call of n asks: the grants taken into
 * a, or an error said. */
static int call_take(struct store *s, redisReply *r, struct store_ask *a, const int *of, int n, char *epoch,
		     size_t epochlen)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)n + 1 || r->element[0]->type != REDIS_REPLY_STRING)
		return fail(s, "grant", "the store's answer is not the grant function's (garbage)");
	for (int i = 0; i < n; i++) {
		redisReply *g = r->element[i + 1];

		if (g->type != REDIS_REPLY_INTEGER || g->integer < 0 || (__u64)g->integer > a[of[i]].want)
			return fail(s, "grant", "the store granted what was not asked for (garbage)");
	}
	for (int i = 0; i < n; i++) {
		a[of[i]].granted = r->element[i + 1]->integer;
		a[of[i]].done = true;
	}
	snprintf(epoch, epochlen, "%s", r->element[0]->str);
	return 0;
}

/* One round's calls, a tag at a time: the asks of each tag (of[t], by
 * index into the caller's), and the call made of them. */
struct round {
	struct tag_call calls[STORE_TAGS];
	int count[STORE_TAGS], *of[STORE_TAGS];
	unsigned int tags[STORE_TAGS], ntags;
};

/* The asks grouped by tag. */
static int round_group(struct store *s, struct round *r, const struct store_ask *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		r->count[a[i].tag]++;
	for (unsigned int t = 0; t < STORE_TAGS; t++) {
		if (!r->count[t])
			continue;
		r->of[t] = calloc(r->count[t], sizeof(int));
		if (!r->of[t])
			return fail(s, "grant", "out of memory");
		r->tags[r->ntags++] = t;
		r->count[t] = 0;
	}
	for (size_t i = 0; i < n; i++)
		r->of[a[i].tag][r->count[a[i].tag]++] = (int)i;
	return 0;
}

/* Every tag's call appended to its server's connection (pipelined: a
 * round trip a server); a tag whose server cannot be reached is left. */
static void round_send(struct store *s, struct round *r, const char *fleet, const char *host, __u64 lease_ms,
		       struct store_ask *a)
{
	for (unsigned int k = 0; k < r->ntags; k++) {
		unsigned int t = r->tags[k];
		struct tag_call *c = &r->calls[t];

		c->node = 0;
		if (s->cluster) {
			char key[96];

			snprintf(key, sizeof(key), "{%s:%02u}", fleet, t);
			c->node = s->slot_node[cluster_slot(key)];
		}
		if (c->node < 0 || c->node >= s->nnodes || (!s->nodes[c->node].c && node_connect(s, &s->nodes[c->node]))) {
			c->node = -1;
			continue;
		}
		if (call_make(c, fleet, t, host, s->nodes[c->node].run_id, lease_ms, a, r->of[t], r->count[t]) ||
		    redisAppendCommandArgv(s->nodes[c->node].c, c->argc, c->argv, NULL) != REDIS_OK)
			c->node = -1;
	}
}

/* A tag's reply: its grants taken, or why not said. A slot that moved
 * (MOVED) has the map read again next round; one that is moving (ASK)
 * is asked at its target once every pipelined reply is in. */
static void reply_take(struct store *s, struct round *r, unsigned int t, redisReply *rep, struct store_ask *a,
		       char *epoch, size_t epochlen)
{
	struct tag_call *c = &r->calls[t];
	struct cluster_master to;
	unsigned int slot;
	int kind = rep->type == REDIS_REPLY_ERROR ? cluster_redirect(rep->str, &slot, &to) : 0;
	char why[96];

	if (kind == 1) {
		s->stale = true;
		fail(s, "grant", rep->str);
	} else if (kind == 2) {
		c->ask = to;
		c->asked = true;
		fail(s, "grant", rep->str);
	} else if (rep->type == REDIS_REPLY_ERROR) {
		snprintf(why, sizeof(why), "the store answered \"%.60s\"", rep->str);
		fail(s, "grant", why);
	} else {
		call_take(s, rep, a, r->of[t], r->count[t], epoch, epochlen);
	}
}

/* Every pipelined reply read. */
static void round_receive(struct store *s, struct round *r, struct store_ask *a, char *epoch, size_t epochlen)
{
	for (unsigned int k = 0; k < r->ntags; k++) {
		unsigned int t = r->tags[k];
		struct tag_call *c = &r->calls[t];
		struct store_node *nd = c->node >= 0 ? &s->nodes[c->node] : NULL;
		redisReply *rep = NULL;

		if (!nd || !nd->c)
			continue;
		if (redisGetReply(nd->c, (void **)&rep) != REDIS_OK || !rep) {
			io_fail(s, nd, "grant");
			node_close(nd);
			continue;
		}
		reply_take(s, r, t, rep, a, epoch, epochlen);
		freeReplyObject(rep);
	}
}

/* The calls an ASK sent elsewhere, made there after ASKING. */
static void round_asked(struct store *s, struct round *r, struct store_ask *a, char *epoch, size_t epochlen)
{
	const char *asking[] = { "ASKING" };

	for (unsigned int k = 0; k < r->ntags; k++) {
		unsigned int t = r->tags[k];
		struct tag_call *c = &r->calls[t];
		redisReply *rep;
		int at;

		if (!c->asked || (at = node_at(s, &c->ask)) < 0)
			continue;
		rep = command(s, &s->nodes[at], "grant (ASKING)", 1, asking);
		if (!rep)
			continue;
		freeReplyObject(rep);
		rep = command(s, &s->nodes[at], "grant (asked)", c->argc, c->argv);
		if (rep) {
			call_take(s, rep, a, r->of[t], r->count[t], epoch, epochlen);
			freeReplyObject(rep);
		}
	}
}

int redis_grant(struct store *s, const char *fleet, const char *host, __u64 lease_ms, struct store_ask *a,
		       size_t n, char *epoch, size_t epochlen)
{
	struct round *r = calloc(1, sizeof(*r));
	int left = 0;

	for (size_t i = 0; i < n; i++)
		a[i].done = false;
	if (!r)
		fail(s, "grant", "out of memory");
	else if ((!s->stale && s->nnodes) || !store_connect(s))
		if (!round_group(s, r, a, n)) {
			round_send(s, r, fleet, host, lease_ms, a);
			round_receive(s, r, a, epoch, epochlen);
			round_asked(s, r, a, epoch, epochlen);
		}
	for (unsigned int t = 0; r && t < STORE_TAGS; t++) {
		free(r->of[t]);
		free(r->calls[t].argv);
		free(r->calls[t].nums);
	}
	free(r);
	for (size_t i = 0; i < n; i++)
		left += !a[i].done;
	return left;
}

