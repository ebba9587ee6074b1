// SPDX-License-Identifier: GPL-2.0
/* units.c against tc's meaning of every suffix, and prefix.c's parsing. */
#include "lib/units.h"
#include "lib/dscp_text.h"
#include "lib/match_text.h"
#include "lib/prefix.h"
#include "../check.h"

typedef int (*parser)(const char *, int, __u64 *, char *, size_t);

static __u64 parsed(parser fn, const char *s, int packets)
{
	char err[128];
	__u64 v = 0;

	CHECK(!fn(s, packets, &v, err, sizeof(err)), "%s: %s", s, err);
	return v;
}

static __u64 rate(const char *s, int packets)
{
	return parsed(parse_rate, s, packets);
}

static __u64 size(const char *s)
{
	return parsed(parse_size, s, 0);
}

static void rates_follow_tc(void)
{
	CHECK_EQ(rate("8", 0), 1, "bare number is bit/s");
	CHECK_EQ(rate("800bit", 0), 100, "bit");
	CHECK_EQ(rate("1kbit", 0), 125, "kbit = 1000 bit/s");
	CHECK_EQ(rate("1kibit", 0), 128, "kibit = 1024 bit/s");
	CHECK_EQ(rate("10mbit", 0), 1250000, "mbit");
	CHECK_EQ(rate("10Mbit", 0), 1250000, "case-insensitive");
	CHECK_EQ(rate("1mibit", 0), 131072, "mibit");
	CHECK_EQ(rate("1gbit", 0), 125000000, "gbit");
	CHECK_EQ(rate("400gbit", 0), 50000000000ULL, "400 Gbit/s");
	CHECK_EQ(rate("1tbit", 0), 125000000000ULL, "tbit");
	CHECK_EQ(rate("1.5mbit", 0), 187500, "decimal");
	CHECK_EQ(rate("100bps", 0), 100, "bps is BYTES/s, as tc");
	CHECK_EQ(rate("1kbps", 0), 1000, "kbps = 1000 bytes/s");
	CHECK_EQ(rate("1kibps", 0), 1024, "kibps");
	CHECK_EQ(rate("2mbps", 0), 2000000, "mbps");
	CHECK_EQ(rate("1gbps", 0), 1000000000, "gbps");
	CHECK_EQ(rate("100", 1), 100, "packet mode: bare is pps");
	CHECK_EQ(rate("5kpps", 1), 5000, "kpps");
	CHECK_EQ(rate("2mpps", 1), 2000000, "mpps");
}

static void sizes_follow_tc(void)
{
	CHECK_EQ(size("1500"), 1500, "bare bytes");
	CHECK_EQ(size("1500b"), 1500, "b");
	CHECK_EQ(size("64k"), 65536, "k = 1024");
	CHECK_EQ(size("64kb"), 65536, "kb");
	CHECK_EQ(size("1m"), 1048576, "m");
	CHECK_EQ(size("1mb"), 1048576, "mb");
	CHECK_EQ(size("1g"), 1073741824, "g");
	CHECK_EQ(size("8kbit"), 1024, "kbit = 1024/8 bytes");
	CHECK_EQ(size("8mbit"), 1048576, "mbit");
}

static void bad_values_rejected(void)
{
	static const char *const bad[] = {
		"", "-1mbit", "0", "0kbit", "10mbitx", "10 mbit", "mbit", "1e6", "0x10",
		"inf", "nan", "1..5mbit", "7bit", "99999999999999tbit", "+5mbit",
	};
	char err[128];
	__u64 v;

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK(parse_rate(bad[i], 0, &v, err, sizeof(err)) < 0, "rate \"%s\" accepted", bad[i]);
		CHECK(err[0], "rate \"%s\": no message", bad[i]);
	}
	CHECK(parse_size("17g", 0, &v, err, sizeof(err)) < 0, "a burst over 16 GiB");
	CHECK(parse_size("5kpps", 1, &v, err, sizeof(err)) < 0, "a rate unit as a burst");
	CHECK(parse_rate("5mbit", 1, &v, err, sizeof(err)) < 0, "a bit rate in packet mode");
}

