/* SPDX-License-Identifier: GPL-2.0 */
/* The datapath's maps. tbctl pins each by name under the device's bpffs
 * directory, so a later load reuses them and state outlives the program. */
#ifndef TB_MAPS_H
#define TB_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "logic/charge.h"

/* Per-address buckets: the table's sets (tb_abi.h, table.h). A flood of
 * new source addresses takes the ways of buckets that saw one packet, or
 * of those seen least recently, instead of failing inserts; what an
 * evicted bucket owed stays in owed[]. Size set by tbctl at load
 * (max-addrs, tb_table_shift). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TB_DEFAULT_MAX_ADDRS / TB_WAYS);
	__type(key, __u32);
	__type(value, struct tb_set);
} buckets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TB_MAX_RULES);
	__type(key, __u32);
	__type(value, struct tb_rule);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, TB_MAX_RULES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct tb_lpm_v4);
	__type(value, __u32);
} prefixes_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, TB_MAX_RULES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct tb_lpm_v6);
	__type(value, __u32);
} prefixes_v6 SEC(".maps");

/* Rules with a protocol or port match (tb_abi.h, struct tb_node). */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, TB_MAX_NODES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct tb_lpm_v4);
	__type(value, __u32);
} matches_v4 SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, TB_MAX_NODES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct tb_lpm_v6);
	__type(value, __u32);
} matches_v6 SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TB_MAX_NODES);
	__type(key, __u32);
	__type(value, struct tb_node);
} nodes SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TB_MAX_RULES);
	__type(key, __u32);
	__type(value, struct tb_shared);
} shared SEC(".maps");

/* Fleet keys this host has seen (fleet.h), as many as the table has
 * addresses (set by tbctl at load). Not preallocated: the agent deletes
 * idle keys while a CPU may still hold one, which a preallocated map
 * would hand to another key at once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TB_DEFAULT_MAX_ADDRS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct tb_fleet_key);
	__type(value, struct tb_fleet_entry);
} fleet SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_fleet_state);
} fleetstate SEC(".maps");

/* Later fragments find their first's transport here (fragment.h). An LRU
 * map, preallocated: a flood of first fragments evicts the oldest
 * datagrams and allocates nothing. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TB_FRAGMENTS);
	__type(key, struct tb_frag_key);
	__type(value, __u64);
} fragments SEC(".maps");

/* Decisions for tbctl events (event.h), pinned so that any tbctl reads
 * them; one reader at a time takes them out. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, TB_EVENTS_BYTES);
} events SEC(".maps");

/* The events' sampling: per slot of keys, the latest record's key tag
 * and time; [0] of eventgate, the records of this second. The program's
 * own: an upgrade starts them over. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1U << TB_EVENT_SLOTS_SHIFT);
	__type(key, __u32);
	__type(value, __u64);
} eventslots SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} eventgate SEC(".maps");

/* Bans (stages/ban.h). The manual lists: two pairs, of which the
 * datapath reads the one tb_config.ban_side names. Not preallocated:
 * a list holds what an operator put in it. */
#define TB_BAN_LIST(name, lpm_key)                                                                     \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                                               \
		__uint(max_entries, TB_MAX_BANS);                                                  \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                              \
		__type(key, lpm_key);                                                                \
		__type(value, struct tb_ban);                                                      \
	} name SEC(".maps")
TB_BAN_LIST(bans0_v4, struct tb_lpm_v4);
TB_BAN_LIST(bans0_v6, struct tb_lpm_v6);
TB_BAN_LIST(bans1_v4, struct tb_lpm_v4);
TB_BAN_LIST(bans1_v6, struct tb_lpm_v6);

/* Keys that rules refuse, and the bans their refusals made: bounded, and
 * preallocated, so a flood of refused keys allocates nothing and takes
 * the places looked up least recently (tb_abi.h, struct tb_autoban). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TB_AUTOBANS);
	__type(key, struct tb_addr);
	__type(value, struct tb_autoban);
} autobans SEC(".maps");

/* This CPU's latest answers of the bans per cache slot (tb_dropcache_slot),
 * while tb_config.ban_gen + 1 is their gen: whether address addr is in
 * the manual list in force (until hand_until; 0: not), and a rule's ban
 * of key found (until rule_until, by rule + 1). So a repeat address costs
 * the manual list a compare, not a trie lookup, and a banned key its
 * drop without a hash lookup. A cache of this program's, never pinned. */
