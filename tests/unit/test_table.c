// SPDX-License-Identifier: GPL-2.0
/* table.h on sets built by hand: finding an address's way, the way a new
 * address is given, and what giving a way does to the key, the tag and
 * the credit word that lock-free readers rely on. */
#include <stdlib.h>
#include <errno.h>
#include <string.h>

/* table.h's stores through WRITE_ONCE are observed as they are made, so a
 * test sees the states between the steps of a hand-over, as a lock-free
 * reader may: the way and bucket watched, and what each store of the
 * watched way's key found. */
static struct {
	const void *set;        /* the struct tb_set watched, or NULL */
	int way;
	const void *given;      /* the bucket tb_way_give writes, or NULL (tb_way_clear) */
	int key_stores;
	int early;              /* key stores made before the bucket's step */
} watch;
static void observe(const volatile void *at);
/* A load through READ_ONCE may be followed by another CPU's stores: the
 * race armed below makes them, between the load and what comes next. */
static void after_load(const volatile void *at);
#define READ_ONCE(x)                                                    \
	({                                                              \
		typeof(x) v_ = *(const volatile typeof(x) *)&(x);       \
		after_load(&(x));                                       \
		v_;                                                     \
	})
#define WRITE_ONCE(x, v) (observe(&(x)), *(volatile typeof(x) *)&(x) = (v))
#include "logic/credit.h"
#include "logic/table.h"
#include "lib/order.h"
#include "../check.h"
#include "logic/counters.h"

/* A key store of the watched way must come after its bucket's step: the
 * bucket already as given, or its credit already taken. */
static void observe(const volatile void *at)
{
	const struct tb_set *s = watch.set;
	const char *key, *p = (const char *)at;

	if (!s)
		return;
	key = (const char *)&s->key[watch.way];
	if (p < key || p >= key + sizeof(s->key[0]))
		return;
	watch.key_stores++;
	if (watch.given ? memcmp(&s->b[watch.way], watch.given, sizeof(struct tb_bucket)) :
			  s->b[watch.way].credit != 0)
		watch.early++;
}

/* Another CPU's move, made once right after a load of *at. */
static struct {
	const volatile void *at;
	void (*move)(void);
} race;

static void after_load(const volatile void *at)
{
	void (*move)(void) = race.move;

	if (!move || at != race.at)
		return;
	race.move = NULL;
	move();
}

static void watch_way(const struct tb_set *s, int w, const struct tb_bucket *given)
{
	watch.set = s;
	watch.way = w;
	watch.given = given;
	watch.key_stores = watch.early = 0;
}

static struct tb_addr addr(__u32 n)
{
	return (struct tb_addr){ .w = { 0, 0, 0x0000ffff, n } };
}

/* Every way of s given an address 1..8 whose bucket has seen a second
 * packet and was charged at 1000 + way. */
static void fill(struct tb_set *s)
{
	memset(s, 0, sizeof(*s));
	for (int w = 0; w < TB_WAYS; w++) {
		s->key[w] = addr(w + 1);
		s->b[w].lvl.last_ns = 1000 + w;
		s->b[w].c.passed_packets = 10;
		s->b[w].rule |= TB_SEEN_AGAIN;
	}
}

static void nonzero_is_one_for_any_set_bit(void)
{
	static const __u64 v[] = { 1, 2, 0x8000000000000000ULL, ~0ULL, 0x100000000ULL };

	CHECK_EQ(tb_nonzero(0), 0, "0");
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		CHECK_EQ(tb_nonzero(v[i]), 1, "%#llx", (unsigned long long)v[i]);
	for (int ways = 1; ways <= TB_WAYS; ways++)
		for (int i = 0; i < TB_WAYS; i++)
			CHECK_EQ(tb_way_in(ways, i), i < ways, "way %d of the first %d", i, ways);
}