static void formats_like_tc(void)
{
	static const struct { __u64 v; int pk; int sz; const char *want; } cases[] = {
		{ 1250000, 0, 0, "10Mbit" }, { 125, 0, 0, "1Kbit" }, { 100, 0, 0, "800bit" },
		{ 187500, 0, 0, "1500Kbit" }, { 50000000000ULL, 0, 0, "400Gbit" },
		{ 5000, 1, 0, "5Kpps" }, { 65536, 0, 1, "64Kb" }, { 1048576, 0, 1, "1Mb" },
		{ 1500, 0, 1, "1500b" }, { 16, 1, 1, "16pkt" },
	};
	char buf[64];

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].sz)
			format_size(cases[i].v, cases[i].pk, buf, sizeof(buf));
		else
			format_rate(cases[i].v, cases[i].pk, buf, sizeof(buf));
		CHECK(!strcmp(buf, cases[i].want), "%llu: expected %s, saw %s",
		      (unsigned long long)cases[i].v, cases[i].want, buf);
	}
}

static void prefixes(void)
{
	struct tb_prefix p;
	struct tb_addr a;
	char err[128], buf[64];

	CHECK_EQ(prefix_parse("198.18.0.0/15", &p, err, sizeof(err)), PREFIX_OK, "IPv4 prefix");
	CHECK(p.family == 4 && p.len == 15, "family 4, /15");
	CHECK_EQ(prefix_parse("198.18.1.1/15", &p, err, sizeof(err)), PREFIX_HOST_BITS, "host bits");
	prefix_format(&p, buf, sizeof(buf));
	CHECK(!strcmp(buf, "198.18.0.0/15"), "normalised to %s", buf);
	CHECK_EQ(prefix_parse("198.18.0.0/33", &p, err, sizeof(err)), PREFIX_BAD, "/33");
	CHECK_EQ(prefix_parse("198.18.0.0/", &p, err, sizeof(err)), PREFIX_BAD, "empty length");
	CHECK_EQ(prefix_parse("198.18.0.0/1x", &p, err, sizeof(err)), PREFIX_BAD, "junk length");
	CHECK_EQ(prefix_parse("198.18.0/24", &p, err, sizeof(err)), PREFIX_BAD, "short address");
	CHECK_EQ(prefix_parse("2001:db8::/32", &p, err, sizeof(err)), PREFIX_OK, "IPv6 prefix");
	CHECK_EQ(prefix_parse("2001:db8::/129", &p, err, sizeof(err)), PREFIX_BAD, "/129");
	CHECK_EQ(prefix_parse("2001:db8::1", &p, err, sizeof(err)), PREFIX_OK, "bare IPv6");
	CHECK_EQ(p.len, 128, "bare IPv6 is /128");
	prefix_parse("198.18.4.0/22", &p, err, sizeof(err));
	addr_parse("198.18.7.255", &a);
	CHECK(prefix_contains(&p, &a), "198.18.7.255 in 198.18.4.0/22");
	addr_parse("198.18.8.0", &a);
	CHECK(!prefix_contains(&p, &a), "198.18.8.0 not in 198.18.4.0/22");
	addr_parse("2001:db8::1", &a);
	CHECK(!prefix_contains(&p, &a), "IPv6 address not in an IPv4 prefix");
}

/* A match's words parsed, and written back as what parses to it again. */
static struct tb_match words(const char *prefix, struct match_words w, const char *want)
{
	char err[200], buf[160];
	struct tb_prefix p, again;

	CHECK_EQ(prefix_parse(prefix, &p, err, sizeof(err)), PREFIX_OK, "%s", prefix);
	CHECK(!match_parse(&w, &p, err, sizeof(err)), "%s: %s", want, err);
	match_format(&p.m, buf, sizeof(buf));
	CHECK(!strcmp(buf, want), "written as \"%s\", want \"%s\"", buf, want);
	again = p;
	CHECK(!match_parse(&(struct match_words){ .proto = w.proto, .dport = w.dport, .sport = w.sport,
						  .flags = w.flags, .type = w.type }, &again, err, sizeof(err)) &&
		      !memcmp(&again.m, &p.m, sizeof(p.m)), "%s parses again the same", want);
	return p.m;
}

static int refused(const char *prefix, struct match_words w, const char *say)
{
	char err[200] = "";
	struct tb_prefix p;

	prefix_parse(prefix, &p, err, sizeof(err));
	CHECK(match_parse(&w, &p, err, sizeof(err)) < 0, "refused: %s", say);
	return CHECK(strstr(err, say) != NULL, "\"%s\" says \"%s\"", err, say);
}

