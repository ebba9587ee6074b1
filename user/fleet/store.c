// SPDX-License-Identifier: GPL-2.0
/* The fleet's store on Redis (hiredis): its servers, the connection to
 * each, a Redis Cluster's routing, and the grant function (grant.lua)
 * loaded into each server it connects to. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include "fleet/cluster.h"
#include "fleet/store.h"
#include "fleet/store_conn.h"
/* grant.lua, as static const char grant_lua[] (made by the Makefile). */
#include "grant_lua.h"

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
	s->ops = redis_store;
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

void node_close(struct store_node *n)
{
	if (n->c)
		redisFree(n->c);
	n->c = NULL;
}

static void redis_close(struct store *s)
{
	for (int i = 0; i < s->nnodes; i++)
		node_close(&s->nodes[i]);
	s->nnodes = 0;
}

int fail(struct store *s, const char *what, const char *why)
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
int io_fail(struct store *s, struct store_node *n, const char *what)
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
redisReply *command(struct store *s, struct store_node *n, const char *what, int argc, const char **argv)
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
int node_connect(struct store *s, struct store_node *n)
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
	redis_close(s);
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

static int redis_connect(struct store *s)
{
	s->stale = false;
	if (!s->cluster) {
		redis_close(s);
		s->nodes[0] = s->seeds[0];
		s->nnodes = 1;
	} else if (cluster_map(s)) {
		return -1;
	}
	for (int i = 0; i < s->nnodes; i++)
		if (node_connect(s, &s->nodes[i])) {
			redis_close(s);
			return -1;
		}
	s->error[0] = 0;
	return 0;
}

static void redis_where(const struct store *s, char *buf, size_t len)
{
	if (s->cluster)
		snprintf(buf, len, "cluster via %s:%d (%d masters)", s->seeds[0].host, s->seeds[0].port, s->nnodes);
	else
		snprintf(buf, len, "%s:%d", s->seeds[0].host, s->seeds[0].port);
}

/* The node that serves host:port, connected; -1 if it cannot be. */
int node_at(struct store *s, const struct cluster_master *m)
{
	for (int i = 0; i < s->nnodes; i++)
		if (!strcmp(s->nodes[i].host, m->host) && s->nodes[i].port == m->port)
			return s->nodes[i].c || !node_connect(s, &s->nodes[i]) ? i : -1;
	return -1;
}

static const struct store_ops redis_store_ops = {
	.connect = redis_connect,
	.close = redis_close,
	.where = redis_where,
	.grant = redis_grant,
};
const struct store_ops *const redis_store = &redis_store_ops;

int store_connect(struct store *s)
{
	return s->ops->connect(s);
}

void store_close(struct store *s)
{
	if (s->ops)
		s->ops->close(s);
}

void store_where(const struct store *s, char *buf, size_t len)
{
	s->ops->where(s, buf, len);
}

int store_grant(struct store *s, const char *fleet, const char *host, __u64 lease_ms, struct store_ask *a,
		size_t n, char *epoch, size_t epochlen)
{
	return s->ops->grant(s, fleet, host, lease_ms, a, n, epoch, epochlen);
}
