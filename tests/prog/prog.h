/* SPDX-License-Identifier: GPL-2.0 */
/* What every topic of the program tests shares: the loaded objects, the
 * maps reset between tests, and frames run through the hooks. */
#ifndef TB_PROG_H
#define TB_PROG_H

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/clock.h"
#include "logic/bucket.h"
#include "logic/match.h"
#include "lib/hook.h"
#include "lib/order.h"
#include "tb.skel.h"
#include "lib/match_text.h"
#include "lib/ruleset.h"
#include "lib/state.h"
#include "lib/pending.h"
#include "lib/tables.h"
#include "lib/upgrade.h"
#include "../packets.h"
#include "../check.h"
#include "logic/counters.h"
#include "logic/hash.h"

extern struct tb *skel;

extern struct ruleset *rs;

extern int xdp_fd, tc_fd;

/* Empty one map, as a freshly loaded object's is: arrays zeroed (a
 * batch, one syscall), other maps' keys collected then deleted. */
void map_clear(const struct bpf_map *map);

/* A seed for the caches' slots as attach draws one (observe.sh checks
 * that it does), but fixed: which of a test's addresses share a slot is
 * then the same on every run. */
#define TEST_SLOT_SEED 0x5eed7b01u

/* The config's owed[] size, slot seed and placement, and the table's
 * size, as attach writes them. */
void set_config_placed(__u8 owed_shift, __u32 slot_seed, __u8 place);

void set_config(__u8 owed_shift, __u32 slot_seed);

void set_owed_shift(__u8 shift);

/* One object per hook variant, loaded once: each test starts from its
 * maps emptied, as a fresh load's are, without another verifier pass (a
 * few seconds each in the emulated VM). */
extern struct tb *loaded[2][2];

void setup_hook(int key_dst, int egress);

void setup_key(int key_dst);

void setup(void);

void teardown(void);

int set_spec(const char *prefix, const struct rule_spec *s);

int set_rule(const char *prefix, __u64 rate, __u64 burst, int cost, int action, int scope);

int try_run(int fd, const struct frame *f, size_t len, __u32 *retval);

__u32 run_len(int fd, const struct frame *f, size_t len);

__u32 run(int fd, const struct frame *f);

/* Reset the counters as tbctl does: the reset program, which moves the
 * reset epoch on, over cpus CPUs' global counters; what it took from them
 * goes to *taken (may be NULL). */
__u32 reset_counters(__u32 cpus, struct tb_stats *taken);

/* The bucket as the map holds it. */
struct tb_bucket raw_bucket_of(const char *addr);

/* Address addr's bucket (none: zero) with its counters as tbctl reads
 * them, in show's order: the caches, the bucket, what is pending added.
 * Whether it has one. */
int read_key_as_tbctl(const struct tb_addr *k, struct tb_bucket *b);

int read_as_tbctl(const char *addr, struct tb_bucket *b);

struct tb_bucket bucket_of(const char *addr);

/* What is counted but not yet in the bucket's counters: admissions its
 * credit counts, and drops in the per-CPU caches. */
struct tb_counters pending_of(const char *addr);

/* What a bucket holds at its latest charge: its level and the credit
 * set aside from it, unspent. */
__u64 held(const struct tb_bucket *b);

/* Clear address a's way of the table of maps m placed as cfg says, in
 * place of the datapath (evict), or set its bucket to b. 0 or -errno. */
int table_edit_in(const struct tb_maps *m, const struct tb_config *cfg, const struct tb_addr *a,
			 const struct tb_bucket *b);

int has_bucket_in(const struct tb_maps *m, const struct tb_config *cfg, const char *addr);

int has_bucket(const char *addr);

struct tb_stats totals(void);

/* The events ring buffer's records, taken out (at most 8192). */
struct seen {
	struct tb_event e[8192];
	int n;
};

struct seen *records(void);

/* Send n frames, return how many the program passed. */
int pass_count(int fd, const struct frame *f, int n, __u32 pass);

int set_total(const char *prefix, __u64 rate, __u64 burst, __u64 total, __u64 total_burst, int action);

/* The bucket of rule slot id's total, as the map holds it. */
struct tb_bucket total_of(int id);

/* A rule named by prefix and match (as "rule set PREFIX proto ...").
 * Returns its slot. */
int set_match(const char *prefix, const char *proto, const char *dport, __u64 burst, int scope,
		     __u8 group_len);
/* The same for a match of any words (lib/match_text.h). */
int set_match_words(const char *prefix, const struct match_words *w, __u64 burst, int scope, __u8 group_len);

/* Packets counted by the bucket of addr (or its group) under rule id. */
__u64 passed_under(const char *addr, int id);

/* Keep this thread on one CPU: the dropcache is per CPU. */
void pin_cpu0(void);

void unpin(void);

/* Drain src's bucket (3 frames of 1000 bytes against a 3000-byte burst
 * at 1000 B/s, which refills 1 byte a millisecond) and drop one frame
 * under the lock; that tail drop leaves the bound lockless drops use. */
void drain(int fd, __u32 pass, __u32 drop, const char *src, struct frame *f);

void evict(const char *addr);

/* An address 198.18.X.Y, X from first to 255, that shares a's drop cache
 * slot under this test's seed, into out; false when none does. */
bool slot_mate(const char *a, int first, char *out, size_t len);

/* Set up with this thread on CPU 0: other, an address of 198.18.first.1
 * on, shares a's cache slot; a's bucket is drained, and 10 more drops of
 * it are pending in the slot. */
void slot_mates_with_drops(char *a, int first, char *other, size_t len, struct frame *fa);

/* Where address k sits: its cache slot, lock stripe and owed[] slot. */
struct placement {
	__u32 slot, stripe, owed;
};

/* Sends f on CPU 1, one frame a run, until told to stop, keeping count. */
struct flooder {
	const struct frame *f;
	volatile int stop;
	__u64 sent;     /* frames whose run has returned */
	int err;
};

void *flood(void *arg);

/* Run f through the program and keep what it made of the packet (and, for
 * tc, of the __sk_buff) in out. */
__u32 run_out(int fd, const struct frame *f, struct frame *out, struct __sk_buff *ctx);

#endif
