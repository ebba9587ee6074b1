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
 * Epochs: a tag's epoch is the server's run id and the instant it was
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
#include "store.h"

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

int store_parse_url(const char *url, struct store *s, char *err, size_t errlen)
{
	const char *h = url, *end, *port = NULL;
	char *e;
	long p = 6379;

	memset(s, 0, sizeof(*s));
	s->c = NULL;
	s->timeout_ms = 200;
	if (strncmp(h, "redis://", 8)) {
		snprintf(err, errlen, "invalid store \"%s\": expected redis://HOST[:PORT]", url);
		return -1;
	}
	h += 8;
	if (*h == '[') {
		end = strchr(++h, ']');
		if (!end || (end[1] && end[1] != ':')) {
			snprintf(err, errlen, "invalid store \"%s\": an IPv6 address goes in brackets", url);
			return -1;
		}
		if (end[1])
			port = end + 2;
	} else {
		end = h + strcspn(h, ":/");
		if (*end == '/') {
			snprintf(err, errlen, "invalid store \"%s\": no path or database is taken", url);
			return -1;
		}
		if (*end == ':')
			port = end + 1;
	}
	if (end == h || (size_t)(end - h) >= sizeof(s->host)) {
		snprintf(err, errlen, "invalid store \"%s\": missing or too long a host", url);
		return -1;
	}
	if (port) {
		errno = 0;
		p = strtol(port, &e, 10);
		if (!*port || *e || errno || p < 1 || p > 65535) {
			snprintf(err, errlen, "invalid store \"%s\": the port must be 1-65535", url);
			return -1;
		}
	}
	memcpy(s->host, h, end - h);
	s->port = (int)p;
	return 0;
}

void store_close(struct store *s)
{
	if (s->c)
		redisFree(s->c);
	s->c = NULL;
}

static int fail(struct store *s, const char *what, const char *why)
{
	snprintf(s->error, sizeof(s->error), "%.40s: %.80s", what, why);
	store_close(s);
	return -1;
}

/* A command's reply, or NULL with s->error saying why. */
static redisReply *command(struct store *s, const char *what, int argc, const char **argv, const size_t *lens)
{
	redisReply *r = redisCommandArgv(s->c, argc, argv, lens);

	if (!r) {
		fail(s, what, ((redisContext *)s->c)->errstr[0] ? ((redisContext *)s->c)->errstr : "no reply");
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

int store_connect(struct store *s)
{
	struct timeval tv = { s->timeout_ms / 1000, s->timeout_ms % 1000 * 1000 };
	const char *load[] = { "FUNCTION", "LOAD", "REPLACE", grant_lua }, *info[] = { "INFO", "server" };
	char addr[96];
	redisContext *c;
	redisReply *r;
	const char *id;

	store_close(s);
	snprintf(addr, sizeof(addr), "connect to %s:%d", s->host, s->port);
	c = redisConnectWithTimeout(s->host, s->port, tv);
	if (!c)
		return fail(s, addr, "out of memory");
	s->c = c;
	if (c->err)
		return fail(s, addr, c->errstr);
	if (redisSetTimeout(c, tv))
		return fail(s, addr, "cannot set a timeout");
	r = command(s, "load the grant function", 4, load, NULL);
	if (!r)
		return -1;
	if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
		freeReplyObject(r);
		return fail(s, "load the grant function", "the store's answer is no function name");
	}
	freeReplyObject(r);
	r = command(s, "read the server's run id", 2, info, NULL);
	if (!r)
		return -1;
	id = r->type == REDIS_REPLY_STRING ? strstr(r->str, "run_id:") : NULL;
	if (!id || strspn(id + 7, "0123456789abcdef") < 8 || strspn(id + 7, "0123456789abcdef") >= sizeof(s->run_id)) {
		freeReplyObject(r);
		return fail(s, "read the server's run id", "INFO server has no run_id");
	}
	snprintf(s->run_id, sizeof(s->run_id), "%.*s", (int)strspn(id + 7, "0123456789abcdef"), id + 7);
	freeReplyObject(r);
	s->error[0] = 0;
	return 0;
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

int store_grant(struct store *s, const char *fleet, const char *host, __u64 lease_ms, struct store_ask *a,
		size_t n, char *epoch, size_t epochlen)
{
	int used[STORE_TAGS], nep = 0, argc;
	size_t nargs = 7 + STORE_TAGS + 7 * n;
	const char **argv = calloc(nargs, sizeof(*argv));
	char (*nums)[24] = calloc(6 * n + 4 + STORE_TAGS, sizeof(*nums));
	char (*epk)[96] = calloc(STORE_TAGS, sizeof(*epk));
	int slot[STORE_TAGS];
	redisReply *r;
	int ni = 0, rc = -1;

	if (!argv || !nums || !epk) {
		snprintf(s->error, sizeof(s->error), "grant: out of memory");
		goto out;
	}
	if (!s->c && store_connect(s))
		goto out;
	memset(slot, -1, sizeof(slot));
	for (size_t i = 0; i < n; i++)
		if (slot[a[i].tag] < 0) {
			slot[a[i].tag] = nep;
			used[nep++] = a[i].tag;
		}
	argv[0] = "FCALL";
	argv[1] = "tbctl_grant";
	snprintf(nums[ni], sizeof(nums[ni]), "%zu", nep + n);
	argv[2] = nums[ni++];
	argc = 3;
	for (int i = 0; i < nep; i++) {
		snprintf(epk[i], sizeof(epk[i]), "tbctl:{%s:%02u}:epoch", fleet, used[i]);
		argv[argc++] = epk[i];
	}
	for (size_t i = 0; i < n; i++)
		argv[argc++] = a[i].key;
	argv[argc++] = host;
	argv[argc++] = s->run_id;
	snprintf(nums[ni], sizeof(nums[ni]), "%llu", (unsigned long long)lease_ms);
	argv[argc++] = nums[ni++];
	snprintf(nums[ni], sizeof(nums[ni]), "%d", nep);
	argv[argc++] = nums[ni++];
	for (size_t i = 0; i < n; i++) {
		__u64 v[6] = { slot[a[i].tag] + 1, a[i].rate, a[i].burst, a[i].have, a[i].want, a[i].ret };

		for (int j = 0; j < 6; j++) {
			snprintf(nums[ni], sizeof(nums[ni]), "%llu", (unsigned long long)v[j]);
			argv[argc++] = nums[ni++];
		}
	}
	r = command(s, "grant", argc, argv, NULL);
	if (!r)
		goto out;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != n + 1 || r->element[0]->type != REDIS_REPLY_STRING) {
		freeReplyObject(r);
		fail(s, "grant", "the store's answer is not the grant function's (garbage)");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		redisReply *g = r->element[i + 1];

		if (g->type != REDIS_REPLY_INTEGER || g->integer < 0 || (__u64)g->integer > a[i].want) {
			freeReplyObject(r);
			fail(s, "grant", "the store granted what was not asked for (garbage)");
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++)
		a[i].granted = r->element[i + 1]->integer;
	snprintf(epoch, epochlen, "%s", r->element[0]->str);
	freeReplyObject(r);
	rc = 0;
out:
	free(argv);
	free(nums);
	free(epk);
	return rc;
}
