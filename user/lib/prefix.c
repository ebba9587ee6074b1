// SPDX-License-Identifier: GPL-2.0
/* Addresses and prefixes as an operator types them. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "logic/group.h"
#include "lib/match_text.h"
#include "lib/prefix.h"

static void clear_host_bits(__u8 *addr, int bytes, int len, bool *changed)
{
	for (int i = 0; i < bytes; i++) {
		int keep = len - i * 8;
		__u8 mask = keep >= 8 ? 0xff : keep <= 0 ? 0 : (__u8)(0xff << (8 - keep));

		if (addr[i] & ~mask)
			*changed = true;
		addr[i] &= mask;
	}
}

int prefix_parse(const char *s, struct tb_prefix *p, char *err, size_t errlen)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/');
	size_t hl = slash ? (size_t)(slash - s) : strlen(s);
	bool changed = false;
	int max;

	memset(p, 0, sizeof(*p));
	if (!strcmp(s, "default"))
		return PREFIX_OK;
	if (hl == 0 || hl >= sizeof(host)) {
		snprintf(err, errlen, "invalid prefix \"%s\"", s);
		return PREFIX_BAD;
	}
	memcpy(host, s, hl);
	host[hl] = 0;
	if (inet_pton(AF_INET, host, p->addr) == 1) {
		p->family = 4;
		max = 32;
	} else if (inet_pton(AF_INET6, host, p->addr) == 1) {
		p->family = 6;
		max = 128;
	} else {
		snprintf(err, errlen, "invalid address \"%s\"", host);
		return PREFIX_BAD;
	}
	p->len = max;
	if (slash) {
		char *end;
		long n;

		/* Digits only: strtol alone would take " 24" and "+24". */
		if (!slash[1] || strspn(slash + 1, "0123456789") != strlen(slash + 1)) {
			snprintf(err, errlen, "invalid prefix length in \"%s\"", s);
			return PREFIX_BAD;
		}
		n = strtol(slash + 1, &end, 10);
		if (*end || n < 0 || n > max) {
			snprintf(err, errlen, "invalid prefix length in \"%s\" (0..%d)", s, max);
			return PREFIX_BAD;
		}
		p->len = n;
	}
	/* The datapath keys IPv4 as ::ffff:a.b.c.d and counts IPv6 packets
	 * from that range as malformed, so such a rule could never match. */
	if (p->family == 6 && p->len >= 96 && !memcmp(p->addr, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
		snprintf(err, errlen, "\"%s\" is IPv4-mapped (::ffff:0:0/96), which no packet is charged "
			 "as: give the IPv4 prefix", s);
		return PREFIX_BAD;
	}
	clear_host_bits(p->addr, max / 8, p->len, &changed);
	if (changed) {
		char norm[64];

		prefix_format(p, norm, sizeof(norm));
		snprintf(err, errlen, "\"%s\" has host bits set, using %s", s, norm);
		return PREFIX_HOST_BITS;
	}
	return PREFIX_OK;
}

int addr_parse(const char *s, struct tb_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, &a->w[3]) == 1) {
		a->w[2] = htonl(0xffff);
		return 0;
	}
	return inet_pton(AF_INET6, s, a->w) == 1 ? 0 : -1;
}

bool prefix_equal(const struct tb_prefix *a, const struct tb_prefix *b)
{
	return a->family == b->family && a->len == b->len &&
	       !memcmp(a->addr, b->addr, a->family == 4 ? 4 : 16) && !memcmp(&a->m, &b->m, sizeof(a->m));
}

void prefix_format(const struct tb_prefix *p, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	char match[160];

	match_format(&p->m, match, sizeof(match));
	if (!p->family) {
		snprintf(buf, len, "default%s", match);
		return;
	}
	inet_ntop(p->family == 4 ? AF_INET : AF_INET6, p->addr, host, sizeof(host));
	snprintf(buf, len, "%s/%u%s", host, p->len, match);
}

bool addr_is_v4(const struct tb_addr *a)
{
	return !a->w[0] && !a->w[1] && a->w[2] == htonl(0xffff);
}

bool group_base(const struct tb_addr *key, struct tb_addr *base, __u32 *len)
{
	int v6;

	if (!tb_group_of(key, &v6, len))
		return false;
	memset(base, 0, sizeof(*base));
	if (v6) {
		base->w[0] = key->w[2];
		base->w[1] = key->w[3];
	} else {
		base->w[2] = htonl(0xffff);
		base->w[3] = key->w[3];
	}
	return true;
}

void addr_format(const struct tb_addr *a, char *buf, size_t len)
{
	struct tb_addr base;
	__u32 glen;

	if (group_base(a, &base, &glen)) {
		char host[INET6_ADDRSTRLEN];

		addr_format(&base, host, sizeof(host));
		snprintf(buf, len, "%s/%u", host, glen);
	} else if (addr_is_v4(a))
		inet_ntop(AF_INET, &a->w[3], buf, len);
	else
		inet_ntop(AF_INET6, a->w, buf, len);
}

void prefix_format_short(const struct tb_prefix *p, char *buf, size_t len)
{
	prefix_format(p, buf, len);
	if (p->family && p->len == (p->family == 4 ? 32 : 128))
		buf[strcspn(buf, "/")] = 0;
}

bool prefix_contains(const struct tb_prefix *p, const struct tb_addr *a)
{
	const __u8 *bytes;
	int full, rest;

	if (!p->family)
		return true;
	if ((p->family == 4) != addr_is_v4(a))
		return false;
	bytes = p->family == 4 ? (const __u8 *)&a->w[3] : (const __u8 *)a->w;
	full = p->len / 8;
	rest = p->len % 8;
	if (memcmp(bytes, p->addr, full))
		return false;
	return !rest || !((bytes[full] ^ p->addr[full]) & (0xff << (8 - rest)));
}
