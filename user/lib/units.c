// SPDX-License-Identifier: GPL-2.0
/* tc-compatible rate and size units. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "abi/tb_abi.h"
#include "lib/units.h"

struct scale {
	const char *name;
	long double mult;   /* to the base unit (bytes/s, bytes, packets/s, packets) */
};

/* As tc's get_rate64(): suffix times bits, then /8. */
static const struct scale byte_rates[] = {
	{ "", 1.0L / 8 }, { "bit", 1.0L / 8 },
	{ "kbit", 1e3L / 8 }, { "kibit", 1024.0L / 8 },
	{ "mbit", 1e6L / 8 }, { "mibit", 1048576.0L / 8 },
	{ "gbit", 1e9L / 8 }, { "gibit", 1073741824.0L / 8 },
	{ "tbit", 1e12L / 8 }, { "tibit", 1099511627776.0L / 8 },
	{ "bps", 1 }, { "kbps", 1e3L }, { "kibps", 1024.0L },
	{ "mbps", 1e6L }, { "mibps", 1048576.0L },
	{ "gbps", 1e9L }, { "gibps", 1073741824.0L },
	{ "tbps", 1e12L }, { "tibps", 1099511627776.0L },
	{ 0, 0 },
};

/* As tc's get_size(). */
static const struct scale byte_sizes[] = {
	{ "", 1 }, { "b", 1 },
	{ "k", 1024.0L }, { "kb", 1024.0L }, { "kbit", 1024.0L / 8 },
	{ "m", 1048576.0L }, { "mb", 1048576.0L }, { "mbit", 1048576.0L / 8 },
	{ "g", 1073741824.0L }, { "gb", 1073741824.0L }, { "gbit", 1073741824.0L / 8 },
	{ 0, 0 },
};

static const struct scale packet_rates[] = {
	{ "", 1 }, { "pps", 1 }, { "kpps", 1e3L }, { "mpps", 1e6L }, { "gpps", 1e9L },
	{ 0, 0 },
};

static const struct scale packet_sizes[] = {
	{ "", 1 }, { "pkt", 1 }, { "pkts", 1 }, { "packets", 1 },
	{ 0, 0 },
};

/* As tc's get_time64(): a bare number is microseconds. To nanoseconds. */
static const struct scale times[] = {
	{ "", 1e3L },
	{ "s", 1e9L }, { "sec", 1e9L }, { "secs", 1e9L },
	{ "ms", 1e6L }, { "msec", 1e6L }, { "msecs", 1e6L },
	{ "us", 1e3L }, { "usec", 1e3L }, { "usecs", 1e3L },
	{ "ns", 1 }, { "nsec", 1 }, { "nsecs", 1 },
	{ 0, 0 },
};

/* Ban durations: as long as bans are, in ms at the finest; a bare number
 * is seconds, as ipset's timeout and fail2ban's bantime are. */
static const struct scale durations[] = {
	{ "", 1e9L }, { "s", 1e9L }, { "ms", 1e6L }, { "m", 60e9L }, { "min", 60e9L },
	{ "h", 3600e9L }, { "d", 86400e9L },
	{ 0, 0 },
};

static int parse_scaled(const char *s, const struct scale *table, const char *what,
			__u64 max, __u64 *out, char *err, size_t errlen)
{
	const char *p = s;
	long double v;
	char *end;
	int digits = 0;

	/* Plain decimal only: strtold alone would take "inf", "0x10", "-1". */
	while (isdigit((unsigned char)*p))
		p++, digits++;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			digits++;
	if (!digits) {
		snprintf(err, errlen, "invalid %s \"%s\": expected a number", what, s);
		return -1;
	}
	v = strtold(s, &end);
	if (end != p) {
		snprintf(err, errlen, "invalid %s \"%s\"", what, s);
		return -1;
	}
	for (const struct scale *sc = table; sc->name; sc++) {
		if (strcasecmp(p, sc->name))
			continue;
		v *= sc->mult;
		if (v > (long double)max) {
			snprintf(err, errlen, "%s \"%s\" is too large", what, s);
			return -1;
		}
		*out = (__u64)v;
		if (!*out) {
			snprintf(err, errlen, "%s \"%s\" is zero or below one unit", what, s);
			return -1;
		}
		return 0;
	}
	snprintf(err, errlen, "invalid %s \"%s\": unknown unit \"%s\"", what, s, p);
	return -1;
}

