// SPDX-License-Identifier: GPL-2.0
/* The fleet's store on Redis (hiredis). Only the store's clock decides
 * refills: the function below reads TIME itself, so hosts' clocks, skewed
 * or not, never enter the arithmetic.
 *
 * Per key (a hash): t, the level in units, r, its micro-unit remainder,
 * ts, when it was last refilled (store microseconds), ep, the epoch it
 * belongs to, and per host H: o:H, the credit H holds, and e:H, when that
 * lease ends. The level never holds more than the burst less what hosts
 * hold, so t + sum(o:H) <= burst, and the fleet spends no more than
 * burst + rate * T in any T: what it spends in T was held, or in t, at the
 * start of T, or refilled during it. A lease that ends unrenewed counts
 * as spent: a host stops spending at its own end of the lease, which
 * comes earlier, since it starts counting before it asks.
 *
 * Keys are spread over STORE_TAGS hash tags, each with an epoch key of
 * its own, so that on a Redis Cluster a call (one per tag: its keys share
 * a slot) goes to one master, and a slot carries its epoch when it moves.
 *
 * Epochs: a tag's epoch is its server's run id and the instant it was
 * first seen. A restart (data lost or not) or a failover to a replica
 * brings another run id, and every key of the tag then starts empty at
 * the epoch's start: credit granted before may still be spent, and was
 * within the bound when granted, so the new epoch grants only what it
 * refills. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include "fleet/cluster.h"
#include "fleet/store.h"

static const char grant_lua[] =
	"#!lua name=tbctl\n"
	"local function num(v) return string.format('%d', v) end\n"
	"local function grant(keys, args)\n"
	"  local tm = redis.call('TIME')\n"
	"  local now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])\n"
	"  local host, run, lease, nep = args[1], args[2], tonumber(args[3]), tonumber(args[4])\n"
	"  local ep, start, out = {}, {}, {}\n"
	"  for i = 1, nep do\n"
	"    local v = redis.call('GET', keys[i])\n"
	"    local r, s\n"
	"    if v then r, s = string.match(v, '^(%w+):(%d+)$') end\n"
	"    if r ~= run then\n"
	"      s = now\n"
	"      v = run .. ':' .. num(now)\n"
	"      redis.call('SET', keys[i], v)\n"
	"    end\n"
	"    ep[i], start[i] = v, tonumber(s)\n"
	"  end\n"
	"  out[1] = ep[1]\n"
	"  local a = 5\n"
	"  for k = nep + 1, #keys do\n"
	"    local key, e = keys[k], tonumber(args[a])\n"
	"    local rate, cap, have = tonumber(args[a + 1]), tonumber(args[a + 2]), tonumber(args[a + 3])\n"
	"    local want, ret = tonumber(args[a + 4]), tonumber(args[a + 5])\n"
	"    a = a + 6\n"
	"    local f = {}\n"
	"    local h = redis.call('HGETALL', key)\n"
	"    for i = 1, #h, 2 do f[h[i]] = h[i + 1] end\n"
	"    local t, rem, ts = 0, 0, start[e]\n"
	"    if f.ep == ep[e] then\n"
	"      t, rem, ts = tonumber(f.t), tonumber(f.r), tonumber(f.ts)\n"
	"    elseif f.ep then\n"
	"      redis.call('DEL', key)\n"
	"      f = {}\n"
	"    end\n"
	"    local others = 0\n"
	"    for name, v in pairs(f) do\n"
	"      local x = string.match(name, '^o:(.*)$')\n"
	"      if x and x ~= host then\n"
	"        if tonumber(f['e:' .. x] or '0') > now then\n"
	"          others = others + tonumber(v)\n"
	"        else\n"
	"          redis.call('HDEL', key, name, 'e:' .. x)\n"
	"        end\n"
	"      end\n"
	"    end\n"
	"    local room = cap - others - have\n"
	"    if room < 0 then room = 0 end\n"
	"    if now > ts then\n"
	"      local dt = now - ts\n"
	"      if dt * rate >= cap * 1000000 then\n"
	"        t, rem = cap, 0\n"
	"      else\n"
	"        local n = dt * rate + rem\n"
	"        local add = math.floor(n / 1000000)\n"
	"        rem = n - add * 1000000\n"
	"        if rem < 0 then add, rem = add - 1, rem + 1000000 end\n"
	"        if rem >= 1000000 then add, rem = add + 1, rem - 1000000 end\n"
	"        t = t + add\n"
	"      end\n"
	"      ts = now\n"
	"    end\n"
	"    if t > room then t, rem = room, 0 end\n"
	"    t = t + ret\n"
	"    if t > room then t, rem = room, 0 end\n"
	"    local g = want\n"
	"    if g > t then g = t end\n"
	"    t = t - g\n"
	"    redis.call('HSET', key, 't', num(t), 'r', num(rem), 'ts', num(ts), 'ep', ep[e])\n"
	"    if have + g > 0 then\n"
	"      redis.call('HSET', key, 'o:' .. host, num(have + g), 'e:' .. host, num(now + lease * 1000))\n"
	"    else\n"
	"      redis.call('HDEL', key, 'o:' .. host, 'e:' .. host)\n"
	"    end\n"
	"    redis.call('PEXPIRE', key, num(math.ceil(cap * 1000 / rate) + lease + 1000))\n"
	"    out[#out + 1] = g\n"
	"  end\n"
	"  return out\n"
	"end\n"
	"redis.register_function{function_name='tbctl_grant', callback=grant, flags={'allow-cross-slot-keys'}}\n";

/* One HOST[:PORT] of a URL, up to end. */
static int parse_node(const char *h, const char *end, struct store_node *n, const char *url, char *err,
		      size_t errlen)
{
	const char *hend, *port = NULL;
	char num[8], *e;
	long p = 6379;

	if (*h == '[') {
		hend = memchr(h + 1, ']', end - h - 1);
		if (!hend || (hend + 1 < end && hend[1] != ':')) {
			snprintf(err, errlen, "invalid store \"%s\": an IPv6 address goes in brackets", url);
			return -1;
		}
		if (hend + 1 < end)
			port = hend + 2;
		h++;
	} else {
		hend = h;
		while (hend < end && *hend != ':' && *hend != '/')
			hend++;
		if (hend < end && *hend == '/') {
			snprintf(err, errlen, "invalid store \"%s\": no path or database is taken", url);
			return -1;
		}
		if (hend < end)
			port = hend + 1;
	}
	if (hend == h || (size_t)(hend - h) >= sizeof(n->host)) {
		snprintf(err, errlen, "invalid store \"%s\": missing or too long a host", url);
		return -1;
	}
	if (port) {
		if (port == end || (size_t)(end - port) >= sizeof(num)) {
			snprintf(err, errlen, "invalid store \"%s\": the port must be 1-65535", url);
			return -1;
		}
		memcpy(num, port, end - port);
		num[end - port] = 0;
		p = strtol(num, &e, 10);
		if (*e || p < 1 || p > 65535) {
			snprintf(err, errlen, "invalid store \"%s\": the port must be 1-65535", url);
			return -1;
		}
	}
	memset(n, 0, sizeof(*n));
	memcpy(n->host, h, hend - h);
	n->port = (int)p;
	return 0;
}

