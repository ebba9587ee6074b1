/* SPDX-License-Identifier: GPL-2.0 */
/* Where addresses go: the keyed mix that places the per-CPU caches'
 * slots (and layout 12's table), and SipHash-1-3, which places an
 * address's table set, lock stripe and owed[] slot (pure; host tests). */
#ifndef TB_HASH_H
#define TB_HASH_H

#include "abi/tb_abi.h"

/* A keyed mix of the whole address: every bit of it moves the top bits,
 * so addresses that differ in a pattern spread (folding the words by XOR
 * would put all of 2001:db8:0:N::N in one place), under a key drawn at
 * attach (tb_config.slot_seed). Not a PRF: for IPv4 the key only adds a
 * constant. It places what a collision only slows: the per-CPU caches'
 * slots (and, in layout 12's pins, the table; tb_place_hash). */
static inline __u64 tb_addr_mix(const struct tb_addr *a, __u64 key)
{
	const __u64 *k = (const __u64 *)a;
	__u64 x = (k[0] ^ key) * 0x9E3779B97F4A7C15ULL;

	return (x ^ (x >> 32) ^ k[1]) * 0xC2B2AE3D27D4EB4FULL;
}

/* The slot of an address in dropcache and denycache under seed. Where
 * two flooding addresses shared one, each drop flushed the other's counts
 * into its bucket, under the lock. Only the datapath needs it: tbctl
 * finds cached counts by address. */
static inline __u32 tb_dropcache_slot(const struct tb_addr *a, __u32 seed)
{
	return tb_addr_mix(a, seed) >> 56 & (TB_DROPCACHE_SLOTS - 1);
}

static inline __attribute__((always_inline)) __u64 tb_rotl(__u64 x, int b)
{
	return x << b | x >> (64 - b);
}

#define TB_SIPROUND(v0, v1, v2, v3)                                     \
	do {                                                            \
		v0 += v1; v1 = tb_rotl(v1, 13); v1 ^= v0;               \
		v0 = tb_rotl(v0, 32);                                   \
		v2 += v3; v3 = tb_rotl(v3, 16); v3 ^= v2;               \
		v0 += v3; v3 = tb_rotl(v3, 21); v3 ^= v0;               \
		v2 += v1; v1 = tb_rotl(v1, 17); v1 ^= v2;               \
		v2 = tb_rotl(v2, 32);                                   \
	} while (0)

/* SipHash-1-3 of an address (16 bytes, as two little-endian words) under
 * a 128-bit key: a keyed PRF, as the kernel's hsiphash on 64-bit
 * machines, so that without the key no sender can tell which addresses
 * share a set, a lock stripe or an owed[] slot. It costs more than the
 * rest of a lookup (docs/design.md), which is why the datapath keeps
 * each CPU's latest result per cache slot (placecache). */
static inline __attribute__((always_inline)) __u64 tb_siphash13(const struct tb_addr *a, const __u64 key[2])
{
	const __u64 *m = (const __u64 *)a, b = 16ULL << 56;
	__u64 v0 = key[0] ^ 0x736f6d6570736575ULL, v1 = key[1] ^ 0x646f72616e646f6dULL;
	__u64 v2 = key[0] ^ 0x6c7967656e657261ULL, v3 = key[1] ^ 0x7465646279746573ULL;

	v3 ^= m[0];
	TB_SIPROUND(v0, v1, v2, v3);
	v0 ^= m[0];
	v3 ^= m[1];
	TB_SIPROUND(v0, v1, v2, v3);
	v0 ^= m[1];
	v3 ^= b;
	TB_SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	TB_SIPROUND(v0, v1, v2, v3);
	TB_SIPROUND(v0, v1, v2, v3);
	TB_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* The 32-bit hash whose top bits pick an address's table set, lock
 * stripe and owed[] slot, placed as place says. */
static inline __attribute__((always_inline)) __u32 tb_place_hash_as(const struct tb_config *cfg, __u8 place,
								    const struct tb_addr *a)
{
	if (place == TB_PLACE_SIPHASH)
		return tb_siphash13(a, cfg->place_key) >> 32;
	return tb_addr_mix(a, (__u64)cfg->slot_seed << 32 ^ 0x243F6A8885A308D3ULL) >> 32;
}

static inline __attribute__((always_inline)) __u32 tb_place_hash(const struct tb_config *cfg,
								 const struct tb_addr *a)
{
	return tb_place_hash_as(cfg, cfg->place, a);
}

#endif