static void finds_each_address_in_its_way_only(void)
{
	struct tb_set s;
	struct tb_addr a;

	fill(&s);
	for (int w = 0; w < TB_WAYS; w++) {
		a = addr(w + 1);
		CHECK_EQ(tb_way_find(&s, &a, TB_WAYS), w, "address %d", w + 1);
		CHECK(tb_way_holds(&s, w, &a, tb_way_tag(&s, w)), "way %d holds it", w);
		CHECK(!tb_way_holds(&s, (w + 1) % TB_WAYS, &a, tb_way_tag(&s, (w + 1) % TB_WAYS)), "way %d does not",
		      (w + 1) % TB_WAYS);
	}
	a = addr(9);
	CHECK_EQ(tb_way_find(&s, &a, TB_WAYS), -1, "an address the set lacks");
	a = addr(8);
	CHECK_EQ(tb_way_find(&s, &a, 4), -1, "an address beyond the first 4 ways is not looked at");
	/* Half a match is none: the same low word under another prefix. */
	a = (struct tb_addr){ .w = { 0x20010db8, 0, 0x0000ffff, 3 } };
	CHECK_EQ(tb_way_find(&s, &a, TB_WAYS), -1, "another address with the same last 64 bits");
	memset(&s, 0, sizeof(s));
	a = addr(0);
	a.w[2] = 0;
	CHECK_EQ(tb_way_find(&s, &a, TB_WAYS), -1, "key 0 is a free way, never an address");
}

static void victim_is_free_then_one_packet_then_oldest(void)
{
	struct tb_set s;

	fill(&s);
	CHECK_EQ(tb_way_victim(&s, TB_WAYS), 0, "all alike: the one charged longest ago");
	s.b[0].lvl.last_ns = 5000;
	CHECK_EQ(tb_way_victim(&s, TB_WAYS), 1, "the next oldest, once way 0 was charged");
	s.b[6].rule &= ~TB_SEEN_AGAIN;
	s.b[6].lvl.last_ns = 9000;
	CHECK_EQ(tb_way_victim(&s, TB_WAYS), 6, "one packet seen: taken before older live ones");
	memset(&s.b[1].c, 0, sizeof(s.b[1].c));
	CHECK_EQ(tb_way_victim(&s, TB_WAYS), 6, "counters a reset zeroed leave a live way live");
	/* The first charge grants credit; one that spent some of it has seen
	 * more than its first packet. */
	s.b[6].credit_granted = 100;
	s.b[6].credit = 100;
	CHECK_EQ(tb_way_victim(&s, TB_WAYS), 6, "a grant untouched is still one packet");
	s.b[6].credit = (__u64)7 << TB_CREDIT_TAG_SHIFT | 1ULL << 32 | 60;
	CHECK_EQ(tb_way_victim(&s, TB_WAYS), 1, "a grant spent from is live");
	s.b[3].rule &= ~TB_SEEN_AGAIN;
	s.b[3].lvl.last_ns = 8000;
	s.b[5].rule &= ~TB_SEEN_AGAIN;
	s.b[5].lvl.last_ns = 7000;
	CHECK_EQ(tb_way_victim(&s, TB_WAYS), 5, "of one-packet ways the oldest");
	memset(&s.key[4], 0, sizeof(s.key[4]));
	CHECK_EQ(tb_way_victim(&s, TB_WAYS), 4, "a free way first of all");
	CHECK_EQ(tb_way_victim(&s, 4), 3, "only among the first ways");
	fill(&s);
	CHECK_EQ(tb_way_victim(&s, 1), 0, "one way: always it");
}