static void tcp_flags_and_icmp_types_as_words(void)
{
	struct tb_match m;

	m = words("198.18.0.0/15", (struct match_words){ .proto = "tcp", .flags = "syn" },
		  " proto tcp flags syn/syn,ack");
	CHECK(m.flags == TB_TCPF_SYN && m.flags_mask == (TB_TCPF_SYN | TB_TCPF_ACK) && m.ports == TB_MATCH_FLAGS,
	      "flags syn: SYN set, ACK clear");
	m = words("198.18.0.0/15", (struct match_words){ .proto = "tcp", .flags = "0x02/0x12" },
		  " proto tcp flags syn/syn,ack");
	m = words("198.18.0.0/15", (struct match_words){ .proto = "tcp", .flags = "syn,ack" },
		  " proto tcp flags syn,ack/syn,ack");
	m = words("default", (struct match_words){ .proto = "tcp", .dport = "443", .flags = "none/rst" },
		  " proto tcp dport 443 flags none/rst");
	CHECK(m.ports == (TB_MATCH_DPORT | TB_MATCH_FLAGS) && !m.flags && m.flags_mask == TB_TCPF_RST,
	      "with a port: RST clear");
	m = words("198.18.0.0/15", (struct match_words){ .proto = "icmp", .type = "echo-request" },
		  " proto icmp type echo-request");
	CHECK(m.ports == TB_MATCH_TYPE && m.dport[0] == 8 && m.dport[1] == 8, "type 8");
	m = words("2001:db8::/32", (struct match_words){ .proto = "icmpv6", .type = "echo-request" },
		  " proto icmpv6 type echo-request");
	CHECK(m.dport[0] == 128, "ICMPv6's echo request is 128");
	words("default", (struct match_words){ .proto = "icmp", .type = "3-5" }, " proto icmp type 3-5");
	words("default", (struct match_words){ .proto = "icmp", .type = "42" }, " proto icmp type 42");
	refused("default", (struct match_words){ .proto = "tcp", .flags = "syn/ack" }, "sets flags that");
	refused("default", (struct match_words){ .proto = "tcp", .flags = "syn,bogus" }, "invalid flags");
	refused("default", (struct match_words){ .proto = "tcp", .flags = "syn," }, "invalid flags");
	refused("default", (struct match_words){ .proto = "tcp", .flags = "" }, "invalid flags");
	refused("default", (struct match_words){ .proto = "tcp", .flags = "0x100" }, "invalid flags");
	refused("default", (struct match_words){ .proto = "tcp", .flags = "none/none" }, "names no flag");
	refused("default", (struct match_words){ .proto = "udp", .flags = "syn" }, "flags exist for tcp only");
	refused("default", (struct match_words){ .flags = "syn" }, "needs a protocol: proto tcp");
	refused("default", (struct match_words){ .proto = "icmp", .type = "echo" }, "unknown icmp type");
	refused("default", (struct match_words){ .proto = "icmp", .type = "256" }, "a type is 0..255");
	refused("default", (struct match_words){ .proto = "tcp", .type = "8" }, "types exist for icmp and icmpv6");
	refused("default", (struct match_words){ .proto = "icmp", .dport = "8" }, "ports exist for tcp");
}

/* nft's DSCP names and numbers; a number with a name reads back as it. */
static void dscp_words(void)
{
	static const struct {
		const char *word, *back;
		int dscp;
	} ok[] = { { "af11", "af11", 10 }, { "AF43", "af43", 38 }, { "ef", "ef", 46 }, { "cs0", "cs0", 0 },
		   { "df", "cs0", 0 }, { "le", "le", 1 }, { "va", "va", 44 }, { "cs7", "cs7", 56 },
		   { "46", "ef", 46 }, { "63", "63", 63 }, { "0x2e", "ef", 46 }, { "010", "af11", 10 } };
	char err[160], buf[16];
	__u8 d;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (!CHECK(!dscp_parse(ok[i].word, &d, err, sizeof(err)), "%s: %s", ok[i].word, err))
			continue;
		CHECK_EQ(d, ok[i].dscp, "%s", ok[i].word);
		dscp_format(d, buf, sizeof(buf));
		CHECK(!strcmp(buf, ok[i].back), "%s reads back as %s, not %s", ok[i].word, ok[i].back, buf);
	}
	for (const char *const *w = (const char *const[]){ "64", "af14", "", "-1", "ef1", "1x", NULL }; *w; w++)
		CHECK(dscp_parse(*w, &d, err, sizeof(err)) && strstr(err, "invalid DSCP"), "\"%s\" refused", *w);
}

TEST_LIST(
	T(rates_follow_tc),
	T(sizes_follow_tc),
	T(bad_values_rejected),
	T(formats_like_tc),
	T(prefixes),
	T(tcp_flags_and_icmp_types_as_words),
	T(dscp_words),
);

int main(int argc, char **argv)
{
	return RUN("units");
}
