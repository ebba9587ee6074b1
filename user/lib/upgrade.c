// SPDX-License-Identifier: GPL-2.0
/* Upgrades from the layout before this build's. attach keeps every map
 * whose layout did not change, so buckets and counters stay where the
 * datapath writes them and the program swap stays atomic. A map whose
 * values grew is made anew, pinned as NAME:pending and renamed over the
 * old pin once the new program is hooked and the map filled. One the
 * datapath only reads is copied before the hook (the old program, until
 * then, reads the old map, whose contents are the same). Shared buckets
 * and the global counters, which the older program writes until the
 * swap, are merged once it has settled (tb_migrate, bpf/tb.bpf.c):
 * shared buckets stand empty until then, since the new program cannot
 * reach the older map (the kernel nests no map with a spin lock). Maps
 * the older layout pinned and this one has not are unpinned last. A kill
 * anywhere leaves pins that the next attach finishes or does again. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "logic/order.h"
#include "lib/ctlprog.h"
#include "lib/hook.h"
#include "lib/state.h"
#include "lib/upgrade.h"
#include "tb.skel.h"

#define TB_MAP_WRITTEN(name, type, key, value, written) written,
static const bool datapath_writes[] = { TB_MAPS(TB_MAP_WRITTEN) };

enum {
	BUCKETS = offsetof(struct tb_maps, buckets) / sizeof(int),
	CONFIG = offsetof(struct tb_maps, config) / sizeof(int),
	SHARED = offsetof(struct tb_maps, shared) / sizeof(int),
	STATS = offsetof(struct tb_maps, stats) / sizeof(int),
};

/* Of the maps the datapath writes, how much of a value every layout has,
 * for those an upgrade merges or takes over when they change; 0 for the
 * others, which both programs must share during the swap. */
static __u32 movable_common(int i)
{
	switch (i) {
	case BUCKETS:
		return sizeof(struct tb_set);
	case SHARED:
		return offsetof(struct tb_shared, b) + TB_BUCKET_COMMON;
	case STATS:
		return TB_STATS_COMMON;
	}
	return 0;
}

static char error_msg[256];

const char *upgrade_error(void)
{
	return error_msg;
}

static void pin_of(const char *dev, int i, bool pending, char *buf, size_t len)
{
	char dir[PATH_MAX];

	state_dir(dev, dir, sizeof(dir));
	snprintf(buf, len, "%s/%s%s", dir, tb_map_names[i], pending ? TB_PENDING : "");
}

static const char *path_of(const char *dev, int i, bool pending, char *buf, size_t len)
{
	pin_of(dev, i, pending, buf, len);
	return buf;
}

/* Rename map i's pending pin over its pin; ENOENT: nothing pending. */
static int settle_one(const char *dev, int i)
{
	char from[PATH_MAX + 64], to[PATH_MAX + 64];

	pin_of(dev, i, true, from, sizeof(from));
	pin_of(dev, i, false, to, sizeof(to));
	return rename(from, to) ? -errno : 0;
}

/* Every pending pin over its pin: the table next to last and the config
 * last. Until the config's, the next attach upgrades from the older
 * config again, taking up what is still pending: a table taken over must
 * then still be the older one at its pin. */
static int settle_all(const char *dev)
{
	int order[TB_N_MAPS], n = 0, err = 0;

	for (int i = 0; i < tb_map_count; i++)
		if (i != BUCKETS && i != CONFIG)
			order[n++] = i;
	order[n++] = BUCKETS;
	order[n++] = CONFIG;
	for (int k = 0; k < n && !err; k++) {
		err = settle_one(dev, order[k]);
		err = err == -ENOENT ? 0 : err;
	}
	return err;
}

int upgrade_resume(const char *dev, __u32 prog_id, bool *finished)
{
	char path[PATH_MAX + 64];
	bool any = false, live = false;
	int err = 0;

	*finished = false;
	for (int i = 0; i < tb_map_count; i++) {
		int fd;

		pin_of(dev, i, true, path, sizeof(path));
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		any = true;
		live |= prog_uses(prog_id, fd);
		close(fd);
	}
	if (!any)
		return 0;
	/* The maps of one load are all used by its program, or none. */
	if (live) {
		/* Not merged yet: the upgrade that attach now does again
		 * takes the pending maps up and finishes. */
		for (int i = 0; i < tb_map_count; i++) {
			pin_of(dev, i, true, path, sizeof(path));
			if (movable_common(i) && !access(path, F_OK))
				return 0;
		}
		err = settle_all(dev);
		*finished = !err;
		return err;
	}
	for (int i = 0; i < tb_map_count; i++) {
		pin_of(dev, i, true, path, sizeof(path));
		if (unlink(path) && errno != ENOENT && !err)
			err = -errno;
	}
	return err;
}