int parse_rate(const char *s, int packets, __u64 *per_sec, char *err, size_t errlen)
{
	return parse_scaled(s, packets ? packet_rates : byte_rates, "rate", TB_RATE_MAX,
			    per_sec, err, errlen);
}

int parse_size(const char *s, int packets, __u64 *units, char *err, size_t errlen)
{
	return parse_scaled(s, packets ? packet_sizes : byte_sizes, "burst", TB_BURST_MAX,
			    units, err, errlen);
}

int parse_time(const char *s, const char *what, __u64 max_ns, __u64 *ns, char *err, size_t errlen)
{
	return parse_scaled(s, times, what, max_ns, ns, err, errlen);
}

int parse_duration(const char *s, const char *what, __u64 max_ns, __u64 *ns, char *err, size_t errlen)
{
	if (parse_scaled(s, durations, what, max_ns, ns, err, errlen))
		return -1;
	if (*ns % 1000000) {
		snprintf(err, errlen, "%s \"%s\": a whole number of milliseconds", what, s);
		return -1;
	}
	return 0;
}

void format_duration(__u64 ns, char *buf, size_t len)
{
	static const struct { const char *unit; __u64 ns; } units[] = {
		{ "d", 86400000000000ULL }, { "h", 3600000000000ULL }, { "m", 60000000000ULL },
		{ "s", 1000000000ULL },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ns >= units[i].ns && ns % units[i].ns == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].unit);
			return;
		}
	ns = (ns + 999999) / 1000000;
	if (ns >= 1000)
		snprintf(buf, len, "%llu.%03llus", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
	else
		snprintf(buf, len, "%llums", (unsigned long long)ns);
}

void format_time(__u64 ns, char *buf, size_t len)
{
	/* tc's print_time(): the largest unit that keeps it exact. */
	if (ns >= 1000000000 && ns % 1000000000 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ns / 1000000000));
	else if (ns >= 1000000 && ns % 1000000 == 0)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000));
	else if (ns >= 1000 && ns % 1000 == 0)
		snprintf(buf, len, "%lluus", (unsigned long long)(ns / 1000));
	else
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

void format_rate(__u64 per_sec, int packets, char *buf, size_t len)
{
	static const char *const prefix[] = { "", "K", "M", "G", "T" };
	__u64 v = packets ? per_sec : per_sec * 8;
	int i;

	/* tc's print_rate(): step up while the value stays exact or large. */
	for (i = 0; i < 4; i++) {
		if (v < 1000 || (v % 1000 && v < 1000 * 1000))
			break;
		v /= 1000;
	}
	if (packets)
		snprintf(buf, len, "%llu%spps", (unsigned long long)v, i ? prefix[i] : "");
	else
		snprintf(buf, len, "%llu%sbit", (unsigned long long)v, prefix[i]);
}

void format_size(__u64 units, int packets, char *buf, size_t len)
{
	if (packets)
		snprintf(buf, len, "%llupkt", (unsigned long long)units);
	else if (units >= 1048576 && units % 1048576 == 0)
		snprintf(buf, len, "%lluMb", (unsigned long long)(units / 1048576));
	else if (units >= 1024 && units % 1024 == 0)
		snprintf(buf, len, "%lluKb", (unsigned long long)(units / 1024));
	else
		snprintf(buf, len, "%llub", (unsigned long long)units);
}