int store_parse_url(const char *url, struct store *s, char *err, size_t errlen)
{
	const char *h = url, *end;

	memset(s, 0, sizeof(*s));
	s->timeout_ms = 200;
	if (!strncmp(h, "redis://", 8)) {
		h += 8;
	} else if (!strncmp(h, "redis-cluster://", 16)) {
		h += 16;
		s->cluster = true;
	} else {
		snprintf(err, errlen, "invalid store \"%s\": expected redis://HOST[:PORT] or "
			 "redis-cluster://HOST[:PORT][,HOST[:PORT]]...", url);
		return -1;
	}
	do {
		end = h + strcspn(h, ",");
		if (s->nseeds == STORE_NODES || (!s->cluster && *end)) {
			snprintf(err, errlen, "invalid store \"%s\": %s", url,
				 s->cluster ? "at most 16 seeds" : "one server (redis-cluster:// takes several)");
			return -1;
		}
		if (parse_node(h, end, &s->seeds[s->nseeds++], url, err, errlen))
			return -1;
		h = end + 1;
	} while (*end);
	return 0;
}

static void node_close(struct store_node *n)
{
	if (n->c)
		redisFree(n->c);
	n->c = NULL;
}

void store_close(struct store *s)
{
	for (int i = 0; i < s->nnodes; i++)
		node_close(&s->nodes[i]);
	s->nnodes = 0;
}

static int fail(struct store *s, const char *what, const char *why)
{
	snprintf(s->error, sizeof(s->error), "%.40s: %.80s", what, why);
	return -1;
}

/* Whether c's read timed out: hiredis 0.14 reports it as an I/O error of
 * EAGAIN, later ones as REDIS_ERR_TIMEOUT. */
static bool timed_out(const redisContext *c)
{
#ifdef REDIS_ERR_TIMEOUT
	if (c->err == REDIS_ERR_TIMEOUT)
		return true;
#endif
	return c->err == REDIS_ERR_IO &&
	       (!strcmp(c->errstr, strerror(EAGAIN)) || !strcmp(c->errstr, strerror(EWOULDBLOCK)));
}

/* Why the connection to n failed; a store that did not answer in time
 * is said to, with the limit, rather than as a resource unavailable. */