void upgrade_moves_init(struct upgrade_moves *mv)
{
	memset(mv, 0, sizeof(*mv));
	for (int i = 0; i < tb_map_count; i++)
		mv->old[i] = -1;
}

static void upgrade_moves_close(struct upgrade_moves *mv)
{
	for (int i = 0; i < tb_map_count; i++) {
		if (mv->old[i] >= 0)
			close(mv->old[i]);
		mv->old[i] = -1;
	}
}

/* Whether map i of this layout can take over old map info, and if so
 * binds the older map for the merge to read. */
static int plan_move(struct tb *skel, int i, struct bpf_map *map, const struct bpf_map_info *info, int fd)
{
	if (info->type != bpf_map__type(map) || info->key_size != bpf_map__key_size(map) ||
	    info->max_entries != bpf_map__max_entries(map))
		return -EPROTO;
	if (!datapath_writes[i])
		return info->type == BPF_MAP_TYPE_PERCPU_ARRAY ? -EPROTO : 0;
	if (!movable_common(i) || info->value_size < movable_common(i) ||
	    info->value_size > bpf_map__value_size(map))
		return -EPROTO;
	/* The older table goes into table_prev once it exists. */
	return i == BUCKETS ? 0 : bpf_map__reuse_fd(i == SHARED ? skel->maps.shared_prev : skel->maps.stats_prev, fd);
}

#define TB_MAP_OF_SKEL(name, type, key, value, written) skel->maps.name,

int upgrade_plan(const char *dev, struct tb *skel, const struct tb_config *cfg, struct upgrade_moves *mv)
{
	/* By the skeleton: a map bound to an older one takes its name. */
	struct bpf_map *maps[] = { TB_MAPS(TB_MAP_OF_SKEL) };
	char path[PATH_MAX + 64];
	int err = 0;

	upgrade_moves_init(mv);
	/* A table placed otherwise than this build places a fresh one is
	 * taken over into a new one, under a new config. */
	mv->replace = cfg->place != TB_PLACE_SIPHASH;
	for (int i = 0; i < tb_map_count && !err; i++) {
		struct bpf_map *map = maps[i];
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		int fd;

		pin_of(dev, i, false, path, sizeof(path));
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;       /* new in this layout: the load makes it */
		if (!map || bpf_obj_get_info_by_fd(fd, &info, &len)) {
			err = map ? -errno : -ENOENT;
			close(fd);
			break;
		}
		if (info.type == bpf_map__type(map) && info.key_size == bpf_map__key_size(map) &&
		    info.value_size == bpf_map__value_size(map) &&
		    info.max_entries == bpf_map__max_entries(map) &&
		    !(mv->replace && (i == BUCKETS || i == CONFIG))) {
			close(fd);      /* kept: the load reuses it */
			continue;
		}
		err = plan_move(skel, i, map, &info, fd);
		if (err == -EPROTO) {
			snprintf(error_msg, sizeof(error_msg),
				 "map %s changed (type %u, key %u, value %u bytes, %u entries; this build's: "
				 "%u, %u, %u, %u) in a way no upgrade carries", tb_map_names[i], info.type,
				 info.key_size, info.value_size, info.max_entries, bpf_map__type(map),
				 bpf_map__key_size(map), bpf_map__value_size(map), bpf_map__max_entries(map));
		}
		if (err) {
			close(fd);
			break;
		}
		mv->old[i] = fd;
		pin_of(dev, i, true, path, sizeof(path));
		/* A pending map a killed upgrade left, which the program on
		 * the device already uses, is taken up again. */
		mv->fresh[i] = access(path, F_OK);
		err = bpf_map__set_pin_path(map, path);
	}
	if (!err && mv->replace && mv->old[CONFIG] >= 0 && !mv->fresh[CONFIG]) {
		/* Taken up again: the new table is placed by the key in the
		 * new config, which the program on the device reads. */
		int fd = bpf_obj_get(path_of(dev, CONFIG, true, path, sizeof(path)));

		err = fd < 0 ? -errno : state_config_get(fd, &mv->pending);
		mv->redo = !err;
		if (fd >= 0)
			close(fd);
	}
	/* The older table is the template of table_prev's inner map. */
	if (!err && mv->replace && mv->old[BUCKETS] >= 0)
		err = bpf_map__set_inner_map_fd(skel->maps.table_prev, mv->old[BUCKETS]);
	if (err)
		upgrade_moves_close(mv);
	return err;
}

