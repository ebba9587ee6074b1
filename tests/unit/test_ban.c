// SPDX-License-Identifier: GPL-2.0
/* Bans on a virtual clock (logic/ban.h): a ban ends exactly when it
 * should, ban-after counts refusals within a second, a shared bucket's
 * key is no address's; and the words and files bans are given in
 * (lib/banfile.h, lib/units.h). */
#include <stdio.h>
#include <string.h>
#include "logic/ban.h"
#include "lib/banfile.h"
#include "lib/units.h"
#include "../check.h"

#define MS 1000000ULL

static void a_ban_ends_to_the_millisecond(void)
{
	struct tb_autoban a = {};
	__u64 t0 = 5000 * MS;

	CHECK_EQ(tb_ban_refusal(&a, t0, 1, 1500), 1, "the first refusal bans under ban-after 1");
	CHECK_EQ(a.until_ns, t0 + 1500 * MS, "for exactly 1500 ms");
	CHECK(tb_ban_holds(a.until_ns, t0 + 1500 * MS - 1), "held 1 ns before its end");
	CHECK(!tb_ban_holds(a.until_ns, t0 + 1500 * MS), "over at its end");
	CHECK_EQ(tb_ban_refusal(&a, t0 + 10 * MS, 1, 1500), 0, "a refusal during the ban makes no other");
	CHECK_EQ(a.until_ns, t0 + 1500 * MS, "nor moves its end");
	CHECK_EQ(tb_ban_refusal(&a, t0 + 1500 * MS, 1, 1500), 1, "the first refusal after it bans again");
	CHECK_EQ(a.until_ns, t0 + 3000 * MS, "from then");
}

/* A packet every step_ms from t0 for span_ms, each refused unless a ban
 * holds (the datapath drops it first), under ban-after after: the
 * instants (ms after t0) at which refusals banned, into at[]. */
static int bans(__u16 after, __u32 ban_ms, __u64 step_ms, __u64 span_ms, __u64 *at, int max)
{
	struct tb_autoban a = {};
	__u64 t0 = 7000 * MS;
	int n = 0;

	for (__u64 t = 0; t < span_ms; t += step_ms)
		if (!tb_ban_holds(a.until_ns, t0 + t * MS) && tb_ban_refusal(&a, t0 + t * MS, after, ban_ms) && n < max)
			at[n++] = t;
	return n;
}

static void ban_after_counts_refusals_within_a_second(void)
{
	__u64 at[16];

	CHECK_EQ(bans(5, 100, 100, 1000, at, 16), 2, "5 refusals 100 ms apart, a ban of 100 ms: banned twice");
	CHECK(at[0] == 400 && at[1] == 900, "at the fifth, and at the fifth after the ban");
	CHECK_EQ(bans(5, 100, 300, 3000, at, 16), 0, "refusals 300 ms apart never make 5 within a second");
	CHECK_EQ(bans(3, 500, 100, 3000, at, 16), 4, "3 within a second, a ban of 500 ms, for 3 s");
	CHECK(at[0] == 200 && at[1] == 900 && at[2] == 1600 && at[3] == 2300,
	      "at the third refusal, and the third after each ban: %llu %llu %llu %llu", (unsigned long long)at[0],
	      (unsigned long long)at[1], (unsigned long long)at[2], (unsigned long long)at[3]);
	CHECK_EQ(bans(1, 1000, 1, 100, at, 16), 1, "ban-after 1, refused every ms: one ban");
	CHECK_EQ(bans(65535, 1000, 1, 5000, at, 16), 0, "ban-after 65535: refusals every ms never reach it");
}

