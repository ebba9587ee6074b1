/* SPDX-License-Identifier: GPL-2.0 */
/* The store's connections, for the grant protocol (grant.c) that calls
 * through them (store.c). */
#ifndef TB_STORE_CONN_H
#define TB_STORE_CONN_H

#include <hiredis/hiredis.h>
#include "fleet/store.h"

/* Say in s->error what failed and why; -1. */
int fail(struct store *s, const char *what, const char *why);
/* Why the connection to n failed (a read that timed out said so); -1. */
int io_fail(struct store *s, struct store_node *n, const char *what);
/* A command's reply on n, or NULL with s->error saying why; n is closed
 * when the connection failed. */
redisReply *command(struct store *s, struct store_node *n, const char *what, int argc, const char **argv);
/* Connect to n, load the grant function, read its run id; 0 or -1. */
int node_connect(struct store *s, struct store_node *n);
void node_close(struct store_node *n);
/* The node that serves a cluster master, connected; -1 if it cannot be. */
int node_at(struct store *s, const struct cluster_master *m);
/* store_grant on Redis (grant.c). */
int redis_grant(struct store *s, const char *fleet, const char *host, __u64 lease_ms, struct store_ask *a,
		size_t n, char *epoch, size_t epochlen);
/* The Redis store's operations (store.c). */
extern const struct store_ops *const redis_store;

#endif
