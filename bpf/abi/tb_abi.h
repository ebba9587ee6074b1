/* SPDX-License-Identifier: GPL-2.0 */
/* The one definition of everything the datapath and tbctl share: map
 * layouts, value structures, limits and enum values. Compiles for the BPF
 * target and for the host. */
#ifndef TB_ABI_H
#define TB_ABI_H

#include <linux/types.h>
#include <linux/bpf.h>

/* Network byte order, for the BPF target and the host alike. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define tb_htons(x) ((__u16)__builtin_bswap16(x))
#define tb_htonl(x) ((__u32)__builtin_bswap32(x))
#else
#define tb_htons(x) ((__u16)(x))
#define tb_htonl(x) ((__u32)(x))
#endif

/* Bucket levels are kept in nano-units (1e-9 byte, or 1e-9 packet): a rate
 * of R units/s then refills exactly R nano-units per nanosecond, so the
 * refill is one integer multiplication with no rounding at all. */
#define TB_NANO 1000000000ULL

/* Limits chosen so that burst * TB_NANO + rate never overflows a u64. */
#define TB_RATE_MAX 1000000000000ULL   /* units/s: 8 Tbit/s in byte mode */
#define TB_BURST_MAX (1ULL << 34)      /* units: 16 GiB in byte mode */
#define TB_BURST_MIN_BYTES 1500ULL     /* below one Ethernet MTU nothing fits */

#define TB_MAX_RULES 16384             /* rules[] slots, and shared[] buckets (14 bits) */
#define TB_LOCK_STRIPES 1024           /* power of two */
#define TB_DEFAULT_MAX_ADDRS 65536

enum tb_cost {
	TB_COST_BYTES = 0,
	TB_COST_PACKETS = 1,
};

enum tb_action {
	TB_ACTION_DROP = 0,     /* early drop as the bucket drains, tail drop when empty */
	TB_ACTION_MONITOR = 1,  /* count what would be dropped, pass everything */
	TB_ACTION_MARK = 2,     /* as drop, but ECN-capable packets get CE instead of an early drop
				 * in the upper half of the early range */
	TB_ACTION_SHAPE = 3,    /* tc-egress: delay (skb->tstamp, for fq) instead of dropping */
	TB_ACTION_PASS = 4,     /* pass uncharged: no bucket, no rate (an allow-list) */
	TB_ACTION_REMARK = 5,   /* as monitor, but packets over the limit pass with tb_rule.dscp set */
};

enum tb_scope {
	TB_SCOPE_PER_ADDRESS = 0,
	TB_SCOPE_SHARED = 1,
	TB_SCOPE_GROUP = 2,     /* per-/LEN: a bucket for each /group_len (group.h) */
};

enum tb_key {
	TB_KEY_SRC = 0,
	TB_KEY_DST = 1,
};

enum tb_mode {
	TB_MODE_XDP = 0,
	TB_MODE_XDPGENERIC = 1,
	TB_MODE_TC_INGRESS = 2,
	TB_MODE_TC_EGRESS = 3,
};

/* A rate as the datapath uses it: everything precomputed by tbctl so the
 * per-packet path needs no division. */
struct tb_rate {
	__u64 rate;     /* units per second == nano-units per ns */
	__u64 cap;      /* burst in nano-units */
	__u64 fill_ns;  /* ceil(cap / rate): an idle gap this long fills the bucket */
	/* The early congestion signal: below this level (nano-units; 0: none)
	 * a packet is signalled with a probability that rises linearly to
	 * its maximum (charge.h) as the level falls to zero. early >> early_shift fits
	 * 32 bits, so the draw needs no division (bucket.h, tb_early). */
	__u64 early;
	__u8 early_shift;
	/* floor(tokens / rate) from below without a division (bucket.h,
	 * tb_origin): ((min(tokens, cap) >> owed_pre) * owed_mul) >> owed_post
	 * << owed_left. */
	__u8 owed_pre;
	__u8 owed_post;
	__u8 owed_left;
	__u32 owed_mul;
};


/* A rule's protocol and port match; all zero for a rule that matches
 * addresses only. The ports exist for TB_MATCH_PORT_PROTO protocols. */
struct tb_match {
	__u8 proto;         /* IP protocol (IPv6: past extension headers); 0: any */
	__u8 ports;         /* TB_MATCH_*: which of the fields below apply */
	/* [low, high], host order; under TB_MATCH_TYPE, ICMP (or ICMPv6)
	 * types, which a packet carries where a port would be (match.h) */
	__u16 dport[2];
	__u16 sport[2];
	/* TB_MATCH_FLAGS: the TCP flags of flags_mask a segment must have
	 * set as in flags (TB_TCPF_*). In what was padding before them: a
	 * build before them reads a rule with them as one without. */
	__u8 flags;
	__u8 flags_mask;
};

/* IPv6 extension headers the datapath walks to the transport header: a
 * chain of more leaves the protocol unknown, and such a packet is charged
 * only where no rule with a match could take it (parse.h, tb_l4). */
#define TB_EXT_MAX 16