struct tb_banslot {
	struct tb_addr addr;
	__u64 hand_until;
	struct tb_addr key;
	__u64 rule_until;
	__u32 hand_gen;         /* 0: nothing cached */
	__u32 rule_gen;
	__u32 rule;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TB_DROPCACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct tb_banslot);
} bancache SEC(".maps");

/* Per hash slot of keys, the latest end of an automatic ban there, and
 * at TB_BANFILTER_ALL, of any (logic/ban.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TB_BANFILTER_ALL + 1);
	__type(key, __u32);
	__type(value, __u64);
} banfilter SEC(".maps");

/* The agent's operations for tb_fleet_apply; never pinned: each agent
 * run loads its own copy of the program with it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TB_FLEET_OPS);
	__type(key, __u32);
	__type(value, struct tb_fleet_opslot);
} fleetops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TB_LOCK_STRIPES);
	__type(key, __u32);
	__type(value, struct tb_lock);
} locks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TB_DROPCACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct tb_dropslot);
} dropcache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TB_DROPCACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct tb_denyslot);
} denycache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TB_DROPCACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct tb_flushseq);
} flushseq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TB_DROPCACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct tb_placeslot);
} placecache SEC(".maps");

/* This CPU's latest resolution of an address per cache slot
 * (tb_dropcache_slot), where some rule is per-/LEN or has a match: while
 * the rule-set generation is still gen, a packet from addr of l4
 * (match.h) has its rule at id (TB_MAX_RULES: none) and its bucket's key
 * is key, whose own cache slot is ci and placement hash h (tb_place); a
 * flood from one address skips the prefix lookups, the rule and the
 * key's hashes (rule.h, tb_regroup). A cache of this program's, never
 * pinned: a load starts it empty. */
struct tb_groupslot {
	struct tb_addr addr;
	struct tb_addr key;
	__u64 l4;
	__u32 gen;
	__u32 id;
	__u32 ci;
	__u32 h;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TB_DROPCACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct tb_groupslot);
} groupcache SEC(".maps");

/* What evicted buckets still owe (tb_abi.h); size set by tbctl at load
 * with tb_config.owed_shift. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 16);
	__type(key, __u32);
	__type(value, __u64);
} owed SEC(".maps");

/* Upgrades (user/upgrade.c, bpf/stages/migrate.h). None is pinned. */

/* The older table at [0] while an upgrade moves the table (enum
 * tb_take_over); empty otherwise. An outer map, so tbctl can drop the
 * older table once it is moved without another program swap. tbctl
 * gives the older table as the inner map's template (a table's size is
 * set at attach); this one only stands in when there is none. */
struct tb_table_prev {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_set);
};

/* Scratch, per CPU and never pinned: the bucket a packet makes before it
 * is given a way, and the one a take-over carries from the older table
 * to the new one, for a packet or for tb_migrate, which a packet may
 * interrupt. The stack of a packet's program has no room for them. */
enum { TB_MOVING_PACKET, TB_MOVING_MIGRATE, TB_MOVING_SLOTS };
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_bucket);
} newbucket SEC(".maps");

/* Scratch, per CPU and never pinned: what a packet's charge needs of it
 * and its rule (charge.h). On the stack its constants kept the verifier's
 * states apart, and the stack has no room for it beside the rest. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_terms);
} termscratch SEC(".maps");

/* Scratch, per CPU and never pinned: the terms a rule's total charges a
 * packet on (total.h), the address to refund and the later departure it
 * sets, for which the stack has no room either. */
struct tb_total_scratch {
	struct tb_terms t;
	struct tb_addr key;
	__u64 depart;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_total_scratch);
} totalscratch SEC(".maps");

/* Scratch, per CPU and never pinned: a fleet key, the entry a new key
 * starts from, and the terms of the refund a refusal makes (fleet.h).
 * The entry as words: a per-CPU value may hold no spin lock. */
struct tb_fleet_scratch {
	struct tb_terms t;
	struct tb_fleet_key k;
	__u64 e[sizeof(struct tb_fleet_entry) / 8];
	struct tb_addr key;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_fleet_scratch);
} fleetscratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TB_MOVING_SLOTS);
	__type(key, __u32);
	__type(value, struct tb_bucket);
} moving SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct tb_table_prev);
} table_prev SEC(".maps");

/* The older layout's shared buckets and global counters, which only the
 * merge after the swap reads (tbctl binds the old maps before load). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_shared);
} shared_prev SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tb_stats);
} stats_prev SEC(".maps");

#endif
