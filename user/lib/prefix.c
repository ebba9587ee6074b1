// SPDX-License-Identifier: GPL-2.0
/* Addresses and prefixes as an operator types them. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "logic/group.h"
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

static const struct {
	const char *name;
	__u8 proto;
} protos[] = { { "tcp", TB_PROTO_TCP }, { "udp", TB_PROTO_UDP }, { "icmp", 1 },
	       { "icmpv6", 58 }, { "sctp", TB_PROTO_SCTP } };

void proto_format(__u8 proto, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (protos[i].proto == proto) {
			snprintf(buf, len, "%s", protos[i].name);
			return;
		}
	snprintf(buf, len, "%u", proto);
}

static void range_format(const __u16 r[2], char *buf, size_t len)
{
	if (r[0] == r[1])
		snprintf(buf, len, "%u", r[0]);
	else
		snprintf(buf, len, "%u-%u", r[0], r[1]);
}

void match_format(const struct tb_match *m, char *buf, size_t len)
{
	char proto[16], d[16] = "", s[16] = "";

	if (!m->proto) {
		snprintf(buf, len, "%s", "");
		return;
	}
	proto_format(m->proto, proto, sizeof(proto));
	if (m->ports & TB_MATCH_DPORT)
		range_format(m->dport, d, sizeof(d));
	if (m->ports & TB_MATCH_SPORT)
		range_format(m->sport, s, sizeof(s));
	snprintf(buf, len, " proto %s%s%s%s%s", proto, *d ? " dport " : "", d, *s ? " sport " : "", s);
}

/* PORT or PORT-PORT, low first, each 0..65535. */
static int range_parse(const char *what, const char *v, __u16 r[2], char *err, size_t errlen)
{
	unsigned long lo, hi;
	char *end;

	errno = 0;
	lo = strtoul(v, &end, 10);
	hi = lo;
	if (end != v && *end == '-' && isdigit((unsigned char)end[1]))
		hi = strtoul(end + 1, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno) {
		snprintf(err, errlen, "invalid %s \"%s\" (PORT or PORT-PORT)", what, v);
		return -1;
	}
	if (lo > 65535 || hi > 65535) {
		snprintf(err, errlen, "%s %s: a port is 0..65535", what, v);
		return -1;
	}
	if (lo > hi) {
		snprintf(err, errlen, "%s %s: the range is reversed (low-high)", what, v);
		return -1;
	}
	r[0] = lo;
	r[1] = hi;
	return 0;
}

int match_parse(const char *proto, const char *dport, const char *sport, struct tb_prefix *p, char *err,
		size_t errlen)
{
	struct tb_match *m = &p->m;
	unsigned long n;
	char *end;

	memset(m, 0, sizeof(*m));
	if (!proto) {
		if (!dport && !sport)
			return 0;
		snprintf(err, errlen, "%s needs a protocol with ports: proto tcp, udp or sctp",
			 dport ? "dport" : "sport");
		return -1;
	}
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (!strcmp(proto, protos[i].name))
			m->proto = protos[i].proto;
	if (!m->proto) {
		errno = 0;
		n = strtoul(proto, &end, 10);
		if (!isdigit((unsigned char)*proto) || *end || errno || n < 1 || n > 255) {
			snprintf(err, errlen, "invalid proto \"%s\" (tcp, udp, icmp, icmpv6, sctp, or 1..255)", proto);
			return -1;
		}
		m->proto = n;
	}
	if ((m->proto == 1 && p->family == 6) || (m->proto == 58 && p->family == 4)) {
		snprintf(err, errlen, "proto %s never matches an IPv%d prefix: use icmp%s", proto, p->family,
			 p->family == 6 ? "v6" : "");
		return -1;
	}
	if ((dport || sport) && !TB_MATCH_PORT_PROTO(m->proto)) {
		snprintf(err, errlen, "%s with proto %s: ports exist for tcp, udp and sctp only",
			 dport ? "dport" : "sport", proto);
		return -1;
	}
	if (dport && range_parse("dport", dport, m->dport, err, errlen))
		return -1;
	if (sport && range_parse("sport", sport, m->sport, err, errlen))
		return -1;
	m->ports = (dport ? TB_MATCH_DPORT : 0) | (sport ? TB_MATCH_SPORT : 0);
	return 0;
}

void prefix_format(const struct tb_prefix *p, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	char match[64];

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
