// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/match_text.h"

struct named {
	const char *name;
	unsigned int v;
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct named protos[] = {
	{ "tcp", TB_PROTO_TCP }, { "udp", TB_PROTO_UDP }, { "icmp", TB_PROTO_ICMP },
	{ "icmpv6", TB_PROTO_ICMPV6 }, { "sctp", TB_PROTO_SCTP },
};

static const struct named tcp_flags[] = {
	{ "fin", TB_TCPF_FIN }, { "syn", TB_TCPF_SYN }, { "rst", TB_TCPF_RST }, { "psh", TB_TCPF_PSH },
	{ "ack", TB_TCPF_ACK }, { "urg", TB_TCPF_URG }, { "ece", TB_TCPF_ECE }, { "cwr", TB_TCPF_CWR },
};

/* As nft names them. */
static const struct named icmp_types[] = {
	{ "echo-reply", 0 }, { "destination-unreachable", 3 }, { "source-quench", 4 }, { "redirect", 5 },
	{ "echo-request", 8 }, { "router-advertisement", 9 }, { "router-solicitation", 10 },
	{ "time-exceeded", 11 }, { "parameter-problem", 12 }, { "timestamp-request", 13 },
	{ "timestamp-reply", 14 },
};

static const struct named icmpv6_types[] = {
	{ "destination-unreachable", 1 }, { "packet-too-big", 2 }, { "time-exceeded", 3 },
	{ "parameter-problem", 4 }, { "echo-request", 128 }, { "echo-reply", 129 },
	{ "mld-listener-query", 130 }, { "mld-listener-report", 131 }, { "mld-listener-done", 132 },
	{ "nd-router-solicit", 133 }, { "nd-router-advert", 134 }, { "nd-neighbor-solicit", 135 },
	{ "nd-neighbor-advert", 136 }, { "nd-redirect", 137 }, { "mld2-listener-report", 143 },
};

static int named_find(const struct named *t, size_t n, const char *name, unsigned int *v)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name)) {
			*v = t[i].v;
			return 0;
		}
	return -1;
}

static const char *named_name(const struct named *t, size_t n, unsigned int v)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].v == v)
			return t[i].name;
	return NULL;
}

void proto_format(__u8 proto, char *buf, size_t len)
{
	const char *name = named_name(protos, N(protos), proto);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%u", proto);
}

void tcp_flags_format(__u8 flags, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (size_t i = 0; i < N(tcp_flags); i++)
		if (flags & tcp_flags[i].v && at < len)
			at += snprintf(buf + at, len - at, "%s%s", at ? "," : "", tcp_flags[i].name);
	if (!flags)
		snprintf(buf, len, "none");
}

void icmp_type_format(__u8 proto, __u16 t, char *buf, size_t len)
{
	const char *name = proto == TB_PROTO_ICMPV6 ? named_name(icmpv6_types, N(icmpv6_types), t)
						    : named_name(icmp_types, N(icmp_types), t);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%u", t);
}

static void range_format(const __u16 r[2], char *buf, size_t len)
{
	if (r[0] == r[1])
		snprintf(buf, len, "%u", r[0]);
	else
		snprintf(buf, len, "%u-%u", r[0], r[1]);
}

