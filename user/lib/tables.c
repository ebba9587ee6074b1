// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "logic/bucket.h"
#include "lib/tables.h"
#include "logic/counters.h"
#include "logic/hash.h"

/* A zeroed buffer with one struct tb_stats per possible CPU. */
static struct tb_stats *percpu_stats(int *ncpu)
{
	*ncpu = libbpf_num_possible_cpus();
	if (*ncpu < 0) {
		errno = -*ncpu;
		return NULL;
	}
	return calloc(*ncpu, sizeof(struct tb_stats));
}

int stats_sum(const struct tb_maps *m, struct tb_stats *out)
{
	int ncpu, err = 0;
	struct tb_stats *per = percpu_stats(&ncpu);
	__u32 zero = 0;

	if (!per)
		return -errno;
	memset(out, 0, sizeof(*out));
	if (bpf_map_lookup_elem(m->stats, &zero, per)) {
		err = -errno;
	} else {
		for (int c = 0; c < ncpu; c++) {
			__u64 *dst = (__u64 *)out, *src = (__u64 *)&per[c];

			for (size_t i = 0; i < sizeof(*out) / sizeof(__u64); i++)
				dst[i] += src[i];
		}
	}
	free(per);
	return err;
}

__u64 bucket_units(const struct tb_bucket *b, const struct tb_rule *rule, __u64 now)
{
	if (b->cost != rule->cost)
		return rule->burst;
	return tb_unspend(&b->lvl, now, &rule->r, b->credit_granted, tb_credit_unspent(b->credit)) / TB_NANO;
}

__u64 bucket_peak_units(const struct tb_bucket *b, const struct tb_rule *rule, __u64 now)
{
	if (b->cost != rule->cost)
		return rule->peak_burst;
	return (rule->peak.cap - tb_peak_lack(&b->lvl, now, &rule->peak)) / TB_NANO;
}

bool bucket_long_rtt(const struct tb_bucket *b, __u64 now)
{
	__u64 h = b->lvl.hold;

	tb_hold_age(&h, b->lvl.last_ns, now);
	return h & TB_HOLD_LONG;
}

__u8 state_owed_shift(__u32 max_addrs)
{
	__u8 shift = TB_OWED_MIN_SHIFT;

	while ((1ULL << shift) < max_addrs)
		shift++;
	return shift;
}

/* Every value of array fd zeroed, a chunk of about 256 KB at a time. */
static int array_zero(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), chunk, n, *keys = NULL;
	void *zero = NULL;
	int err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;

	if (!err) {
		chunk = (256 << 10) / info.value_size + 1;
		keys = calloc(chunk, sizeof(*keys));
		zero = calloc(chunk, info.value_size);
		err = keys && zero ? 0 : -ENOMEM;
	}
	for (__u32 at = 0; !err && at < info.max_entries; at += n) {
		n = info.max_entries - at < chunk ? info.max_entries - at : chunk;
		for (__u32 i = 0; i < n; i++)
			keys[i] = at + i;
		if (bpf_map_update_batch(fd, keys, zero, &n, NULL))
			err = -errno;
	}
	free(keys);
	free(zero);
	return err;
}

int owed_zero(const struct tb_maps *m)
{
	return array_zero(m->owed);
}

int bucket_get(const struct tb_maps *m, const struct tb_config *cfg, const struct tb_addr *a,
	       struct tb_bucket *b)
{
	__u32 si = tb_set_index(tb_place_hash(cfg, a), cfg->table_shift);
	struct tb_set *set = malloc(sizeof(*set));
	int w, err = set ? 0 : -ENOMEM;

	if (!err && bpf_map_lookup_elem(m->buckets, &si, set))
		err = -errno;
	if (!err && (w = tb_way_find(set, a, cfg->ways)) < 0)
		err = -ENOENT;
	if (!err)
		*b = set->b[w];
	free(set);
	return err;
}

int buckets_foreach(const struct tb_maps *m,
		    int (*fn)(const struct tb_addr *, const struct tb_bucket *, void *), void *ctx)
{
	enum { CHUNK = 512 };
	__u32 *keys = calloc(CHUNK, sizeof(*keys)), in = 0, out = 0, count;
	struct tb_set *sets = calloc(CHUNK, sizeof(*sets));
	bool first = true, done = false;
	int err = 0, rc = 0;

	if (!keys || !sets) {
		err = -ENOMEM;
		goto out;
	}
	while (!done && !err && !rc) {
		count = CHUNK;
		if (bpf_map_lookup_batch(m->buckets, first ? NULL : &in, &out, keys, sets, &count, NULL)) {
			if (errno != ENOENT) {
				err = -errno;
				break;
			}
			done = true;
		}
		first = false;
		in = out;
		for (__u32 i = 0; i < count && !rc; i++)
			for (int w = 0; w < TB_WAYS && !rc; w++)
				if (!tb_way_free(&sets[i], w))
					rc = fn(&sets[i].key[w], &sets[i].b[w], ctx);
	}
	err = err ? err : rc < 0 ? rc : 0;
out:
	free(keys);
	free(sets);
	return err;
}

int buckets_clear(const struct tb_maps *m)
{
	return array_zero(m->buckets);
}
