// SPDX-License-Identifier: GPL-2.0
/* Where addresses are placed (tb_abi.h): SipHash-1-3 as the reference
 * computes it, and addresses chosen to share a set under the keyed mix
 * of layout 12 spread under it as random ones do. */
#include <arpa/inet.h>
#include <stdlib.h>
#include "abi/tb_abi.h"
#include "../check.h"
#include "logic/hash.h"

#define SHIFT 10        /* the smallest table: 1024 sets, one a lock stripe */

static struct tb_addr v4(__u32 host_order)
{
	struct tb_addr a = { .w = { 0, 0, htonl(0xffff), htonl(host_order) } };

	return a;
}

static __u32 set_of(const struct tb_config *cfg, const struct tb_addr *a)
{
	return tb_place_hash(cfg, a) >> (32 - SHIFT);
}

/* How many distinct sets n addresses take, and the most any one holds. */
static int spread(const struct tb_config *cfg, const struct tb_addr *a, int n, int *most)
{
	static int load[1 << SHIFT];
	int distinct = 0;

	memset(load, 0, sizeof(load));
	*most = 0;
	for (int i = 0; i < n; i++) {
		int l = ++load[set_of(cfg, &a[i])];

		distinct += l == 1;
		*most = l > *most ? l : *most;
	}
	return distinct;
}

/* The SipHash paper's test key (00..0f) and a 16-byte message (00..0f),
 * with one compression and three finalization rounds: the value of a
 * reference implementation (checked against the paper's SipHash-2-4
 * vectors), and an IPv4-mapped address. */
static void siphash13_matches_the_reference(void)
{
	const __u64 key[2] = { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL };
	struct tb_addr m, a = v4(0xc6120001);     /* 198.18.0.1 */

	for (int i = 0; i < 16; i++)
		((unsigned char *)&m)[i] = i;
	CHECK_EQ(tb_siphash13(&m, key), 0xcc4fdd1a7d908b66ULL, "00..0f under 00..0f");
	CHECK_EQ(tb_siphash13(&a, key), 0x0659e71d8d5865bcULL, "::ffff:198.18.0.1 under 00..0f");
}

/* 128 addresses of 198.18.0.0/15 that the mix of layout 12 puts in one
 * set (and so one lock stripe) under a seed, as a sender that knew the
 * seed, or its IPv4 constant, could pick them: under SipHash, with any
 * key, they take about as many sets as 128 random addresses, and no set
 * holds more of them than of those. */
static void mix_colliders_spread_under_siphash(void)
{
	const __u32 seeds[] = { 0, 1, 0x9e3779b9, 0xffffffff };
	struct tb_addr hit[128], rnd[128];

	srand(7);
	for (int i = 0; i < 128; i++)
		rnd[i] = v4(0xc6120000 | (rand() & 0x1ffff));
	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		struct tb_config mix = { .slot_seed = seeds[s], .place = TB_PLACE_MIX };
		struct tb_config sip = { .slot_seed = seeds[s], .place = TB_PLACE_SIPHASH,
					 .place_key = { 0x243f6a8885a308d3ULL * (s + 1), 0x13198a2e03707344ULL ^ s } };
		struct tb_addr first = v4(0xc6120001);
		__u32 target = set_of(&mix, &first);
		int n = 0, most, most_rnd, d, d_rnd;

		for (__u32 host = 0xc6120000; host < 0xc6140000 && n < 128; host++) {
			struct tb_addr a = v4(host);

			if (set_of(&mix, &a) == target)
				hit[n++] = a;
		}
		if (!CHECK_EQ(n, 128, "seed %#x: 128 addresses of 198.18.0.0/15 in one set under the mix", seeds[s]))
			continue;
		d = spread(&sip, hit, n, &most);
		d_rnd = spread(&sip, rnd, n, &most_rnd);
		printf("     seed %#x: the mix's 128 colliders take %d sets under SipHash (at most %d in one), "
		       "128 random addresses %d (%d)\n", seeds[s], d, most, d_rnd, most_rnd);
		CHECK(d >= 110 && d_rnd >= 110, "seed %#x: under SipHash they take %d sets, random ones %d "
		      "(128 at random into 1024: about 120)", seeds[s], d, d_rnd);
		CHECK(most <= 4 && most_rnd <= 4, "seed %#x: at most %d of them in one set, %d of random ones",
		      seeds[s], most, most_rnd);
	}
}

/* The placement the config names: layout 12's mix, which an upgrade
 * takes over from and so must find again (the values are what layout
 * 12's tb_stripe_hash gave under seed 5), or SipHash's top half under
 * the config's key (the reference's value above). */
static void placement_follows_the_config(void)
{
	const struct tb_addr a = v4(0xc6120001), b = v4(0xc6120002);
	struct tb_config mix = { .slot_seed = 5, .place = TB_PLACE_MIX };
	struct tb_config sip = { .slot_seed = 5, .place = TB_PLACE_SIPHASH,
				 .place_key = { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL } };

	CHECK_EQ(tb_place_hash(&mix, &a), 0xcbf47b97, "TB_PLACE_MIX: 198.18.0.1 where layout 12 put it");
	CHECK_EQ(tb_place_hash(&mix, &b), 0x1af47b97, "TB_PLACE_MIX: 198.18.0.2 where layout 12 put it");
	CHECK_EQ(tb_place_hash(&sip, &a), 0x0659e71d, "TB_PLACE_SIPHASH: the reference's top half");
	sip.slot_seed = 6;
	CHECK_EQ(tb_place_hash(&sip, &a), 0x0659e71d, "TB_PLACE_SIPHASH: the caches' seed plays no part");
	sip.place_key[1] ^= 1;
	CHECK(tb_place_hash(&sip, &a) != 0x0659e71d, "TB_PLACE_SIPHASH: another key, another place");
}

TEST_LIST(
	T(siphash13_matches_the_reference),
	T(mix_colliders_spread_under_siphash),
	T(placement_follows_the_config),
);

int main(int argc, char **argv)
{
	return RUN("place");
}