#define TB_MATCH_DPORT 1
#define TB_MATCH_SPORT 2
#define TB_MATCH_FLAGS 4        /* TCP flags */
#define TB_MATCH_TYPE 8         /* ICMP types, in dport */
#define TB_PROTO_ICMP 1
#define TB_PROTO_TCP 6
#define TB_PROTO_UDP 17
#define TB_PROTO_ICMPV6 58
#define TB_PROTO_SCTP 132
#define TB_MATCH_PORT_PROTO(p) ((p) == TB_PROTO_TCP || (p) == TB_PROTO_UDP || (p) == TB_PROTO_SCTP)
#define TB_MATCH_TYPE_PROTO(p) ((p) == TB_PROTO_ICMP || (p) == TB_PROTO_ICMPV6)
/* The TCP header's flags byte (RFC 9293, and RFC 3168's ECE and CWR). */
#define TB_TCPF_FIN 0x01
#define TB_TCPF_SYN 0x02
#define TB_TCPF_RST 0x04
#define TB_TCPF_PSH 0x08
#define TB_TCPF_ACK 0x10
#define TB_TCPF_URG 0x20
#define TB_TCPF_ECE 0x40
#define TB_TCPF_CWR 0x80

/* rules[] value. A published rule is never written again: a change goes
 * to a fresh slot, which the prefix (or tb_config.default_rule) is then
 * pointed at, and the old slot is retired by clearing in_use alone. So the
 * datapath never reads a rule half-written. */
struct tb_rule {
	struct tb_rate r;
	__u64 burst;        /* units, as configured */
	__u8 in_use;
	__u8 cost;          /* enum tb_cost */
	__u8 action;        /* enum tb_action */
	__u8 scope;         /* enum tb_scope */
	__u8 family;        /* 4 or 6; 0 for the default rule */
	__u8 prefixlen;
	__u16 shared;       /* shared[] slot, kept by the prefix across changes */
	__u8 addr[16];      /* network address, 4 or 16 bytes used */
	__u64 horizon_ns;   /* action shape: the longest delay; later departures drop */
	__u8 group_len;     /* scope per-/LEN: LEN */
	/* action remark: the DSCP (0..63) over-limit packets leave with. In
	 * what was padding: no map changes shape. */
	__u8 dscp;
	/* ban: a key this rule refuses ban_after times within a second is
	 * banned for ban_ms (ban_ms 0: never; logic/ban.h). */
	__u16 ban_after;
	__u32 ban_ms;
	__u64 total_burst;  /* total's burst, units, as configured */
	/* total: the rate of one more bucket, at .shared, that all of the
	 * rule's addresses (or groups) are charged too (total.h); rate 0:
	 * none. */
	struct tb_rate total;
	struct tb_match match;
	__u8 fleet;         /* charged to a fleet-wide key as well (fleet.h) */
	__u8 pad2[3];
	/* fleet: what this host may admit of a key on its own, without the
	 * store's credit (rate 0: nothing). */
	struct tb_rate share;
	__u64 share_burst;  /* units, as configured */
	/* action remark: a peak rate (RFC 2698's two-rate marker; rate 0:
	 * none). A packet over it is dropped, one over the rule's own rate
	 * but within it remarked. Its bucket is each bucket's hold word,
	 * which no early signal uses under remark (charge.h,
	 * tb_decide_two_rate). */
	struct tb_rate peak;
	__u64 peak_burst;   /* units, as configured */
};

/* A bucket's level: what the arithmetic in bucket.h reads and writes. */
struct tb_level {
	__u64 tokens;   /* nano-units */
	__u64 last_ns;  /* bpf_ktime_get_ns() of the latest refill */
	/* The early signal's memory (hold.h): the highest level since the
	 * latest signal or tail drop, and the round trip learnt. Under a
	 * rule with a peak rate, which has no early signal, what its peak
	 * bucket lacks of its cap at last_ns instead (nano-units; 0: full;
	 * bucket.h, tb_peak_lack). */
	__u64 hold;
};

/* A bucket's counters, and the first of the global ones, each as
 * X(name, help): the help is what the metrics and operations.md say. */
#define TB_COUNTERS(X)                                                                          \
	X(passed_packets, "Packets passed, within their rule's limit (or delayed by action shape)") \
	X(passed_bytes, "Bytes passed, as frames on the wire")                                    \
	X(dropped_packets, "Packets dropped: over the limit, or by the early congestion signal")   \
	X(dropped_bytes, "Bytes dropped")                                                         \
	X(monitored_packets, "Packets over the limit passed: as they were (monitor) or remarked (remark)") \
	X(monitored_bytes, "Bytes over the limit passed by a monitor or remark rule")
#define TB_U64_FIELD(name, help) __u64 name;

struct tb_counters {
	TB_COUNTERS(TB_U64_FIELD)
};


