/* SPDX-License-Identifier: GPL-2.0 */
/* Rules with a protocol or port match: which one a packet is charged
 * under (tb_node_pick) and the key of its bucket there (tb_class_key).
 * Pure, so it runs in the datapath, in tbctl (which names the buckets)
 * and in host unit tests alike.
 * A packet's transport is one word, l4 (parse.h, tb_l4): the protocol in
 * bits 0-7, TB_L4_PORTS where its ports are known, TB_L4_UNKNOWN where
 * they exist but could not be read (a fragment whose first was not seen)
 * or, with protocol 0, where the protocol itself could not be (an IPv6
 * header chain not walked to its end), the destination port in bits
 * 16-31, the source port in bits 32-47 and TCP's flags in bits 48-55.
 * An ICMP (or ICMPv6) packet's type stands for its destination port and
 * its code for its source port. */
#ifndef TB_MATCH_H
#define TB_MATCH_H

#include "logic/group.h"
#include "logic/hash.h"

#define TB_L4_PORTS (1ULL << 8)
#define TB_L4_UNKNOWN (1ULL << 9)
#define TB_L4_FLAGS_SHIFT 48

static __always_inline __u64 tb_l4_word(__u8 proto, int ports, __u16 dport, __u16 sport)
{
	return proto | (ports ? TB_L4_PORTS | (__u64)dport << 16 | (__u64)sport << 32 : 0);
}

/* A packet of protocol proto whose ports (proto 0: whose protocol) could
 * not be read. */
static __always_inline __u64 tb_l4_unknown(__u8 proto)
{
	return proto | TB_L4_UNKNOWN;
}

/* The bits of l4 that some rule reads (enum tb_match_reads), so that the
 * per-CPU resolution cache keys on no more than that; tbctl keeps it in
 * tb_config.l4_mask. TB_L4_UNKNOWN is always read: the datapath ORs it
 * in, since configs written before it existed lack it. */
static __always_inline __u64 tb_l4_mask(__u8 reads)
{
	if (!reads)
		return 0;
	if (reads & (TB_READS_SPORT | TB_READS_FLAGS))
		return ~0ULL;
	return reads & TB_READS_DPORT ? 0xffffffffULL : 0xff | TB_L4_UNKNOWN;
}

static __always_inline int tb_port_in(const __u16 range[2], __u16 port)
{
	return port >= range[0] && port <= range[1];
}

enum tb_takes {
	TB_TAKES_NOT = 0,
	TB_TAKES = 1,
	TB_TAKES_MAYBE = 2,     /* it would, or not, by what could not be read */
};

/* Whether match m takes a packet of l4 (enum tb_takes). A packet of a
 * protocol without ports (GRE, say) has none to read: only a match
 * without ports takes it. TCP flags and ICMP types count as ports. */
static __always_inline int tb_match_takes(const struct tb_match *m, __u64 l4)
{
	if (m->proto != (__u8)l4)
		return (l4 & TB_L4_UNKNOWN) && !(__u8)l4 ? TB_TAKES_MAYBE : TB_TAKES_NOT;
	if (!m->ports)
		return TB_TAKES;
	if (l4 & TB_L4_UNKNOWN)
		return TB_TAKES_MAYBE;
	if (!(l4 & TB_L4_PORTS))
		return TB_TAKES_NOT;
	if ((m->ports & (TB_MATCH_DPORT | TB_MATCH_TYPE)) && !tb_port_in(m->dport, l4 >> 16))
		return TB_TAKES_NOT;
	if ((m->ports & TB_MATCH_FLAGS) && ((__u8)(l4 >> TB_L4_FLAGS_SHIFT) & m->flags_mask) != m->flags)
		return TB_TAKES_NOT;
	return !(m->ports & TB_MATCH_SPORT) || tb_port_in(m->sport, l4 >> 32) ? TB_TAKES : TB_TAKES_NOT;
}

/* tb_node_pick's answer where the rule depends on what could not be read. */
#define TB_PICK_UNSURE -2

/* The entry of node n a packet of *l4 is charged under, where its rule
 * without a match has prefix length plen1 - 1 (0: the default rule; -1:
 * none): the first that matches, unless its prefix is shorter (a longer
 * prefix wins, and on one prefix a match). -1: none. TB_PICK_UNSURE
 * where the first entry that may match is one that only may: the packet's
 * rule is not known, and no other entry is surely its. *l4 is read anew
 * for each entry: the ports taken apart once would take three more
 * registers across the loop, which the datapath's stack has no room to
 * spill. */
static __always_inline int tb_node_pick(const struct tb_node *n, const __u64 *l4, int plen1)
{
	for (int i = 0; i < TB_NODE_ENTRIES; i++) {
		const struct tb_node_entry *e = &n->e[i];
		int takes;

		if (i >= (int)n->n || (int)e->plen1 < plen1)
			return -1;
		takes = tb_match_takes(&e->m, *(const volatile __u64 *)l4);
		if (takes)
			return takes == TB_TAKES ? i : TB_PICK_UNSURE;
	}
	return -1;
}

/* A rule with a match charges buckets of its own: an address (or group)
 * charged under its UDP rule and its TCP rule has one bucket for each.
 * Their keys carry the rule's class, its shared[] slot + 1, which a rule
 * keeps across changes; a rule without a match has class 0, and its keys
 * are the address's (or group's) own. IPv4 and group keys have room for
 * the class in w[1] (group.h): an IPv4 key's is 0, a group key's tag
 * leaves bits 8-23. An IPv6 address's key has none: the class's keyed
 * hash (under the placement secret) is XORed into its interface ID, so
 * that no sender can pick an address whose key is another's. */
static __always_inline __u32 tb_rule_class(const struct tb_rule *r)
{
	return r->match.proto ? r->shared + 1u : 0;
}

static __always_inline void tb_class_key(struct tb_addr *key, __u32 class, const __u64 secret[2])
{
	if (!class)
		return;
	if (key->w[0]) {
		struct tb_addr c = { { 0, 0, 0, class } };
		__u64 h = tb_siphash13(&c, secret);

		key->w[2] ^= (__u32)h;
		key->w[3] ^= (__u32)(h >> 32);
	} else if (!key->w[1]) {
		key->w[1] = tb_htonl(class);
	} else {
		key->w[1] |= tb_htonl(class << 8);
	}
}

/* The key of address key's (of family v6 or IPv4) bucket under rule r:
 * its group's under a per-/LEN rule, carrying r's class. */
static __always_inline void tb_rule_key(struct tb_addr *key, const struct tb_rule *r, int v6,
					const __u64 secret[2])
{
	if (r->scope == TB_SCOPE_GROUP)
		tb_group_key(key, v6, r->group_len);
	tb_class_key(key, tb_rule_class(r), secret);
}

/* The class an IPv4 or group key carries (0: none). An IPv6 address's
 * cannot be told from its key: its bucket's rule says it. */
static __always_inline __u32 tb_key_class(const struct tb_addr *key)
{
	__u32 w1 = tb_htonl(key->w[1]);
	__u32 len;
	int v6;

	if (key->w[0])
		return 0;
	return tb_group_of(key, &v6, &len) ? w1 >> 8 & 0xffff : w1;
}

/* Undo tb_class_key: the address's (or group's) own key. */
static __always_inline void tb_class_unkey(struct tb_addr *key, __u32 class, const __u64 secret[2])
{
	__u32 len;
	int v6;

	if (key->w[0])
		tb_class_key(key, class, secret);
	else if (tb_group_of(key, &v6, &len))
		key->w[1] &= tb_htonl(0xff0000ffu);
	else
		key->w[1] = 0;
}

#endif
