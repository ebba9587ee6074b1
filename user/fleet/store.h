/* SPDX-License-Identifier: GPL-2.0 */
/* The fleet's store: a Redis server, and the function on it that grants
 * credit on the store's own clock (store.c). */
#ifndef TB_STORE_H
#define TB_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "fleet/cluster.h"

/* The store keeps levels in whole units and micro-units in Lua's doubles,
 * exact below 2^53: rate * elapsed microseconds stays below it for rates
 * and bursts up to these (fleet rules are refused above them). */
#define FLEET_RATE_MAX (1ULL << 32)
#define FLEET_BURST_MAX (1ULL << 32)
/* Keys of a fleet spread over this many hash tags, each with its epoch, so
 * that a Redis Cluster spreads them over its nodes. */
#define STORE_TAGS 64

#define STORE_NODES 16

/* A server: the store's one, a cluster's seed, or a cluster's master. */
struct store_node {
	char host[64];
	int port;
	void *c;                /* redisContext; NULL: not connected */
	char run_id[48];        /* the server's, read at each connect: its epoch */
};

struct store_ask;

/* What a store does; one for Redis, standalone or a Cluster. */
struct store;
struct store_ops {
	int (*connect)(struct store *s);
	void (*close)(struct store *s);
	void (*where)(const struct store *s, char *buf, size_t len);
	int (*grant)(struct store *s, const char *fleet, const char *host, __u64 lease_ms, struct store_ask *a,
		     size_t n, char *epoch, size_t epochlen);
};

struct store {
	const struct store_ops *ops;    /* set by store_parse_url */
	bool cluster;
	struct store_node seeds[STORE_NODES];
	int nseeds;
	struct store_node nodes[STORE_NODES];   /* standalone: the one server */
	int nnodes;
	bool stale;             /* a MOVED said the slot map is out of date */
	int slot_node[CLUSTER_SLOTS];
	unsigned int timeout_ms;
	char error[128];        /* what the latest failure was */
};

/* Parse redis://HOST[:PORT] or redis-cluster://HOST[:PORT][,HOST[:PORT]]...
 * (seeds; IPv6 HOST in brackets) into s; an error message in err
 * otherwise. */
int store_parse_url(const char *url, struct store *s, char *err, size_t errlen);
/* Connect to the server, or to a seed and then every master of the slot
 * map, loading the grant function into each and reading its run id. 0,
 * or -1 with s->error saying what failed. */
int store_connect(struct store *s);
void store_close(struct store *s);
/* Where the store is, for status: HOST:PORT, or the first seed and the
 * number of masters. */
void store_where(const struct store *s, char *buf, size_t len);

/* One key's part of a grant call. */
struct store_ask {
	const char *key;        /* the fleet key's name */
	unsigned int tag;       /* its hash tag, < STORE_TAGS */
	__u64 rate, burst;      /* the rule's, in its units */
	__u64 have;             /* unspent credit this host holds */
	__u64 want;             /* credit asked for */
	__u64 ret;              /* credit taken back, returned */
	__u64 granted;          /* out */
	bool done;              /* out: the store took the ask (and the return) */
};

/* One round: for each of n asks, this host (name host) holds have,
 * returns ret and asks for want, under a lease of lease_ms; the store's
 * epoch (a tag's) goes to epoch. One call per tag, pipelined to each
 * server. The number of asks not done, each for the reason s->error
 * says: a server unreachable, a redirection (taken up next round), or a
 * reply that is not the function's ("garbage"), which grants nothing. */
int store_grant(struct store *s, const char *fleet, const char *host, __u64 lease_ms, struct store_ask *a,
		size_t n, char *epoch, size_t epochlen);
/* The name of a fleet key and its tag: rule (its prefix and match) and
 * key (an address or group, or "total"). */
unsigned int store_key(const char *fleet, const char *rule, const char *key, char *buf, size_t len);

#endif