static void a_second_is_counted_from_its_first_refusal(void)
{
	struct tb_autoban a = {};
	__u64 t0 = 9000 * MS;

	CHECK_EQ(tb_ban_refusal(&a, t0, 3, 1000), 0, "one");
	CHECK_EQ(tb_ban_refusal(&a, t0 + 999 * MS, 3, 1000), 0, "two, 999 ms later");
	CHECK_EQ(tb_ban_refusal(&a, t0 + 1000 * MS, 3, 1000), 0, "a third a second after the first starts over");
	CHECK_EQ(a.refusals, 1, "with one");
	CHECK_EQ(tb_ban_refusal(&a, t0 + 1100 * MS, 3, 1000), 0, "two");
	CHECK_EQ(tb_ban_refusal(&a, t0 + 1200 * MS, 3, 1000), 1, "three within its second: banned");
	CHECK_EQ(tb_ban_refusal(&a, t0 + 900 * MS, 3, 1000), 0, "a clock behind counts in the window");
}

static void what_a_ban_counts(void)
{
	CHECK(tb_refusal_bans(TB_WHY_RATE), "over the rate");
	CHECK(tb_refusal_bans(TB_WHY_TOTAL), "over the total");
	CHECK(tb_refusal_bans(TB_WHY_FLEET), "refused by the fleet");
	CHECK(!tb_refusal_bans(TB_WHY_EARLY), "not the early signal, before the bucket is empty");
	CHECK(!tb_refusal_bans(TB_WHY_BAN), "not a ban's own drop");
	CHECK(!tb_refusal_bans(TB_WHY_UNKNOWN), "not a packet whose rule is not known");
}

static void a_shared_key_is_no_address(void)
{
	struct tb_addr k, v4 = { { 0, 0, tb_htonl(0xffff), tb_htonl(0xc6120001) } };

	tb_ban_shared_key(&k, 7);
	CHECK(memcmp(&k, &v4, sizeof(k)), "not an IPv4 key");
	CHECK(!k.w[0] && (tb_htonl(k.w[1]) & 0xff000000u) != 0x40000000u &&
		      (tb_htonl(k.w[1]) & 0xff000000u) != 0x60000000u, "nor a group's");
	CHECK_EQ(tb_htonl(k.w[1]) & 0xffff, 7, "it carries the rule's shared slot");
	CHECK(tb_ban_slot(&k, 1) < (1U << TB_BANFILTER_SHIFT), "its filter slot is in range");
}

static int words(const char *prefix, const char *a, const char *b, struct banfile_entry *e, char *err)
{
	const char *w[2] = { a, b };

	return ban_words(prefix, w, !a ? 0 : !b ? 1 : 2, e, err, 200);
}

static void ban_words_say_what_is_wrong(void)
{
	struct banfile_entry e;
	char err[200];

	CHECK_EQ(words("198.18.0.5", NULL, NULL, &e, err), 0, "an address");
	CHECK(e.p.family == 4 && e.p.len == 32 && e.dur_ns == 0, "a /32, with no end");
	CHECK_EQ(words("2001:db8::/48", "90m", NULL, &e, err), 0, "a prefix for 90m");
	CHECK_EQ(e.dur_ns, 5400000ULL * MS, "90 minutes");
	CHECK_EQ(words("198.18.0.0/16", "3600", NULL, &e, err), 0, "a bare number");
	CHECK_EQ(e.dur_ns, 3600000ULL * MS, "is seconds");
	CHECK_EQ(words("198.18.0.0/16", "timeout", "0", &e, err), 0, "ipset's timeout 0");
	CHECK_EQ(e.dur_ns, 0, "is no end");
	CHECK_EQ(words("198.18.0.0/16", "timeout", "60", &e, err), 0, "ipset's timeout 60");
	CHECK_EQ(e.dur_ns, 60000ULL * MS, "is 60 s");
	CHECK_EQ(words("198.18.0.1/16", NULL, NULL, &e, err), 0, "host bits");
	CHECK(e.host_bits && e.p.addr[3] == 0, "are cleared, and said");
	CHECK_EQ(words("default", NULL, NULL, &e, err), -1, "default");
	CHECK(strstr(err, "not \"default\""), "is refused: %s", err);
	CHECK_EQ(words("198.18.0.0/16", "0", NULL, &e, err), -1, "a duration of 0");
	CHECK(strstr(err, "is zero"), "is refused: %s", err);
	CHECK_EQ(words("198.18.0.0/16", "366d", NULL, &e, err), -1, "over a year");
	CHECK(strstr(err, "too large"), "is refused: %s", err);
	CHECK_EQ(words("198.18.0.0/16", "1.0005s", NULL, &e, err), -1, "a fraction of a ms");
	CHECK_EQ(words("198.18.0.0/16", "1h", "more", &e, err), -1, "a word after");
	CHECK_EQ(words("198.18.0.0/16", "timeout", "1h", &e, err), -1, "a timeout with a unit");
}