/* A per-address bucket: the value of a way of the table (struct tb_set). */
struct tb_bucket {
	struct tb_level lvl;
	/* At most the instant the level was last empty, under the cached
	 * rule (0: unknown). Written under the lock when a packet is tail
	 * dropped and cleared when the rule changes; read without the lock,
	 * it lets a packet that certainly cannot be paid be dropped with no
	 * write to the bucket (policy.h, tb_denied_by_bound). One word, so
	 * never read torn. */
	__u64 empty_ns;
	__u32 gen;      /* tb_config.gen when rule was resolved */
	/* The cached rules[] index (TB_RULE_INDEX), and TB_SEEN_AGAIN, set
	 * under the lock once a packet after the first is charged or counted
	 * here: what eviction spares (table.h), and no reset clears. Layout
	 * 12's program, sharing the table during an upgrade's swap, reads the
	 * bit as part of an index it has no rule for: it resolves the rule and
	 * writes the index again, which clears the bit. */
	__u16 rule;
	__u8 cost;      /* unit the level is kept in (enum tb_cost) */
	/* Bumped each time the table gives the way to an address, and part
	 * of the credit word, so that a spend begun on the way's previous
	 * address cannot land on this one's credit (table.h). */
	__u8 tag;
	struct tb_counters c;
	/* Credit: units set aside from lvl for packets admitted without the
	 * lock (credit.h), as tag << 56 | count << 32 | unspent, where count
	 * (24 bits) is what the credit admitted in the other measure:
	 * packets when the bucket charges bytes, bytes when it charges
	 * packets. Spent by compare-and-swap, which also counts, so an
	 * admission writes no other word; granted only under the lock.
	 * Until the next locked charge takes it back, lvl refills to at most
	 * the burst less what was granted, as if none were spent, so spent
	 * credit refills only from then on, and level and credit never hold
	 * more than the burst (bucket.h, tb_unspend). */
	__u64 credit;
	/* Written under the lock: the units granted (0: no credit
	 * outstanding), and the unspent units from which on the credit's
	 * admissions are not yet in c (the grant, or what was unspent when
	 * the counters were last reset). */
	__u32 credit_granted;
	__u32 credit_from;
};

#define TB_RULE_INDEX 0x3fff
#define TB_SEEN_AGAIN 0x4000
_Static_assert(TB_MAX_RULES <= TB_RULE_INDEX + 1, "a rule index fits struct tb_bucket.rule");
_Static_assert(sizeof(struct tb_bucket) == 104, "the bucket layout 12's program shares");


#define TB_CREDIT_COUNT_MAX 0xffffffULL
#define TB_CREDIT_TAG_SHIFT 56
#define TB_CREDIT_UNSPENT_MAX 0xffffffffULL


/* What an upgrade moves from an older layout's shared bucket into this
 * one's: the level, the cached rule and the counters. */
#define TB_BUCKET_COMMON (__builtin_offsetof(struct tb_bucket, c) + sizeof(struct tb_counters))
/* A bucket moved into a newer layout's map is left behind with this
 * refill clock: a clock decades ahead that never goes back, so a program
 * that still reads it finds it empty and stays empty; refills clamp
 * elapsed time at zero. */
#define TB_MOVED_NS (1ULL << 62)

/* shared[] value: the bucket of a shared-scope prefix, at its rule's
 * .shared. Array values may hold a spin lock, so it lives right here. */
struct tb_shared {
	struct bpf_spin_lock lock;
	__u32 pad;
	struct tb_bucket b;
#ifdef TB_FIXTURE_NEXT_LAYOUT
	__u64 fixture_next;     /* tests/e2e/upgrade.sh: a layout after this one */
#endif
};

/* locks[] value: stripes serialising per-address buckets. A lock apart
 * from the table keeps the set at 120 bytes an address. Padded to a
 * cache line so two hot addresses on different stripes do not share
 * one. */
struct tb_lock {
	struct bpf_spin_lock lock;
	__u32 pad[15];
};

/* IPv4 addresses are stored IPv4-mapped (::ffff:a.b.c.d); the parser
 * classifies IPv6 packets carrying such an address as malformed, so the
 * two families never share a key. Network byte order. */
struct tb_addr {
	__u32 w[4];
} __attribute__((aligned(8)));  /* compared as two 64-bit words */

/* buckets[] value: one set of the per-address table, tbctl's own rather
 * than a kernel hash, whose element header, hash bucket and key cost 80
 * bytes an address besides the value. An address has one set
 * (table.h, tb_set_index) and may take any of its first tb_config.ways
 * ways; key 0 marks a free way (no packet has the source ::, which
 * parse.h passes as neighbour discovery or finds malformed). A set lies
 * within one lock stripe, under which every way is given and charged;
 * ways are found without it. */
#define TB_WAYS 8
#define TB_TABLE_MIN_SHIFT 10   /* at least one set a lock stripe */

struct tb_set {
	struct tb_addr key[TB_WAYS];
	struct tb_bucket b[TB_WAYS];
};


/* dropcache value, per CPU: the over-limit packets of one address that a
 * CPU dropped (or, under a monitor rule, passed) without the bucket's
 * lock, not yet added to the bucket's counters. Direct mapped by
 * tb_dropcache_slot; an entry is flushed into its bucket, under the lock,
 * when another address takes the slot or after TB_DROPCACHE_BATCH
 * packets. tbctl adds what is pending to what the buckets hold, unless
 * a reset has made it stale (tb_config.reset_epoch). */