int upgrade_config(const struct upgrade_moves *mv, struct tb_config *cfg)
{
	if (!mv->replace)
		return 0;
	if (mv->redo) {
		/* Only programs of this build run: no older one to share
		 * the older table with. */
		*cfg = mv->pending;
		cfg->take_over = TB_TAKE_MARK;
	} else {
		if (state_random(cfg->place_key, sizeof(cfg->place_key)))
			return -errno;
		cfg->prev_place = cfg->place;
		cfg->place = TB_PLACE_SIPHASH;
		cfg->take_over = TB_TAKE_SHARE;
	}
	cfg->prev_owed_until = ~0ULL;
	return 0;
}

static void translate(void *to, __u32 to_size, const void *from, __u32 from_size)
{
	memset(to, 0, to_size);
	memcpy(to, from, from_size < to_size ? from_size : to_size);
}

/* An array whole, in two batched calls each way (a copy entry by entry
 * would cost three calls for each of 16,384 rule slots). */
static int copy_array(int from, int to, const struct bpf_map_info *fi, const struct bpf_map_info *ti,
		      void (*fix)(void *value))
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 *keys = calloc(fi->max_entries, sizeof(*keys)), n, got = 0, in = 0, out = 0;
	char *fv = calloc(fi->max_entries, fi->value_size), *tv = calloc(fi->max_entries, ti->value_size);
	int err = keys && fv && tv ? 0 : -ENOMEM;

	while (!err && got < fi->max_entries) {
		n = fi->max_entries - got;
		err = bpf_map_lookup_batch(from, got ? &in : NULL, &out, keys + got,
					   fv + (size_t)got * fi->value_size, &n, &opts) ? -errno : 0;
		got += n;
		in = out;
	}
	if (err == -ENOENT)
		err = 0;
	for (__u32 k = 0; !err && k < got; k++) {
		translate(tv + (size_t)k * ti->value_size, ti->value_size, fv + (size_t)k * fi->value_size,
			  fi->value_size);
		if (fix)
			fix(tv + (size_t)k * ti->value_size);
	}
	n = got;
	if (!err && got && bpf_map_update_batch(to, keys, tv, &n, &opts))
		err = -errno;
	free(keys);
	free(fv);
	free(tv);
	return err;
}

int upgrade_copy_map(int from, int to)
{
	struct bpf_map_info fi = {}, ti = {};
	__u32 len = sizeof(fi);
	void *key, *next, *fv, *tv;
	int err = 0;

	if (bpf_obj_get_info_by_fd(from, &fi, &len))
		return -errno;
	len = sizeof(ti);
	if (bpf_obj_get_info_by_fd(to, &ti, &len))
		return -errno;
	if (fi.type == BPF_MAP_TYPE_ARRAY)
		return copy_array(from, to, &fi, &ti, NULL);
	key = calloc(1, fi.key_size);
	next = calloc(1, fi.key_size);
	fv = calloc(1, fi.value_size);
	tv = calloc(1, ti.value_size);
	if (!key || !next || !fv || !tv)
		err = -ENOMEM;
	for (void *prev = NULL; !err && !bpf_map_get_next_key(from, prev, next); prev = key) {
		memcpy(key, next, fi.key_size);
		if (bpf_map_lookup_elem(from, key, fv)) {
			if (errno == ENOENT)
				continue;       /* deleted meanwhile */
			err = -errno;
			break;
		}
		translate(tv, ti.value_size, fv, fi.value_size);
		if (bpf_map_update_elem(to, key, tv, BPF_ANY))
			err = -errno;
	}
	if (!err && errno != ENOENT)
		err = -errno;
	free(key);
	free(next);
	free(fv);
	free(tv);
	return err;
}

/* A new shared bucket as the older one is, but moved and without
 * counters: until tb_migrate merges them, shared traffic is denied rather
 * than given a fresh burst, and each rule keeps its unit. The older map
 * is read without its locks: the level and counters read are dropped. */
static void stand_in(void *value)
{
	struct tb_shared *sh = value;

	sh->b.lvl = (struct tb_level){ .last_ns = TB_MOVED_NS };
	sh->b.empty_ns = 0;
	memset(&sh->b.c, 0, sizeof(sh->b.c));
}

static int shared_stand_in(int from, int to)
{
	struct bpf_map_info fi = {}, ti = {};
	__u32 len = sizeof(fi);

	if (bpf_obj_get_info_by_fd(from, &fi, &len))
		return -errno;
	len = sizeof(ti);
	if (bpf_obj_get_info_by_fd(to, &ti, &len))
		return -errno;
	return copy_array(from, to, &fi, &ti, stand_in);
}