/* NUM or NUM-NUM, low first, each 0..max. */
static int range_parse(const char *what, const char *v, unsigned long max, __u16 r[2], char *err, size_t errlen)
{
	unsigned long lo, hi;
	char *end;

	errno = 0;
	lo = strtoul(v, &end, 10);
	hi = lo;
	if (end != v && *end == '-' && isdigit((unsigned char)end[1]))
		hi = strtoul(end + 1, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno) {
		snprintf(err, errlen, "invalid %s \"%s\" (%s or %s-%s)", what, v, max > 255 ? "PORT" : "NUM",
			 max > 255 ? "PORT" : "NUM", max > 255 ? "PORT" : "NUM");
		return -1;
	}
	if (lo > max || hi > max) {
		snprintf(err, errlen, "%s %s: a %s is 0..%lu", what, v, max > 255 ? "port" : "type", max);
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

/* One side of flags: "none", names joined by ',', or a number. */
static int flags_side(const char *v, size_t n, __u8 *out)
{
	char word[16];
	unsigned long num;
	unsigned int f;
	size_t i = 0;
	char *end;

	*out = 0;
	if (n == 4 && !strncmp(v, "none", 4))
		return 0;
	if (n && isdigit((unsigned char)v[0])) {
		errno = 0;
		num = strtoul(v, &end, 0);
		if ((size_t)(end - v) != n || errno || num > 255)
			return -1;
		*out = num;
		return 0;
	}
	while (i < n) {
		size_t w = strcspn(v + i, ",/");

		if (w + i > n)
			w = n - i;
		if (!w || w >= sizeof(word))
			return -1;
		memcpy(word, v + i, w);
		word[w] = 0;
		if (named_find(tcp_flags, N(tcp_flags), word, &f))
			return -1;
		*out |= f;
		i += w;
		if (i < n && v[i] == ',' && ++i == n)
			return -1;
	}
	return n ? 0 : -1;
}

static int flags_parse(const char *v, struct tb_match *m, char *err, size_t errlen)
{
	const char *slash = strchr(v, '/');
	size_t n = slash ? (size_t)(slash - v) : strlen(v);

	if (flags_side(v, n, &m->flags) || (slash && flags_side(slash + 1, strlen(slash + 1), &m->flags_mask))) {
		snprintf(err, errlen, "invalid flags \"%s\" (FLAG[,FLAG...][/FLAG[,FLAG...]] of fin, syn, rst, psh, "
			 "ack, urg, ece, cwr, or none; or NUM[/NUM])", v);
		return -1;
	}
	if (!slash)
		m->flags_mask = m->flags | (m->flags & TB_TCPF_ACK ? 0 : TB_TCPF_ACK);
	if (m->flags & ~m->flags_mask) {
		snprintf(err, errlen, "flags %s: sets flags that the part after '/' leaves out", v);
		return -1;
	}
	if (!m->flags_mask) {
		snprintf(err, errlen, "flags %s: names no flag to look at", v);
		return -1;
	}
	return 0;
}

static int type_parse(const char *v, struct tb_match *m, char *err, size_t errlen)
{
	unsigned int t;
	int found = m->proto == TB_PROTO_ICMPV6 ? named_find(icmpv6_types, N(icmpv6_types), v, &t)
						: named_find(icmp_types, N(icmp_types), v, &t);

	if (!found) {
		m->dport[0] = m->dport[1] = t;
		return 0;
	}
	if (!isdigit((unsigned char)*v)) {
		snprintf(err, errlen, "unknown %s type \"%s\" (a name as nft gives it, such as echo-request, or "
			 "0..255)", m->proto == TB_PROTO_ICMPV6 ? "icmpv6" : "icmp", v);
		return -1;
	}
	return range_parse("type", v, 255, m->dport, err, errlen);
}

static int proto_parse(const char *proto, struct tb_prefix *p, char *err, size_t errlen)
{
	struct tb_match *m = &p->m;
	unsigned long n;
	unsigned int v;
	char *end;

	if (!named_find(protos, N(protos), proto, &v)) {
		m->proto = v;
	} else {
		errno = 0;
		n = strtoul(proto, &end, 10);
		if (!isdigit((unsigned char)*proto) || *end || errno || n < 1 || n > 255) {
			snprintf(err, errlen, "invalid proto \"%s\" (tcp, udp, icmp, icmpv6, sctp, or 1..255)", proto);
			return -1;
		}
		m->proto = n;
	}
	if ((m->proto == TB_PROTO_ICMP && p->family == 6) || (m->proto == TB_PROTO_ICMPV6 && p->family == 4)) {
		snprintf(err, errlen, "proto %s never matches an IPv%d prefix: use icmp%s", proto, p->family,
			 p->family == 6 ? "v6" : "");
		return -1;
	}
	return 0;
}

/* Which words the protocol takes: ports, flags (TCP), a type (ICMP). */
static int words_fit(const struct match_words *w, const struct tb_match *m, char *err, size_t errlen)
{
	if ((w->dport || w->sport) && !TB_MATCH_PORT_PROTO(m->proto)) {
		snprintf(err, errlen, "%s with proto %s: ports exist for tcp, udp and sctp only",
			 w->dport ? "dport" : "sport", w->proto);
		return -1;
	}
	if (w->flags && m->proto != TB_PROTO_TCP) {
		snprintf(err, errlen, "flags with proto %s: flags exist for tcp only", w->proto);
		return -1;
	}
	if (w->type && !TB_MATCH_TYPE_PROTO(m->proto)) {
		snprintf(err, errlen, "type with proto %s: types exist for icmp and icmpv6 only", w->proto);
		return -1;
	}
	return 0;
}

int match_parse(const struct match_words *w, struct tb_prefix *p, char *err, size_t errlen)
{
	struct tb_match *m = &p->m;

	memset(m, 0, sizeof(*m));
	if (!w->proto) {
		const char *given = w->dport ? "dport" : w->sport ? "sport" : w->flags ? "flags" : "type";

		if (!w->dport && !w->sport && !w->flags && !w->type)
			return 0;
		snprintf(err, errlen, "%s needs a protocol%s: proto %s", given,
			 w->dport || w->sport ? " with ports" : "",
			 w->dport || w->sport ? "tcp, udp or sctp" : w->flags ? "tcp" : "icmp or icmpv6");
		return -1;
	}
	if (proto_parse(w->proto, p, err, errlen) || words_fit(w, m, err, errlen))
		return -1;
	if (w->dport && range_parse("dport", w->dport, 65535, m->dport, err, errlen))
		return -1;
	if (w->sport && range_parse("sport", w->sport, 65535, m->sport, err, errlen))
		return -1;
	if (w->flags && flags_parse(w->flags, m, err, errlen))
		return -1;
	if (w->type && type_parse(w->type, m, err, errlen))
		return -1;
	m->ports = (w->dport ? TB_MATCH_DPORT : 0) | (w->sport ? TB_MATCH_SPORT : 0) |
		   (w->flags ? TB_MATCH_FLAGS : 0) | (w->type ? TB_MATCH_TYPE : 0);
	return 0;
}

void match_format(const struct tb_match *m, char *buf, size_t len)
{
	char proto[16], d[16] = "", s[16] = "", f[72] = "", fm[36], t[32] = "";

	if (!m->proto) {
		snprintf(buf, len, "%s", "");
		return;
	}
	proto_format(m->proto, proto, sizeof(proto));
	if (m->ports & TB_MATCH_DPORT)
		range_format(m->dport, d, sizeof(d));
	if (m->ports & TB_MATCH_SPORT)
		range_format(m->sport, s, sizeof(s));
	if (m->ports & TB_MATCH_FLAGS) {
		tcp_flags_format(m->flags, f, sizeof(f));
		tcp_flags_format(m->flags_mask, fm, sizeof(fm));
		strncat(f, "/", sizeof(f) - strlen(f) - 1);
		strncat(f, fm, sizeof(f) - strlen(f) - 1);
	}
	if ((m->ports & TB_MATCH_TYPE) && m->dport[0] == m->dport[1])
		icmp_type_format(m->proto, m->dport[0], t, sizeof(t));
	else if (m->ports & TB_MATCH_TYPE)
		range_format(m->dport, t, sizeof(t));
	snprintf(buf, len, " proto %s%s%s%s%s%s%s%s%s", proto, *d ? " dport " : "", d, *s ? " sport " : "", s,
		 *f ? " flags " : "", f, *t ? " type " : "", t);
}