#define TB_DROPCACHE_SLOTS 256      /* power of two */
#define TB_DROPCACHE_BATCH 256

/* flushseq value, per CPU and dropcache slot: how many times that slot
 * has begun and ended a flush, odd while one is under way. A flush adds
 * the slot to the bucket and then empties it, so a reader that took the
 * slot before the bucket would count a batch flushed in between twice;
 * the sequence, read around both, shows that it was (state.c). */
struct tb_flushseq {
	__u64 seq;
};

struct tb_dropslot {
	struct tb_addr addr;
	__u64 dropped_packets;
	__u64 dropped_bytes;
	__u64 monitored_packets;
	__u64 monitored_bytes;
};

/* denycache value, per CPU: a bucket's empty_ns as this CPU last read it,
 * with the terms of the rule it was computed under. While the rule-set
 * generation is still gen, a packet of addr that this bound already
 * shows cannot be paid is dropped (or, monitor, counted) without looking
 * up the bucket at all (policy.h, tb_denied_by_copy). An older bound is
 * still a bound: the level only refills at the rate after it, a
 * re-created bucket starts from what its evicted one owed (owed[]), and
 * anything else that would refill a bucket changes the generation. Same
 * slot as dropcache's. */
struct tb_denyslot {
	struct tb_addr addr;
	__u64 empty_ns;         /* 0: nothing cached */
	__u64 rate;             /* of the rule: units per second */
	__u64 fill_ns;
	__u32 gen;
	__u8 cost;              /* enum tb_cost of the rule and the bucket */
	__u8 action;            /* enum tb_action of the rule */
	/* The tb_config.reset_epoch that this CPU's dropcache slot of the
	 * same index counts under: kept here, in what was padding, so no
	 * map shared with an older program during an upgrade changes. */
	__u16 drop_epoch;
};

/* How pins place an address's table set, lock stripe and owed[] slot
 * (tb_config.place). A table placed otherwise than a fresh attach places
 * it is taken over into a new one by the next upgrade (enum
 * tb_take_over). */
enum tb_place {
	TB_PLACE_MIX = 1,       /* tb_addr_mix: layout 12's, which an upgrade takes over from */
	TB_PLACE_SIPHASH = 2,   /* tb_siphash13 under tb_config.place_key */
};

/* placecache value, per CPU and dropcache slot: the placement hash of the
 * address this CPU last placed in that slot (TB_PLACE_SIPHASH). */
struct tb_placeslot {
	struct tb_addr addr;
	__u32 h;
	__u32 pad;
};

/* owed[] value: per hash slot of addresses, the latest instant by which
 * any bucket hashed there is full again (bucket.h, tb_full_at). A bucket
 * re-created after the table evicted it starts from there instead of full,
 * so eviction hands out no burst that the address has not earned. The slot
 * count is a power of two, at least TB_LOCK_STRIPES, and addresses that
 * share a slot share a lock stripe (place.h). */
#define TB_OWED_MIN_SHIFT 10

struct tb_lpm_v4 {
	__u32 prefixlen;
	__u32 addr;
};

struct tb_lpm_v6 {
	__u32 prefixlen;
	__u32 addr[4];
};

/* config[0]: what tbctl attached, the default rule, and the rule-set
 * generation. The generation is bumped whenever a prefix is pointed at
 * another slot, which invalidates every bucket's cached rule slot. */