int upgrade_copy(const struct upgrade_moves *mv, struct tb *skel)
{
	struct tb_maps m;
	int err = 0;

	maps_from_skel(skel, &m);
	for (int i = 0; i < tb_map_count && !err; i++) {
		/* A map taken up again is live already: left as it is. */
		if (mv->old[i] < 0 || !mv->fresh[i])
			continue;
		if (!datapath_writes[i])
			err = upgrade_copy_map(mv->old[i], m.fd[i]);
		else if (i == SHARED)
			err = shared_stand_in(mv->old[i], m.fd[i]);
	}
	if (!err && mv->old[BUCKETS] >= 0) {
		__u32 zero = 0;

		if (bpf_map_update_elem(bpf_map__fd(skel->maps.table_prev), &zero, &mv->old[BUCKETS], BPF_ANY))
			err = -errno;
	}
	return err;
}

/* Until it returns, no CPU still runs a program the hook held before:
 * programs run under RCU, and MEMBARRIER_CMD_GLOBAL waits for a grace
 * period. Where the kernel refuses it (nohz_full), a second is far
 * longer than any program runs. */
static void grace_period(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		nanosleep(&(struct timespec){ .tv_sec = 1 }, NULL);
}

static int migrate(struct tb *skel, struct tb_migrate_req *req)
{
	struct frame { struct tb_migrate_req req; unsigned char pad[64 - sizeof(*req)]; } f = { *req };
	int err = ctlprog_run(skel->progs.tb_migrate, &f, sizeof(f), true);

	*req = f.req;
	return err;
}

static int config_write(struct tb *skel, const struct tb_config *cfg)
{
	__u32 zero = 0;

	/* As state_write_config: it publishes what was written before it. */
	tb_wmb();
	return bpf_map_update_elem(bpf_map__fd(skel->maps.config), &zero, cfg, BPF_ANY) ? -errno : 0;
}

/* The phases of a take-over (enum tb_take_over), each once the one before
 * has settled; then the rest of the older table moved, and the older
 * table dropped. */
static int take_over(struct tb *skel, struct tb_config *cfg)
{
	struct tb_migrate_req req = { .table = 1 };
	__u32 zero = 0;
	int err = 0;

	if (cfg->take_over == TB_TAKE_SHARE) {
		cfg->take_over = TB_TAKE_MARK;
		err = config_write(skel, cfg);
		grace_period();
	}
	if (!err) {
		cfg->take_over = TB_TAKE_OVER;
		err = config_write(skel, cfg);
	}
	if (!err)
		err = migrate(skel, &req);
	if (!err) {
		cfg->take_over = TB_TAKE_NONE;
		cfg->prev_owed_until = req.owed_max;
		err = config_write(skel, cfg);
	}
	if (!err && bpf_map_delete_elem(bpf_map__fd(skel->maps.table_prev), &zero))
		err = -errno;
	return err;
}

int upgrade_finish(const struct upgrade_moves *mv, struct tb *skel, struct tb_config *cfg)
{
	struct tb_migrate_req req = {
		.shared = mv->old[SHARED] >= 0,
		.stats_cpus = mv->old[STATS] >= 0 ? libbpf_num_possible_cpus() : 0,
	};
	int err = 0;

	if (!req.shared && !req.stats_cpus && mv->old[BUCKETS] < 0)
		return 0;
	grace_period();
	if (req.shared || req.stats_cpus)
		err = migrate(skel, &req);
	if (!err && mv->old[BUCKETS] >= 0)
		err = take_over(skel, cfg);
	return err;
}

int upgrade_abandon(const char *dev, struct upgrade_moves *mv)
{
	char path[PATH_MAX + 64];
	int err = 0;

	/* Only what this load made: pending maps a killed upgrade left are
	 * in use by the program on the device. */
	for (int i = 0; i < tb_map_count; i++) {
		pin_of(dev, i, true, path, sizeof(path));
		if (mv->old[i] >= 0 && mv->fresh[i] && unlink(path) && errno != ENOENT && !err)
			err = -errno;
	}
	upgrade_moves_close(mv);
	return err;
}

int upgrade_settle(const char *dev, struct upgrade_moves *mv, struct tb *skel, struct tb_config *cfg)
{
	bool moved = false;
	int err = upgrade_finish(mv, skel, cfg);

	for (int i = 0; i < tb_map_count; i++)
		moved |= mv->old[i] >= 0;
	upgrade_moves_close(mv);
	return err ? err : moved ? settle_all(dev) : 0;
}

int upgrade_maps(const char *dev, const struct tb_maps *m, struct tb_config *cfg)
{
	int err = state_unpin(dev, false);

	if (err)
		return err;
	cfg->layout = TB_LAYOUT;
	return state_write_config(m, cfg);
}
