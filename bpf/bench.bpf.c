/* SPDX-License-Identifier: GPL-2.0 */
/* Benchmark programs (tools/tbbench): reference points for tbctl's cost,
 * the policing core driven over synthetic addresses, and a kernel-side
 * traffic generator. Not loaded by tbctl. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "stages/policy.h"

/* The least any per-address policer must do: parse, read the clock, find
 * the address's state in a bounded kernel table (an LRU hash) and write
 * it. Its state is one word, unless tbbench gives it a larger value (up to a
 * struct tb_bucket): then it shows what the size of tbctl's state alone
 * costs over many addresses. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TB_DEFAULT_MAX_ADDRS);
	__type(key, struct tb_addr);
	__type(value, __u64);
} floor_state SEC(".maps");

SEC("xdp")
int bench_empty(struct xdp_md *ctx)
{
	return XDP_PASS;
}

static __always_inline void floor_addr(const struct tb_addr *key, __u64 now)
{
	__u64 *v = bpf_map_lookup_elem(&floor_state, key);

	if (v) {
		*v = now;
	} else {
		__u64 nv[sizeof(struct tb_bucket) / sizeof(__u64)] = { now };

		bpf_map_update_elem(&floor_state, key, nv, BPF_ANY);
	}
}

SEC("xdp")
int bench_floor(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct tb_pkt pkt = {};
	int cls = tb_parse(data, data_end, 0, &pkt);

	if (cls == TB_CLASS_IPV4 || cls == TB_CLASS_IPV6)
		floor_addr(&pkt.key, bpf_ktime_get_ns());
	return XDP_PASS;
}

/* Many addresses: one run visits many_n addresses 2001:db8:0:X::j (X =
 * j mod 10,000, so 10,000 /64 rules can cover them), each once, in the
 * order many_index gives. */
const volatile __u32 many_n = 1 << 20;
const volatile __u8 many_floor = 0;
/* Bytes each visit charges: a full frame lets tbbench empty every
 * bucket's minimum burst with one visit (a spoofed flood, all over). */
const volatile __u16 many_len = 64;
/* Runs so far: the first creates every address's state. */
__u32 many_run = 0;

/* The j that run r visits i-th. The first run strides the whole table (i
 * times an odd constant, mod 2^k, is a permutation). Every later run
 * visits in an order of its own, unrelated to the first's: the kernel
 * hands out a table's elements in the order addresses are created, so
 * visiting them again in that order would reach memory in a sequence
 * the prefetchers follow. Each step is a permutation of k-bit numbers. */
static __always_inline __u32 many_index(__u32 i, __u32 r)
{
	__u32 m = many_n - 1, x = (i * 2654435761u) & m;

	if (!r)
		return x;
	x ^= x >> 7;
	x = (x * 0x2c1b3c6du) & m;
	return x ^ ((r * 0x9e3779b9u) & m);
}

struct many_ctx {
	struct tb_stats *st;
	struct tb_config *cfg;
	__u32 run;
};

/* The terms of many_police's packet: in .bss rather than on its stack,
 * which with bench_many's, the loop's and tb_charge_total's would pass
 * the 512 bytes a chain of calls may take. bench_many runs on one CPU. */
static struct tb_terms many_terms;

/* Global, so the verifier checks it once on its own: inlined into the
 * loop's callback, newer verifiers explore the policing core once per
 * pass of their loop analysis and exceed the instruction limit. */
__attribute__((noinline)) int many_police(struct tb_stats *st, struct tb_config *cfg, __u32 j)
{
	struct tb_addr key = { .w = { tb_htonl(0x20010db8), tb_htonl(j % 10000), 0, tb_htonl(j) } };
	__u64 now = bpf_ktime_get_ns();
	__u64 depart;

	if (!st || !cfg)
		return 0;
	if (many_floor) {
		floor_addr(&key, now);
	} else {
		__builtin_memset(&many_terms, 0, sizeof(many_terms));
		tb_police_addr(st, cfg, &key, TB_CLASS_IPV6, 0, many_len, 1, &many_terms, now, &depart);
	}
	return 0;
}

static long many_step(__u32 i, void *arg)
{
	struct many_ctx *c = arg;

	many_police(c->st, c->cfg, many_index(i, c->run));
	return 0;
}

SEC("xdp")
int bench_many(struct xdp_md *ctx)
{
	struct many_ctx c;
	__u32 zero = 0;

	c.st = bpf_map_lookup_elem(&stats, &zero);
	c.cfg = bpf_map_lookup_elem(&config, &zero);
	if (!c.st || !c.cfg)
		return XDP_ABORTED;
	c.run = many_run++;
	bpf_loop(many_n, many_step, &c, 0);
	return XDP_PASS;
}

/* Generator, run with BPF_F_TEST_XDP_LIVE_FRAMES over an IPv4/UDP
 * template: stamp one of gen_sources source addresses (the block of that
 * size holding the template's) on each frame, fix the IPv4 checksum, and send it out of
 * gen_ifindex (a veth: the frame arrives at its peer). */
const volatile __u32 gen_ifindex = 0;
const volatile __u32 gen_sources = 1;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gen_seq SEC(".maps");

SEC("xdp")
int bench_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);
	__u32 zero = 0, *seq = bpf_map_lookup_elem(&gen_seq, &zero), csum = 0;
	__u16 *w = (__u16 *)ip;

	if (!seq || (void *)(ip + 1) > data_end)
		return XDP_ABORTED;
	/* gen_sources is a power of two; an odd multiplier visits every
	 * address of the block once per round, in a scattered order. */
	ip->saddr = tb_htonl((tb_htonl(ip->saddr) & ~(gen_sources - 1)) | ((*seq * 2654435761u) & (gen_sources - 1)));
	(*seq)++;
	ip->check = 0;
	for (int i = 0; i < 10; i++)
		csum += w[i];
	csum = (csum & 0xffff) + (csum >> 16);
	csum = (csum & 0xffff) + (csum >> 16);
	ip->check = ~csum;
	return bpf_redirect(gen_ifindex, 0);
}

char LICENSE[] SEC("license") = "GPL";
