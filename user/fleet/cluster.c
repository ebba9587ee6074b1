// SPDX-License-Identifier: GPL-2.0
/* Redis Cluster routing (cluster.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include "fleet/cluster.h"

unsigned int cluster_crc16(const char *buf, size_t len)
{
	unsigned int crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (unsigned int)(unsigned char)buf[i] << 8;
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (crc << 1 ^ 0x1021) & 0xffff : crc << 1 & 0xffff;
	}
	return crc;
}

unsigned int cluster_slot(const char *key)
{
	const char *open = strchr(key, '{'), *close = open ? strchr(open + 1, '}') : NULL;

	if (close && close > open + 1)
		return cluster_crc16(open + 1, close - open - 1) % CLUSTER_SLOTS;
	return cluster_crc16(key, strlen(key)) % CLUSTER_SLOTS;
}

/* The value of name in a RESP2 map (a flat array of name, value). */
static const redisReply *field(const redisReply *map, const char *name)
{
	if (map->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (size_t i = 0; i + 1 < map->elements; i += 2)
		if (map->element[i]->type == REDIS_REPLY_STRING && !strcmp(map->element[i]->str, name))
			return map->element[i + 1];
	return NULL;
}

static const char *field_str(const redisReply *map, const char *name)
{
	const redisReply *v = field(map, name);

	return v && v->type == REDIS_REPLY_STRING ? v->str : NULL;
}

/* The shard's master that is online: where it listens. */
static int shard_master(const redisReply *shard, struct cluster_master *m)
{
	const redisReply *nodes = field(shard, "nodes"), *port;
	const char *role, *health, *ip;

	for (size_t i = 0; nodes && nodes->type == REDIS_REPLY_ARRAY && i < nodes->elements; i++) {
		role = field_str(nodes->element[i], "role");
		health = field_str(nodes->element[i], "health");
		ip = field_str(nodes->element[i], "ip");
		port = field(nodes->element[i], "port");
		if (!role || strcmp(role, "master") || (health && strcmp(health, "online")) || !ip || !port ||
		    port->type != REDIS_REPLY_INTEGER || strlen(ip) >= sizeof(m->host))
			continue;
		snprintf(m->host, sizeof(m->host), "%s", ip);
		m->port = (int)port->integer;
		return 0;
	}
	return -1;
}

int cluster_shards(const void *reply, struct cluster_master *masters, int max, int *slot_master)
{
	const redisReply *r = reply;
	int n = 0;

	if (!r || r->type != REDIS_REPLY_ARRAY)
		return -1;
	for (int s = 0; s < CLUSTER_SLOTS; s++)
		slot_master[s] = -1;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *slots = field(r->element[i], "slots");
		struct cluster_master m;
		int at = -1;

		if (!slots || slots->type != REDIS_REPLY_ARRAY || slots->elements % 2)
			return -1;
		if (!slots->elements || shard_master(r->element[i], &m))
			continue;
		for (int j = 0; j < n; j++)
			if (!strcmp(masters[j].host, m.host) && masters[j].port == m.port)
				at = j;
		if (at < 0) {
			if (n == max)
				return -1;
			masters[n] = m;
			at = n++;
		}
		for (size_t j = 0; j < slots->elements; j += 2) {
			const redisReply *lo = slots->element[j], *hi = slots->element[j + 1];

			if (lo->type != REDIS_REPLY_INTEGER || hi->type != REDIS_REPLY_INTEGER || lo->integer < 0 ||
			    hi->integer >= CLUSTER_SLOTS || lo->integer > hi->integer)
				return -1;
			for (long long s = lo->integer; s <= hi->integer; s++)
				slot_master[s] = at;
		}
	}
	return n;
}

int cluster_redirect(const char *err, unsigned int *slot, struct cluster_master *to)
{
	int kind = !strncmp(err, "MOVED ", 6) ? 1 : !strncmp(err, "ASK ", 4) ? 2 : 0;
	const char *p = err + (kind == 1 ? 6 : 4), *colon;
	char *end;
	long v;

	if (!kind)
		return 0;
	v = strtol(p, &end, 10);
	if (end == p || *end != ' ' || v < 0 || v >= CLUSTER_SLOTS)
		return 0;
	*slot = (unsigned int)v;
	p = end + 1;
	colon = strrchr(p, ':');
	if (!colon || colon == p || (size_t)(colon - p) >= sizeof(to->host))
		return 0;
	memcpy(to->host, p, colon - p);
	to->host[colon - p] = 0;
	v = strtol(colon + 1, &end, 10);
	if (*end || v < 1 || v > 65535)
		return 0;
	to->port = (int)v;
	return kind;
}
