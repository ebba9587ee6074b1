// SPDX-License-Identifier: GPL-2.0
/* group.h: the keys of per-/LEN buckets, at every length, on the host. */
#include "logic/group.h"
#include "../addrs.h"
#include "../check.h"

/* The first len bits of the n-bit big-endian value at p, the rest 0. */
static void mask_bits(__u8 *p, int n, int len)
{
	for (int i = 0; i < n / 8; i++)
		p[i] &= len >= (i + 1) * 8 ? 0xff : len <= i * 8 ? 0 : (__u8)(0xff << ((i + 1) * 8 - len));
}

static void ipv4_groups_at_every_length(void)
{
	struct tb_addr all = v4("255.255.255.255"), a = v4("198.51.100.77");

	for (__u32 len = 0; len < 32; len++) {
		struct tb_addr k = all, g = a;
		__u32 want = a.w[3], got_len = 99;
		int fam = -1;

		tb_group_key(&k, 0, len);
		tb_group_key(&g, 0, len);
		mask_bits((__u8 *)&want, 32, len);
		CHECK_EQ(ntohl(k.w[3]), len ? 0xffffffffu << (32 - len) : 0, "/%u of all ones", len);
		CHECK(g.w[3] == want && !g.w[0] && !g.w[2], "/%u of 198.51.100.77", len);
		CHECK(tb_group_of(&g, &fam, &got_len) && !fam && got_len == len, "/%u read back", len);
	}
}

static void ipv6_groups_at_every_length(void)
{
	struct tb_addr all = v6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), a = v6("2001:db8:89ab:cdef:1:2:3:4");

	for (__u32 len = 0; len <= TB_GROUP_V6_MAX; len++) {
		struct tb_addr k = all, g = a, want = a;
		__u32 got_len = 99;
		int fam = -1;

		tb_group_key(&k, 1, len);
		tb_group_key(&g, 1, len);
		mask_bits((__u8 *)want.w, 64, len);
		CHECK(__builtin_popcount(k.w[2]) + __builtin_popcount(k.w[3]) == (int)len, "/%u of all ones", len);
		CHECK(g.w[2] == want.w[0] && g.w[3] == want.w[1] && !g.w[0], "/%u of 2001:db8:89ab:cdef:1:2:3:4", len);
		CHECK(tb_group_of(&g, &fam, &got_len) && fam && got_len == len, "/%u read back", len);
	}
}

/* No address's key is a group's, and no two families' or lengths'
 * groups share one. */
static void groups_are_no_address(void)
{
	struct tb_addr a = v4("0.0.0.0"), g4, g6, b = v6("2001:db8::");
	__u32 len;
	int fam;

	CHECK(!tb_group_of(&a, &fam, &len), "IPv4 0.0.0.0 is an address");
	CHECK(!tb_group_of(&b, &fam, &len), "2001:db8:: is an address");
	g4 = v4("32.1.13.184");
	g6 = b;
	tb_group_key(&g4, 0, 24);
	tb_group_key(&g6, 1, 24);
	CHECK(memcmp(&g4, &g6, sizeof(g4)), "an IPv4 /24 and an IPv6 /24 of the same bits differ");
	g6 = v6("2001:db8::");
	b = g6;
	tb_group_key(&g6, 1, 48);
	tb_group_key(&b, 1, 56);
	CHECK(memcmp(&g6, &b, sizeof(b)), "2001:db8::/48 and 2001:db8::/56 differ");
}

TEST_LIST(
	T(ipv4_groups_at_every_length),
	T(ipv6_groups_at_every_length),
	T(groups_are_no_address),
);

int main(int argc, char **argv)
{
	return RUN("group");
}