struct tb_config {
	__u32 gen;
	__u32 default_rule; /* rules[] slot + 1; 0: no default rule */
	__u32 ifindex;
	__u32 max_addrs;
	__u8 mode;      /* enum tb_mode */
	__u8 key;       /* enum tb_key */
	__u8 attached;
	__u8 own_qdisc; /* tbctl created the clsact qdisc, so detach removes it */
	__u8 own_fq;    /* tbctl made fq the root qdisc (attach qdisc fq); detach removes it */
	__u8 owed_shift; /* owed[] has 2^owed_shift slots (0: none) */
	__u8 layout;    /* TB_LAYOUT of the build that attached or upgraded */
	__u8 place;     /* enum tb_place; 0 marks pins of layouts before 9 */
	/* Keys tb_dropcache_slot (and tb_place_hash under TB_PLACE_MIX);
	 * drawn by attach, once (0 mixes as well, only not secretly). */
	__u32 slot_seed;
	/* Bumped by every reset: dropcache counts made under
	 * an earlier epoch are discarded, by the CPU that made them when it
	 * next counts in that slot, by the flush under the bucket's lock, and
	 * by tbctl when it reads them. So no CPU's counts are ever written by
	 * another, and a reset loses none made after it. */
	__u16 reset_epoch;
	/* An upgrade that moves the table (enum tb_take_over): the phase,
	 * and how the older table places an address (enum tb_place). */
	__u8 take_over;
	__u8 prev_place;
	/* The table: 2^table_shift sets, of which an address
	 * may take the first ways ways. Set by attach and kept. */
	__u8 table_shift;
	__u8 ways;
	/* Some rule is per-/LEN or has a match: a packet's rule is resolved
	 * before its bucket is looked up, since it says the bucket's key
	 * (group.h, match.h). */
	__u8 resolve_first;
	/* What the rules with a match read of a packet (enum tb_match_reads);
	 * 0: no rule has a match. */
	__u8 match_reads;
	/* The program attach (or an upgrade) hooked last; 0: not written.
	 * Tells tbctl's program on the device without opening it by id,
	 * which takes CAP_SYS_ADMIN. */
	__u32 prog_id;
	/* The secret of TB_PLACE_SIPHASH, from getrandom() at attach. */
	__u64 place_key[2];
	/* After a take-over, until this instant a new bucket's owed[]
	 * slot first takes what its slot under the older placement owes:
	 * the older table's evicted buckets owe there (tb_owed_carry). */
	__u64 prev_owed_until;
	/* nodes[] slot + 1 of the default rule's matches; 0: none. */
	__u32 default_node;
	/* Where the kernel has tcx (6.6+), a tc mode's program is on the
	 * hook through a tcx link pinned beside the maps: 1; or as tbctl's
	 * clsact filter: 0, as earlier layouts' always are. */
	__u8 tcx;
	__u8 pad3[3];
	__u64 l4_mask;  /* tb_l4_mask(match_reads) (match.h) */
	/* The events ring buffer's sampling (event.h): at most event_rate
	 * records a second over all keys (0: none are written), and at most
	 * one a key every event_interval_ms. */
	__u32 event_rate;
	__u32 event_interval_ms;
	/* Bans (stages/ban.h): which pair of manual lists is in force
	 * (bans0_*, bans1_*: ban apply fills the other and flips this), the
	 * prefixes in it per family (0: the lookup is skipped), and whether
	 * some rule bans (0: refusals are not counted). ban_gen is bumped,
	 * in a write of its own after the flip, by every change of the list
	 * and every ban lifted: what the CPUs cached of the bans is then
	 * stale. */
	__u8 ban_side;
	__u8 ban_rules;
	__u16 pad4;
	__u32 bans_v4;
	__u32 bans_v6;
	__u32 ban_gen;
};

enum tb_match_reads {
	TB_READS_PROTO = 1,     /* the protocol */
	TB_READS_DPORT = 2,     /* and the destination port, or ICMP type */
	TB_READS_SPORT = 4,     /* and the source port */
	TB_READS_FLAGS = 8,     /* and TCP flags */
};

/* nodes[] value: the rules with a match that a packet inside a prefix
 * may be charged under, in the order they are tried: that prefix's, then
 * those of the prefixes around it, longest first, then the default's;
 * within one prefix, two ports before one, before a protocol alone, and
 * narrower ranges first. A packet takes the first that matches it unless
 * a rule without a match has a longer prefix (match.h). The match tries
 * (matches_v4, matches_v6) point each prefix that has such a rule at its
 * node, tb_config.default_node the default's. Published like a rule: a
 * change writes a fresh slot and then points the prefix at it. */
#define TB_NODE_ENTRIES 16
#define TB_MAX_NODES 4096

struct tb_node_entry {
	struct tb_match m;
	__u16 rule;     /* rules[] slot */
	__u8 plen1;     /* the rule's prefix length + 1; 0: the default rule */
	__u8 pad;
};

struct tb_node {
	__u32 n;
	__u8 family;    /* the prefix it serves, for tbctl; 0: the default's */
	__u8 len;
	__u8 pad[2];
	__u8 addr[16];
	struct tb_node_entry e[TB_NODE_ENTRIES];
};

/* fragments[] key: one fragmented datagram, as every fragment of it
 * names it (IPv4 addresses IPv4-mapped, as struct tb_addr keeps them). */
struct tb_frag_key {
	struct tb_addr src;
	struct tb_addr dst;
	__u32 id;       /* IPv4 identification (16 bits), IPv6 fragment identification */
	__u8 proto;     /* struct tb_pkt.frag_proto */
	__u8 pad[3];
};

/* Datagrams whose first fragment's transport (an l4 word, match.h) the
 * datapath keeps for their later fragments (fragment.h). Evicted oldest
 * first: a datagram's fragments follow each other within milliseconds. */
#define TB_FRAGMENTS 8192

/* fleet[] key: a bucket's key (an address, a group's key, or zero for a
 * shared bucket) and its rule's shared[] slot, which the rule keeps across
 * changes. */
struct tb_fleet_key {
	struct tb_addr key;
	__u32 rule;
	__u32 pad;
};

/* fleet[] value: what this host may spend of one fleet-wide key. Made by
 * the datapath on the key's first packet, its static share full; credit
 * is granted by the store, through the agent (tbctl fleet run), which
 * also deletes idle keys (user/agent.c). */
struct tb_fleet_entry {
	struct bpf_spin_lock lock;      /* the share's level */
	__u32 pad;
	struct tb_level share;
	/* Units the store granted and no packet spent yet: taken by atomic
	 * subtraction (fleet.h), given and taken back by tb_fleet_apply. It
	 * may dip below zero for the instant a spend that did not fit is
	 * undone. */
	__s64 credit;
	__u64 expires_ns;       /* the credit's lease: void from then on */
	/* Cumulative units, read by the agent for the key's demand. */
	__u64 spent;            /* from credit */
	__u64 share_spent;      /* from the share */
	__u64 refused;          /* refused for want of either */
	__u64 last_ns;          /* latest packet */
};

