/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TB_PREFIX_H
#define TB_PREFIX_H

#include <stdbool.h>
#include <linux/types.h>
#include "abi/tb_abi.h"

/* What names a rule: an IPv4 or IPv6 prefix, or family 0 for "default",
 * and the protocol and ports it matches (all zero: any). */
struct tb_prefix {
	__u8 family;
	__u8 len;
	__u8 addr[16];
	struct tb_match m;
};

/* Room for any prefix_format text. */
#define PREFIX_TEXT_MAX 208

enum prefix_status {
	PREFIX_OK,
	PREFIX_HOST_BITS,   /* parsed, host bits were set and have been cleared */
	PREFIX_BAD,
};

/* "default", "A.B.C.D[/N]" or "X:X::X[/N]"; a bare address is a /32 or /128. */
int prefix_parse(const char *s, struct tb_prefix *p, char *err, size_t errlen);
/* A single address (no length), for show addr. */
int addr_parse(const char *s, struct tb_addr *a);
bool prefix_equal(const struct tb_prefix *a, const struct tb_prefix *b);
/* An address alone where the prefix is one (a /32 or /128). */
void prefix_format_short(const struct tb_prefix *p, char *buf, size_t len);
/* The prefix, then its match as rule set takes it ("proto udp dport 53"). */
void prefix_format(const struct tb_prefix *p, char *buf, size_t len);
/* Whether a is an IPv4 address (::ffff:a.b.c.d). */
bool addr_is_v4(const struct tb_addr *a);
/* An address, or a per-/LEN group's key as its prefix (group.h). */
void addr_format(const struct tb_addr *a, char *buf, size_t len);
/* Whether key is a group's; if so, its first address and its length. */
bool group_base(const struct tb_addr *key, struct tb_addr *base, __u32 *len);
/* Whether address a lies in prefix p (default holds everything). */
bool prefix_contains(const struct tb_prefix *p, const struct tb_addr *a);

#endif