static void a_way_changes_hands_key_last(void)
{
	struct tb_set s;
	struct tb_bucket nb = { .lvl = { .tokens = 5, .last_ns = 42 }, .c = { .passed_packets = 1 } };
	struct tb_addr k = addr(77), old = addr(3);
	__u8 tag;

	fill(&s);
	s.b[2].tag = 255;
	s.b[2].credit = (__u64)255 << TB_CREDIT_TAG_SHIFT | 40;
	tag = tb_way_next_tag(&s, 2);
	CHECK_EQ(tag, 0, "the tag wraps");
	watch_way(&s, 2, NULL);
	tb_way_clear(&s, 2);
	CHECK_EQ(watch.key_stores, 2, "cleared: both words of the key stored, and seen");
	CHECK_EQ(watch.early, 0, "cleared: each key store came after the credit was taken");
	CHECK_EQ(s.b[2].credit, 0, "cleared: no credit left to spend");
	CHECK_EQ(tb_way_find(&s, &old, TB_WAYS), -1, "cleared: the old address is not found");
	CHECK(tb_way_free(&s, 2), "cleared: the way is free");
	nb.tag = tag;
	watch_way(&s, 2, &nb);
	tb_way_give(&s, 2, &k, &nb);
	watch.set = NULL;
	CHECK_EQ(watch.key_stores, 2, "given: both words of the key stored, and seen");
	CHECK_EQ(watch.early, 0, "given: each key store came after the bucket was written");
	CHECK_EQ(tb_way_find(&s, &k, TB_WAYS), 2, "given: found");
	CHECK(!memcmp(&s.b[2], &nb, sizeof(nb)), "given: the bucket as made");
	for (int w = 0; w < TB_WAYS; w++)
		if (w != 2)
			CHECK_EQ(s.b[w].c.passed_packets, 10, "way %d untouched", w);
}

/* Spend and count stay off the tag: a spend begun on a way's previous
 * address fails on the next one's word, which carries another tag. */
static void credit_keeps_its_tag(void)
{
	__u64 w = (__u64)9 << TB_CREDIT_TAG_SHIFT | 1000, next;
	struct tb_bucket b = { .cost = TB_COST_BYTES, .credit_granted = 1000, .credit_from = 1000 };
	struct tb_counters c = {};

	next = tb_credit_spend(w, 300, 1);
	CHECK_EQ(next >> TB_CREDIT_TAG_SHIFT, 9, "the tag stays");
	CHECK_EQ(next >> 32 & TB_CREDIT_COUNT_MAX, 1, "one packet counted");
	CHECK_EQ(tb_credit_unspent(next), 700, "300 spent");
	tb_credit_counted(&b, next, &c);
	CHECK_EQ(c.passed_packets, 1, "counted: 1 packet");
	CHECK_EQ(c.passed_bytes, 300, "counted: 300 B");
	w = (__u64)9 << TB_CREDIT_TAG_SHIFT | TB_CREDIT_COUNT_MAX << 32 | 700;
	CHECK_EQ(tb_credit_spend(w, 300, 1), 0, "a count the word cannot hold: the lock");
}

/* A spender that read a word and found the way still its address's,
 * then lost the way to another address granted the same credit before
 * its compare-and-swap: the swap fails on the tag, and it spends
 * nothing. */
static struct tb_set given_away;

static void give_way_1_away(void)
{
	struct tb_addr k = addr(50);
	struct tb_bucket nb = { .credit_granted = 1000 };

	tb_way_clear(&given_away, 1);
	nb.tag = tb_way_next_tag(&given_away, 1);
	nb.credit = (__u64)nb.tag << TB_CREDIT_TAG_SHIFT | 1000;
	tb_way_give(&given_away, 1, &k, &nb);
}

static void a_spend_on_a_way_given_away_fails(void)
{
	struct tb_set *s = &given_away;
	struct tb_addr mine = addr(2), theirs = addr(50);

	fill(s);
	s->b[1].tag = 4;
	s->b[1].credit = (__u64)4 << TB_CREDIT_TAG_SHIFT | 1000;
	CHECK(tb_way_holds(s, 1, &mine, 4), "way 1 is the spender's");
	/* The spender's last load before its swap is the way's tag. */
	race.at = &s->b[1].tag;
	race.move = give_way_1_away;
	CHECK(!tb_spend_credit(s, 1, &mine, 100, 1), "the spend fails");
	CHECK(!race.move, "the way changed hands between the spender's check and its swap");
	CHECK(tb_way_holds(s, 1, &theirs, s->b[1].tag), "way 1 is the other address's");
	CHECK_EQ(tb_credit_unspent(s->b[1].credit), 1000, "the other address's credit is whole");
	CHECK(tb_spend_credit(s, 1, &theirs, 100, 1), "its own spend takes it");
	CHECK_EQ(tb_credit_unspent(s->b[1].credit), 900, "100 spent");
}