/* fleetops[] value: one operation of tb_fleet_apply on a key's credit. */
enum tb_fleet_op {
	TB_FLEET_GRANT = 1,     /* add amount to the credit; the lease until expires_ns */
	TB_FLEET_TAKE = 2,      /* take the unspent credit back: amount out */
};

#define TB_FLEET_OPS 256

struct tb_fleet_opslot {
	struct tb_fleet_key k;
	__s64 amount;
	__u64 expires_ns;
	__u32 op;               /* enum tb_fleet_op */
	__u32 done;             /* out: 1 when the key was found */
};

/* tb_fleet_apply's packet: apply fleetops[0..n). Padded past an
 * Ethernet header, the least test runs of XDP programs take. */
struct tb_fleet_req {
	__u32 n;
	__u32 pad[3];
};

/* fleetstate[0]: the agent's state, for status, the metrics and the
 * datapath. Written by the agent alone. */
struct tb_fleet_state {
	__u32 pid;              /* the agent's; 0: none has run */
	/* The store is unreachable and fallback is closed: keys get no
	 * static share. */
	__u8 share_off;
	__u8 reachable;
	__u8 pad[2];
	__u64 heartbeat_ns;     /* CLOCK_MONOTONIC (bpf_ktime_get_ns) of the agent's latest round */
	__u64 rtt_ns;           /* latest store round trip */
	__u64 last_grant_ns;    /* latest round that granted something */
	__u64 calls;
	__u64 errors;
	__u64 granted;          /* units, cumulative */
	__u64 returned;
	__u64 keys;             /* fleet[] entries at the latest round */
	char store[96];         /* host:port */
	char fleet[32];         /* the fleet's name */
	char epoch[48];         /* the store's epoch */
	char error[128];        /* the latest error; empty once a call succeeds */
};

/* The phases of an upgrade that moves the per-address table into a new
 * one (user/upgrade.c, bpf/stages/migrate.h), each entered once the one before
 * has settled. */
enum tb_take_over {
	TB_TAKE_NONE = 0,
	/* The older program may still run: both charge the older table,
	 * placed as it was. */
	TB_TAKE_SHARE = 1,
	/* Only this program runs, but a CPU may still be in a packet begun
	 * under TB_TAKE_SHARE: an address missing from the new table takes
	 * its older bucket over, or leaves a moved mark in its place. */
	TB_TAKE_MARK = 2,
	/* Every CPU takes over: marks are no longer needed, and tbctl moves
	 * the rest (tb_migrate). */
	TB_TAKE_OVER = 3,
};

/* The layout of every map and value here. Any change to them bumps it:
 * tbctl refuses pins of a newer layout, and attach upgrades those of the
 * layout before (user/upgrade.c); older pins it refuses, naming what to
 * do. Values change only by appending fields whose zero means "as
 * before", so the fields every layout has keep their offsets (a config
 * of any layout is read by its common beginning). A map the datapath
 * only reads (config, rules, prefixes) may grow: attach copies it into a
 * new map before swapping the program. Shared buckets and the global
 * counters may grow too: they are merged once the swap has settled
 * (bpf/stages/migrate.h). The other maps the datapath writes (the table, locks,
 * the caches, owed) keep their layout: during the swap both programs
 * share them. NEWS says what each layout changed.
 * TB_FIXTURE_NEXT_LAYOUT builds a layout after this one, whose shared
 * buckets and global counters grew, for the upgrade test. */
#ifdef TB_FIXTURE_NEXT_LAYOUT
#define TB_LAYOUT 17
#else
#define TB_LAYOUT 16
#endif

/* What tbctl asks of tb_migrate (bpf/tb.bpf.c) once an upgrade's swap has
 * settled, at the start of the frame it runs it on. */
struct tb_migrate_req {
	__u32 shared;           /* merge shared_prev into shared */
	__u32 stats_cpus;       /* add this many CPUs' stats_prev into stats; 0: none */
	__u32 table;            /* move what table_prev still holds into the table */
	__u32 pad;
	__u64 owed_max;         /* out, with table: the latest instant owed[] holds */
};

/* events value: a decision that was not a plain pass, as the datapath
 * wrote it (stages/event.h); sampled, so a flood cannot make logging
 * cost more than tb_config.event_rate records a second. */
struct tb_event {
	__u64 ns;               /* bpf_ktime_get_ns() */
	/* The bucket's key: the address, its group's, or its class's under
	 * a rule with a match (tbctl reads it back with the rule). */
	struct tb_addr key;
	__u32 bytes;
	__u16 packets;
	__u16 rule;             /* rules[] slot + 1; 0: not known where it was decided */
	__u8 verdict;           /* enum tb_event_verdict */
	__u8 why;               /* enum tb_event_why */
	__u8 pad[6];
};

enum tb_event_verdict {
	TB_EVENT_DROP = 1,
	TB_EVENT_MARK = 2,      /* ECN CE set */
	TB_EVENT_REMARK = 3,    /* DSCP set */
};