static int read_text(const char *text, struct banfile_entry **v, size_t *n, char *err)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int rc = banfile_read(f, v, n, err, 200);

	fclose(f);
	return rc;
}

static void a_list_file_reads_whole_or_not_at_all(void)
{
	struct banfile_entry *v;
	char err[200];
	size_t n;

	CHECK_EQ(read_text("# FireHOL-style\n198.18.0.0/24\n\n  2001:db8::/32  # a comment\n198.18.1.1 2h\n"
			   "198.18.2.0/24 timeout 30\n", &v, &n, err), 0, "a list");
	if (!CHECK_EQ(n, 4, "of four"))
		return;
	CHECK(v[0].line == 2 && v[1].line == 4 && v[3].line == 6, "each with its line");
	CHECK(v[2].dur_ns == 7200000ULL * MS && v[3].dur_ns == 30000ULL * MS, "and its duration");
	free(v);
	CHECK_EQ(read_text("198.18.0.0/24\n198.18.0.0/24 1h\n", &v, &n, err), 0, "a prefix twice");
	CHECK_EQ(n, 2, "is read twice (the later wins when put)");
	free(v);
	CHECK_EQ(read_text("198.18.0.0/24\n# ok\n198.18.300.0/24\n", &v, &n, err), -1, "a bad line");
	CHECK(strstr(err, "line 3: ") && !v && !n, "named by number, and nothing read: %s", err);
	CHECK_EQ(read_text("", &v, &n, err), 0, "an empty file");
	CHECK_EQ(n, 0, "is an empty list");
}

static void durations_read_back(void)
{
	char buf[32], err[160];
	__u64 ns;

	format_duration(3600000ULL * MS, buf, sizeof(buf));
	CHECK(!strcmp(buf, "1h"), "1h: %s", buf);
	format_duration(90000ULL * MS, buf, sizeof(buf));
	CHECK(!strcmp(buf, "90s"), "90s: %s", buf);
	format_duration(1922 * MS, buf, sizeof(buf));
	CHECK(!strcmp(buf, "1.922s"), "1.922s: %s", buf);
	format_duration(250 * MS, buf, sizeof(buf));
	CHECK(!strcmp(buf, "250ms"), "250ms: %s", buf);
	format_duration(1, buf, sizeof(buf));
	CHECK(!strcmp(buf, "1ms"), "rounded up: %s", buf);
	CHECK_EQ(parse_duration("3599.943s", "d", ~0ULL, &ns, err, sizeof(err)), 0, "what save writes");
	CHECK_EQ(ns, 3599943 * MS, "reads back");
	CHECK_EQ(parse_duration("2d", "d", ~0ULL, &ns, err, sizeof(err)), 0, "days");
	CHECK_EQ(ns, 172800000ULL * MS, "two");
}

TEST_LIST(T(a_ban_ends_to_the_millisecond),
	  T(ban_after_counts_refusals_within_a_second),
	  T(a_second_is_counted_from_its_first_refusal),
	  T(what_a_ban_counts),
	  T(a_shared_key_is_no_address),
	  T(ban_words_say_what_is_wrong),
	  T(a_list_file_reads_whole_or_not_at_all),
	  T(durations_read_back));

int main(int argc, char **argv)
{
	return RUN("ban");
}
