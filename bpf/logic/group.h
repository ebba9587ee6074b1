/* SPDX-License-Identifier: GPL-2.0 */
/* The key of a per-/LEN bucket (scope per-/LEN): one bucket for every
 * /LEN of a rule's prefix, kept in the table under a group key. Pure, so
 * it runs in the datapath, in tbctl (which names and finds groups) and in
 * host unit tests alike.
 *
 * A group key is w[0] 0, w[1] TB_GROUP_V4 or TB_GROUP_V6 plus LEN (and
 * a match rule's class, match.h), then
 * the masked address: IPv4's in w[3], IPv6's first 64 bits in w[2..3].
 * No address is one: IPv4's keys are ::ffff:a.b.c.d (w[1] 0) and the
 * parser finds IPv6 addresses in ::/32 (w[0] 0) malformed. Groups of
 * another family or length differ in w[1], so two rules never share one:
 * a group of a rule only holds addresses that rule is charged for, and
 * a more specific rule's groups are at least as long as its prefix. */
#ifndef TB_GROUP_H
#define TB_GROUP_H

#include "abi/tb_abi.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define TB_GROUP_V4 0x40000000u
#define TB_GROUP_V6 0x60000000u
#define TB_GROUP_V6_MAX 64      /* w[2..3] hold 64 bits of an IPv6 group */

/* The first bits bits of a 32-bit word in network byte order, as a mask;
 * bits below 0 and above 32 mean none and all. */
static __always_inline __u32 tb_word_mask(int bits)
{
	if (bits <= 0)
		return 0;
	if (bits >= 32)
		return 0xffffffffu;
	return tb_htonl(0xffffffffu << (32 - bits));
}

/* Turn address key (of family v6 or IPv4) into the key of its /len. */
static __always_inline void tb_group_key(struct tb_addr *key, int v6, __u32 len)
{
	if (v6) {
		key->w[2] = key->w[0] & tb_word_mask(len);
		key->w[3] = key->w[1] & tb_word_mask(len - 32);
	} else {
		key->w[3] &= tb_word_mask(len);
		key->w[2] = 0;
	}
	key->w[0] = 0;
	key->w[1] = tb_htonl((v6 ? TB_GROUP_V6 : TB_GROUP_V4) | len);
}

/* Whether key is a group's, and if so its family and length. */
static __always_inline int tb_group_of(const struct tb_addr *key, int *v6, __u32 *len)
{
	__u32 w1 = tb_htonl(key->w[1]);

	/* Bits 8-23 may hold a match rule's class (match.h). */
	if (key->w[0] || ((w1 & 0xff000000u) != TB_GROUP_V4 && (w1 & 0xff000000u) != TB_GROUP_V6))
		return 0;
	*v6 = (w1 & 0xff000000u) == TB_GROUP_V6;
	*len = w1 & 0xff;
	return 1;
}

#endif