enum tb_event_why {
	TB_WHY_RATE = 1,        /* over its rule's rate */
	TB_WHY_EARLY = 2,       /* the early signal, as the bucket drained */
	TB_WHY_PEAK = 3,        /* over a remark rule's peak rate */
	TB_WHY_TOTAL = 4,       /* over its rule's total */
	TB_WHY_FLEET = 5,       /* refused by the fleet */
	TB_WHY_UNKNOWN = 6,     /* its rule could not be known (a fragment, a header chain) */
	TB_WHY_BAN = 7,         /* banned: by hand (rule 0), or by its rule's ban */
};

/* The events ring buffer's size: records of 48 bytes and their 8-byte
 * headers, about 4,600 of them, 1.6 s at the default rate. */
#define TB_EVENTS_BYTES (256 * 1024)
#define TB_EVENT_RATE_DEFAULT 1000
#define TB_EVENT_INTERVAL_MS_DEFAULT 1000
/* What a key's sampling slot is, of the 2^TB_EVENT_SLOTS_SHIFT (event.h). */
#define TB_EVENT_SLOTS_SHIFT 12

/* bans*_v4, bans*_v6 value: a prefix banned by hand (tbctl ban), until
 * own_ns of bpf_ktime_get_ns() (TB_BAN_FOREVER: no end); added_ns is
 * when, for ban list. The lookup finds the longest prefix only, so the
 * datapath reads until_ns, which tbctl keeps at the latest end of the
 * prefix's and of those around it. Two pairs of lists: the datapath reads the one
 * tb_config.ban_side names, so ban apply replaces a list whole. */
struct tb_ban {
	__u64 until_ns;         /* the latest of own_ns and that of every prefix around it */
	__u64 own_ns;
	__u64 added_ns;
};
#define TB_BAN_FOREVER 0xffffffffffffffffULL
/* Prefixes a manual list holds per family, at most. */
#define TB_MAX_BANS (1U << 18)

/* autobans value: a key its rule refuses, by tb_addr (the address, its
 * group's or its class's key; a shared bucket's is logic/ban.h's
 * tb_ban_shared_key).
 * The refusals of the second from window_ns, and the ban they made,
 * until until_ns (0: none yet); rule is the rules[] slot + 1 that
 * refused it. An LRU map of TB_AUTOBANS keys: when it is full, a new
 * key takes the place of the one looked up least recently, whose ban
 * (if it still had one) ends early; it is banned again at its next
 * refusals, since its bucket still refuses it. */
struct tb_autoban {
	__u64 window_ns;
	__u64 until_ns;
	__u64 refusals;         /* 64-bit: the BPF target's compare-and-swap is */
	__u32 rule;
	__u32 pad;
};
#define TB_AUTOBANS (1U << 14)
/* banfilter: per hash slot of keys (logic/ban.h, tb_ban_slot), the
 * latest end of an automatic ban of a key hashed there; a key whose slot
 * shows none ended is not banned, and the hash lookup is skipped. */
#define TB_BANFILTER_SHIFT 16
/* banfilter's last word: the latest end of any automatic ban. */
#define TB_BANFILTER_ALL (1U << TB_BANFILTER_SHIFT)

/* A map's key or value that is not there (a ring buffer's). */
struct tb_nothing {
};

/* stats[0], per CPU. */
/* The global counters after a bucket's, as X(name, help). Of
 * dropped_*, fragments_unknown and headers_unknown are packets whose rule
 * could not be known where a rule with a match could take them
 * (fragment.h). */
#define TB_STATS(X)                                                                                        \
	X(unmatched_packets, "Packets that matched no rule (passed)")                                      \
	X(unmatched_bytes, "Bytes that matched no rule (passed)")                                          \
	X(nonip_packets, "Frames that are not IP (passed)")                                                \
	X(nd_packets, "IPv6 neighbour discovery packets (passed unpoliced)")                               \
	X(malformed_packets, "Malformed or truncated packets (passed)")                                    \
	X(buckets_created, "Per-address buckets created")                                                  \
	X(early_dropped_packets, "Packets of dropped_packets dropped by the early signal")                 \
	X(marked_packets, "Packets passed with ECN CE set (action mark)")                                  \
	X(delayed_packets, "Packets of passed_packets given a later departure (action shape)")             \
	X(allowed_packets, "Packets of passed_packets that an action pass rule let through uncharged")     \
	X(allowed_bytes, "Bytes of passed_bytes that an action pass rule let through uncharged")           \
	X(fleet_refused_packets,                                                                           \
	  "Packets of dropped_packets that a fleet key had neither static share nor store credit for")     \
	X(fleet_full_packets, "Packets of fleet_refused_packets whose key found no room in fleet[]")       \
	X(fragments_unknown_packets, "Packets of dropped_packets: later fragments whose first was not "    \
				     "seen, where a rule with ports could take them")                      \
	X(headers_unknown_packets, "Packets of dropped_packets: IPv6 packets whose header chain was not "  \
				   "walked to its end, where a rule with a match could take them")         \
	X(events_capped, "Decisions not logged to the events buffer: over its rate a second")             \
	X(events_lost, "Decisions not logged to the events buffer: it was full (no reader kept up)")       \
	X(banned_packets, "Packets of dropped_packets dropped by a ban, before any bucket was charged")     \
	X(banned_bytes, "Bytes of dropped_bytes dropped by a ban")                                        \
	X(bans_made, "Keys banned by their rule's ban (ban-after refusals within a second)")              \
	TB_STATS_NEXT(X)
