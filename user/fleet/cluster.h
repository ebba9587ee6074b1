/* SPDX-License-Identifier: GPL-2.0 */
/* Redis Cluster routing by the cluster specification: a key's hash slot
 * (CRC16 of its hash tag), the slot map from CLUSTER SHARDS, and the
 * MOVED and ASK redirections. Debian packages no cluster client for
 * hiredis; this is what the fleet's store needs of one. */
#ifndef TB_CLUSTER_H
#define TB_CLUSTER_H

#include <stddef.h>

#define CLUSTER_SLOTS 16384

/* CRC16-CCITT (XMODEM) of buf, as the specification's key slots use it. */
unsigned int cluster_crc16(const char *buf, size_t len);
/* The hash slot of key: of the part between its first '{' and the next
 * '}' when that is not empty, else of all of it. */
unsigned int cluster_slot(const char *key);

/* A master of the slot map: where it listens. */
struct cluster_master {
	char host[64];
	int port;
};

/* Read a CLUSTER SHARDS reply (a redisReply) into at most max masters
 * and slot_master[CLUSTER_SLOTS] (an index into masters, -1: no master).
 * The number of masters, or -1 when the reply is not the command's. */
int cluster_shards(const void *reply, struct cluster_master *masters, int max, int *slot_master);

/* Parse the error of a MOVED or ASK redirection: 1 for MOVED, 2 for ASK,
 * with the slot and where to go; 0 for any other error. */
int cluster_redirect(const char *err, unsigned int *slot, struct cluster_master *to);

#endif