/* A reader that read a way's tag and bucket while the way went from K
 * to K' and back to K finds K's key again, but not the tag it began with:
 * what it read may mix two buckets, and is refused. */
static void a_way_handed_back_is_refused(void)
{
	struct tb_set s;
	struct tb_addr k = addr(3), other = addr(30);
	struct tb_bucket nb = {};
	__u8 tag;

	fill(&s);
	tag = tb_way_tag(&s, 2);
	CHECK(tb_way_holds(&s, 2, &k, tag), "K's, before any hand-over");
	nb.tag = tb_way_next_tag(&s, 2);
	tb_way_clear(&s, 2);
	tb_way_give(&s, 2, &other, &nb);
	CHECK(!tb_way_holds(&s, 2, &k, tag), "not K's while K' holds it");
	nb.tag = tb_way_next_tag(&s, 2);
	tb_way_clear(&s, 2);
	tb_way_give(&s, 2, &k, &nb);
	CHECK(tb_key_is(&s.key[2], &k), "K's key again");
	CHECK(!tb_way_holds(&s, 2, &k, tag), "but refused: the tag moved on twice");
	CHECK(tb_way_holds(&s, 2, &k, tb_way_tag(&s, 2)), "a read begun after it holds");
}

/* attach refuses only a machine and kernel that lack what the objects
 * order the protocols above with (user/lib/order.c): plain loads and
 * stores on x86 alone, fences made of fetching atomics where the kernel
 * takes them. */
static void order_needs_x86_or_fetching_atomics(void)
{
	char why[256] = "";

	CHECK(!order_check(TB_ORDER_PLAIN, "x86_64", false, why, sizeof(why)), "plain on x86_64");
	CHECK(!order_check(TB_ORDER_PLAIN, "i686", false, why, sizeof(why)) &&
		      !order_check(TB_ORDER_PLAIN, "i386", false, why, sizeof(why)),
	      "plain on i386 to i686");
	CHECK(order_check(TB_ORDER_PLAIN, "aarch64", true, why, sizeof(why)) == -ENOTSUP &&
		      strstr(why, "built for x86") && strstr(why, "aarch64"),
	      "plain refused on aarch64, naming both: %s", why);
	CHECK(order_check(TB_ORDER_PLAIN, "i786", true, why, sizeof(why)) &&
		      order_check(TB_ORDER_PLAIN, "", true, why, sizeof(why)),
	      "plain refused on i786 and on no machine");
	CHECK(!order_check(TB_ORDER_FENCE, "aarch64", true, why, sizeof(why)), "fences on aarch64 with atomics");
	CHECK(order_check(TB_ORDER_FENCE, "aarch64", false, why, sizeof(why)) == -ENOTSUP &&
		      strstr(why, "fetching BPF atomics") && strstr(why, "5.12"),
	      "fences refused on a kernel without fetching atomics, naming why: %s", why);
	CHECK(order_check(7, "x86_64", true, why, sizeof(why)) == -ENOTSUP && strstr(why, "(7)"),
	      "an unknown form refused: %s", why);
}

TEST_LIST(
	T(nonzero_is_one_for_any_set_bit),
	T(finds_each_address_in_its_way_only),
	T(victim_is_free_then_one_packet_then_oldest),
	T(a_way_changes_hands_key_last),
	T(credit_keeps_its_tag),
	T(a_spend_on_a_way_given_away_fails),
	T(a_way_handed_back_is_refused),
	T(order_needs_x86_or_fetching_atomics),
);

int main(int argc, char **argv)
{
	return RUN("table");
}