#ifdef TB_FIXTURE_NEXT_LAYOUT
#define TB_STATS_NEXT(X) X(fixture_next_packets, "A counter of the layout after this one (test fixture)")
#else
#define TB_STATS_NEXT(X)
#endif

struct tb_stats {
	struct tb_counters c;
	TB_STATS(TB_U64_FIELD)
};

/* What every layout's struct tb_stats holds, from layout 12 on. */
#define TB_STATS_COMMON (__builtin_offsetof(struct tb_stats, delayed_packets) + sizeof(__u64))

/* tb_reset_counters' packet: what tbctl asks of it, and what it hands
 * back. The datapath adds to a CPU's global counters without atomics, so
 * no other CPU may write them: the program reads every CPU's counters
 * and takes their sum from its own CPU's with atomic adds. The sum over
 * the CPUs, all that is ever read, then restarts from zero, and a count
 * made meanwhile on any CPU is kept. The new reset epoch is written by
 * the same run, so a tbctl killed around it leaves all of a reset or
 * none. */
struct tb_reset_req {
	__u32 stats_cpus;       /* CPUs whose global counters to reset; 0: none */
	__u16 reset_epoch;      /* tb_config.reset_epoch from this reset on */
	__u16 pad;
	struct tb_stats taken;  /* out: what the reset took */
};

/* Every map tbctl pins, in one list: name, type, key, value, and whether
 * the datapath writes it (an upgrade that changes such a map merges what
 * it holds instead of copying it, or refuses; see TB_LAYOUT). tbctl's
 * struct tb_maps, its pin names, its layout check and its upgrades are
 * all made from it (user/state.h, user/state.c,
 * user/upgrade.c); bpf/stages/maps.h declares the same maps. */
#define TB_MAPS(X)                                                                  \
	X(buckets, BPF_MAP_TYPE_ARRAY, __u32, struct tb_set, 1)                     \
	X(rules, BPF_MAP_TYPE_ARRAY, __u32, struct tb_rule, 0)                      \
	X(prefixes_v4, BPF_MAP_TYPE_LPM_TRIE, struct tb_lpm_v4, __u32, 0)           \
	X(prefixes_v6, BPF_MAP_TYPE_LPM_TRIE, struct tb_lpm_v6, __u32, 0)           \
	X(shared, BPF_MAP_TYPE_ARRAY, __u32, struct tb_shared, 1)                   \
	X(locks, BPF_MAP_TYPE_ARRAY, __u32, struct tb_lock, 1)                      \
	X(config, BPF_MAP_TYPE_ARRAY, __u32, struct tb_config, 0)                   \
	X(stats, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct tb_stats, 1)              \
	X(dropcache, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct tb_dropslot, 1)       \
	X(owed, BPF_MAP_TYPE_ARRAY, __u32, __u64, 1)                                \
	X(denycache, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct tb_denyslot, 1)        \
	X(flushseq, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct tb_flushseq, 1)        \
	X(placecache, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct tb_placeslot, 1)       \
	X(matches_v4, BPF_MAP_TYPE_LPM_TRIE, struct tb_lpm_v4, __u32, 0)            \
	X(matches_v6, BPF_MAP_TYPE_LPM_TRIE, struct tb_lpm_v6, __u32, 0)            \
	X(nodes, BPF_MAP_TYPE_ARRAY, __u32, struct tb_node, 0)                      \
	X(fleet, BPF_MAP_TYPE_HASH, struct tb_fleet_key, struct tb_fleet_entry, 1)  \
	X(fleetstate, BPF_MAP_TYPE_ARRAY, __u32, struct tb_fleet_state, 0)         \
	X(fragments, BPF_MAP_TYPE_LRU_HASH, struct tb_frag_key, __u64, 1)          \
	X(events, BPF_MAP_TYPE_RINGBUF, struct tb_nothing, struct tb_nothing, 1)    \
	X(bans0_v4, BPF_MAP_TYPE_LPM_TRIE, struct tb_lpm_v4, struct tb_ban, 0)      \
	X(bans0_v6, BPF_MAP_TYPE_LPM_TRIE, struct tb_lpm_v6, struct tb_ban, 0)      \
	X(bans1_v4, BPF_MAP_TYPE_LPM_TRIE, struct tb_lpm_v4, struct tb_ban, 0)      \
	X(bans1_v6, BPF_MAP_TYPE_LPM_TRIE, struct tb_lpm_v6, struct tb_ban, 0)      \
	X(autobans, BPF_MAP_TYPE_LRU_HASH, struct tb_addr, struct tb_autoban, 1)    \
	X(banfilter, BPF_MAP_TYPE_ARRAY, __u32, __u64, 1)

#endif