static int io_fail(struct store *s, struct store_node *n, const char *what)
{
	const redisContext *c = n->c;
	char why[96];

	if (!c->errstr[0])
		return fail(s, what, "no reply");
	if (!timed_out(c))
		return fail(s, what, c->errstr);
	snprintf(why, sizeof(why), "the store did not answer within %u ms", s->timeout_ms);
	return fail(s, what, why);
}

/* A command's reply on n, or NULL with s->error saying why; n is closed
 * when the connection failed. */
static redisReply *command(struct store *s, struct store_node *n, const char *what, int argc, const char **argv)
{
	redisReply *r = redisCommandArgv(n->c, argc, argv, NULL);

	if (!r) {
		io_fail(s, n, what);
		node_close(n);
		return NULL;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		char why[96];

		snprintf(why, sizeof(why), "the store answered \"%.60s\"", r->str);
		freeReplyObject(r);
		fail(s, what, why);
		return NULL;
	}
	return r;
}

static int node_open(struct store *s, struct store_node *n)
{
	struct timeval tv = { s->timeout_ms / 1000, s->timeout_ms % 1000 * 1000 };
	char addr[96];
	redisContext *c;

	node_close(n);
	snprintf(addr, sizeof(addr), "connect to %s:%d", n->host, n->port);
	c = redisConnectWithTimeout(n->host, n->port, tv);
	if (!c)
		return fail(s, addr, "out of memory");
	n->c = c;
	if (c->err || redisSetTimeout(c, tv)) {
		fail(s, addr, c->err ? c->errstr : "cannot set a timeout");
		node_close(n);
		return -1;
	}
	return 0;
}

/* Connect to n, load the grant function, read its run id. */
static int node_connect(struct store *s, struct store_node *n)
{
	const char *load[] = { "FUNCTION", "LOAD", "REPLACE", grant_lua }, *info[] = { "INFO", "server" };
	const char *id;
	redisReply *r;
	size_t len;

	if (node_open(s, n))
		return -1;
	r = command(s, n, "load the grant function", 4, load);
	if (!r)
		goto out;
	if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
		freeReplyObject(r);
		fail(s, "load the grant function", "the store's answer is no function name");
		goto out;
	}
	freeReplyObject(r);
	r = command(s, n, "read the server's run id", 2, info);
	if (!r)
		goto out;
	id = r->type == REDIS_REPLY_STRING ? strstr(r->str, "run_id:") : NULL;
	len = id ? strspn(id + 7, "0123456789abcdef") : 0;
	if (len < 8 || len >= sizeof(n->run_id)) {
		freeReplyObject(r);
		fail(s, "read the server's run id", "INFO server has no run_id");
		goto out;
	}
	snprintf(n->run_id, sizeof(n->run_id), "%.*s", (int)len, id + 7);
	freeReplyObject(r);
	return 0;
out:
	node_close(n);
	return -1;
}

/* The slot map, from the first seed (or known master) that gives it. */
static int cluster_map(struct store *s)
{
	const char *shards[] = { "CLUSTER", "SHARDS" };
	struct cluster_master m[STORE_NODES];
	struct store_node from[2 * STORE_NODES];
	int nfrom = 0, n = -1;

	/* The masters known first: a seed may be gone. */
	for (int i = 0; i < s->nnodes; i++) {
		from[nfrom] = s->nodes[i];
		from[nfrom++].c = NULL;
	}
	for (int i = 0; i < s->nseeds; i++)
		from[nfrom++] = s->seeds[i];
	store_close(s);
	for (int i = 0; i < nfrom && n < 0; i++) {
		redisReply *r;

		if (node_open(s, &from[i]))
			continue;
		r = command(s, &from[i], "read the slot map (CLUSTER SHARDS)", 2, shards);
		if (r) {
			n = cluster_shards(r, m, STORE_NODES, s->slot_node);
			if (n <= 0)
				fail(s, "read the slot map (CLUSTER SHARDS)", "no masters, or not the command's answer");
			freeReplyObject(r);
		}
		node_close(&from[i]);
	}
	if (n <= 0)
		return -1;
	for (int i = 0; i < n; i++) {
		memset(&s->nodes[i], 0, sizeof(s->nodes[i]));
		memcpy(s->nodes[i].host, m[i].host, sizeof(s->nodes[i].host));
		s->nodes[i].port = m[i].port;
	}
	s->nnodes = n;
	return 0;
}

int store_connect(struct store *s)
{
	s->stale = false;
	if (!s->cluster) {
		store_close(s);
		s->nodes[0] = s->seeds[0];
		s->nnodes = 1;
	} else if (cluster_map(s)) {
		return -1;
	}
	for (int i = 0; i < s->nnodes; i++)
		if (node_connect(s, &s->nodes[i])) {
			store_close(s);
			return -1;
		}
	s->error[0] = 0;
	return 0;
}

void store_where(const struct store *s, char *buf, size_t len)
{
	if (s->cluster)
		snprintf(buf, len, "cluster via %s:%d (%d masters)", s->seeds[0].host, s->seeds[0].port, s->nnodes);
	else
		snprintf(buf, len, "%s:%d", s->seeds[0].host, s->seeds[0].port);
}

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

/* The node that serves host:port, connected; -1 if it cannot be. */
static int node_at(struct store *s, const struct cluster_master *m)
{
	for (int i = 0; i < s->nnodes; i++)
		if (!strcmp(s->nodes[i].host, m->host) && s->nodes[i].port == m->port)
			return s->nodes[i].c || !node_connect(s, &s->nodes[i]) ? i : -1;
	return -1;
}

int store_grant(struct store *s, const char *fleet, const char *host, __u64 lease_ms, struct store_ask *a,
		size_t n, char *epoch, size_t epochlen)
{
	struct tag_call calls[STORE_TAGS] = {};
	int count[STORE_TAGS] = {}, *of[STORE_TAGS] = {}, left = 0;
	unsigned int tags[STORE_TAGS], ntags = 0;

	for (size_t i = 0; i < n; i++)
		a[i].done = false;
	if ((s->stale || !s->nnodes) && store_connect(s))
		return (int)n;
	for (size_t i = 0; i < n; i++)
		count[a[i].tag]++;
	for (unsigned int t = 0; t < STORE_TAGS; t++) {
		if (!count[t])
			continue;
		of[t] = calloc(count[t], sizeof(int));
		if (!of[t]) {
			fail(s, "grant", "out of memory");
			goto out;
		}
		tags[ntags++] = t;
		count[t] = 0;
	}
	for (size_t i = 0; i < n; i++)
		of[a[i].tag][count[a[i].tag]++] = (int)i;
	/* Every tag's call appended to its server's connection, then the
	 * replies read: a round trip a server. */
	for (unsigned int k = 0; k < ntags; k++) {
		unsigned int t = tags[k];
		struct tag_call *c = &calls[t];

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
		if (call_make(c, fleet, t, host, s->nodes[c->node].run_id, lease_ms, a, of[t], count[t]) ||
		    redisAppendCommandArgv(s->nodes[c->node].c, c->argc, c->argv, NULL) != REDIS_OK)
			c->node = -1;
	}
	for (unsigned int k = 0; k < ntags; k++) {
		unsigned int t = tags[k], slot;
		struct tag_call *c = &calls[t];
		struct store_node *nd = c->node >= 0 ? &s->nodes[c->node] : NULL;
		struct cluster_master to;
		redisReply *r = NULL;
		int kind;

		if (!nd || !nd->c)
			continue;
		if (redisGetReply(nd->c, (void **)&r) != REDIS_OK || !r) {
			io_fail(s, nd, "grant");
			node_close(nd);
			continue;
		}
		kind = r->type == REDIS_REPLY_ERROR ? cluster_redirect(r->str, &slot, &to) : 0;
		if (kind == 1) {
			/* The slot moved: the map is read again next round. */
			s->stale = true;
			fail(s, "grant", r->str);
		} else if (kind == 2) {
			/* The slot is moving and the keys are at the target:
			 * asked there once every pipelined reply is in. */
			c->ask = to;
			c->asked = true;
			fail(s, "grant", r->str);
		} else if (r->type == REDIS_REPLY_ERROR) {
			char why[96];

			snprintf(why, sizeof(why), "the store answered \"%.60s\"", r->str);
			fail(s, "grant", why);
		} else {
			call_take(s, r, a, of[t], count[t], epoch, epochlen);
		}
		if (r)
			freeReplyObject(r);
	}
	for (unsigned int k = 0; k < ntags; k++) {
		struct tag_call *c = &calls[tags[k]];
		const char *asking[] = { "ASKING" };
		redisReply *r;
		int at;

		if (!c->asked || (at = node_at(s, &c->ask)) < 0)
			continue;
		r = command(s, &s->nodes[at], "grant (ASKING)", 1, asking);
		if (!r)
			continue;
		freeReplyObject(r);
		r = command(s, &s->nodes[at], "grant (asked)", c->argc, c->argv);
		if (r) {
			call_take(s, r, a, of[tags[k]], count[tags[k]], epoch, epochlen);
			freeReplyObject(r);
		}
	}
out:
	for (unsigned int t = 0; t < STORE_TAGS; t++) {
		free(of[t]);
		free(calls[t].argv);
		free(calls[t].nums);
	}
	for (size_t i = 0; i < n; i++)
		left += !a[i].done;
	return left;
}
