// SPDX-License-Identifier: GPL-2.0
/* tbctl's persistent state: bpffs pins, the per-device lock, and the
 * layout check that opens them. */
#include <dirent.h>
#include <errno.h>
#include <sys/random.h>
#include <stdbool.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/grow.h"
#include "lib/devkey.h"
#include "lib/order.h"
#include "lib/state.h"
#include "lib/tables.h"
#include "tb.skel.h"
#include "logic/order.h"
#include "logic/sizing.h"

#define TB_MAP_NAME(name, type, key, value, written) #name,
const char *const tb_map_names[] = { TB_MAPS(TB_MAP_NAME) };
const int tb_map_count = TB_N_MAPS;

void maps_from_obj(struct bpf_object *obj, struct tb_maps *m)
{
	for (int i = 0; i < tb_map_count; i++)
		m->fd[i] = bpf_object__find_map_fd_by_name(obj, tb_map_names[i]);
}

#define TB_MAP_SKEL_FD(name, type, key, value, written) m->name = bpf_map__fd(skel->maps.name);
void maps_from_skel(const struct tb *skel, struct tb_maps *m)
{
	TB_MAPS(TB_MAP_SKEL_FD)
}

void maps_close(struct tb_maps *m)
{
	for (int i = 0; i < tb_map_count; i++)
		if (m->fd[i] >= 0)
			close(m->fd[i]);
}

int bpffs_ensure(void)
{
	struct statfs st;

	if (!statfs(TB_BPFFS, &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", TB_BPFFS, "bpf", 0, "mode=0700"))
		return -errno;
	return 0;
}

const char *state_open_why(const char *dev, int err, char *buf, size_t len)
{
	if (err == -ENOENT)
		snprintf(buf, len, "not attached");
	else if (err == -EPROTO)
		snprintf(buf, len, "the pinned maps are another tbctl build's (%s); detach, then attach with this build",
			 state_layout_error());
	else if (err == -ESTALE)
		snprintf(buf, len, "the pinned maps are an older tbctl build's (%s); tbctl attach dev %s upgrades them",
			 state_layout_error(), dev);
	else if (err == -EPROTONOSUPPORT)
		snprintf(buf, len, "%s", state_too_old(dev));
	else
		snprintf(buf, len, "open pinned maps: %s", strerror(-err));
	return buf;
}

const char *bpffs_error(int err)
{
	return err == -EPERM ? "not mounted, and mounting it takes CAP_SYS_ADMIN" : strerror(-err);
}

/* The name of dev's pin directory and lock (devkey.h): its key, or for
 * pins keyed by name alone, the name. */
static void pin_name(const char *dev, char *buf, size_t len)
{
	devkey_make(dev, buf, len);
	if (devkey_unkeyed(buf))
		buf[strlen(buf) - 1] = 0;
}

int state_foreach_device(int (*fn)(const char *dev, void *ctx), void *ctx)
{
	DIR *d = opendir(TB_PIN_ROOT);
	char key[DEVKEY_MAX];
	struct dirent *e;
	int rc = 0;

	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (e->d_name[0] == '.' || n >= DEVKEY_MAX - 1)
			continue;
		memcpy(key, e->d_name, n + 1);
		/* Pins keyed by the name alone: "DEV:" (devkey.h). */
		if (!strchr(key, ':'))
			memcpy(key + n, ":", 2);
		rc |= fn(key, ctx);
	}
	if (d)
		closedir(d);
	return rc;
}

void state_dir(const char *dev, char *buf, size_t len)
{
	char name[DEVKEY_MAX];

	pin_name(dev, name, sizeof(name));
	snprintf(buf, len, "%s/%s", TB_PIN_ROOT, name);
}

#define TB_LINK_PIN "tcx_link"

void state_link_pin(const char *dev, char *buf, size_t len)
{
	char dir[PATH_MAX];

	state_dir(dev, dir, sizeof(dir));
	snprintf(buf, len, "%s/%s", dir, TB_LINK_PIN);
}

struct tb *open_pinned(const char *dev, __u32 max_addrs)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct tb *skel = tb__open();

	if (!skel)
		return NULL;
	skel->rodata->tb_acq_rel = order_acq_rel();
	bpf_map__set_max_entries(skel->maps.buckets, 1U << tb_table_shift(max_addrs));
	bpf_map__set_max_entries(skel->maps.owed, 1U << state_owed_shift(max_addrs));
	bpf_map__set_max_entries(skel->maps.fleet, max_addrs);
	state_dir(dev, dir, sizeof(dir));
	/* The maps of TB_MAPS; an upgrade's other maps are the load's own.
	 * A config not pinned yet is pinned by attach after the load pinned
	 * the rest (state_pin_config): pins without one are an attach that
	 * was stopped, whatever order the object lists its maps in. */
	for (int i = 0; i < tb_map_count; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, tb_map_names[i]);
		if (strcmp(tb_map_names[i], "config") || !access(path, F_OK))
			bpf_map__set_pin_path(bpf_object__find_map_by_name(skel->obj, tb_map_names[i]), path);
	}
	return skel;
}

void state_load_hook(struct tb *skel, const struct bpf_program *hook)
{
	bpf_program__set_autoload(skel->progs.tb_xdp, skel->progs.tb_xdp == hook);
	bpf_program__set_autoload(skel->progs.tb_tc, skel->progs.tb_tc == hook);
}

int state_pin_config(const char *dev, struct tb *skel)
{
	char path[PATH_MAX + 32];
	int err;

	if (bpf_map__is_pinned(skel->maps.config))
		return 0;
	state_dir(dev, path, sizeof(path));
	strcat(path, "/config");
	err = bpf_map__pin(skel->maps.config, path);
	return err < 0 ? err : 0;
}

/* path, in TB_LOCK_DIR (made when missing), opened with flags and
 * flock()ed with op: the descriptor, or -errno. */
static int lock_open(const char *path, int flags, int op)
{
	int fd, err;

	if (mkdir(TB_LOCK_DIR, 0700) && errno != EEXIST)
		return -errno;
	fd = open(path, flags | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, op)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int state_pins_begin(void)
{
	int fd = lock_open(TB_LOCK_DIR, O_RDONLY | O_DIRECTORY, LOCK_SH);

	if (fd < 0)
		return fd;
	/* A failure here (no bpffs, read-only) is the load's to report. */
	mkdir(TB_PIN_ROOT, 0700);
	return fd;
}

void state_pins_end(int fd)
{
	if (fd >= 0)
		close(fd);
}

void state_pins_prune(void)
{
	int fd = open(TB_LOCK_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	/* No lock directory: no attach has begun, and one that begins makes
	 * the root again. */
	if (fd < 0 || !flock(fd, LOCK_EX | LOCK_NB))
		rmdir(TB_PIN_ROOT);   /* only when no other device is attached */
	state_pins_end(fd);
}

/* A pin an upgrade keeps: a map of this layout's, or its copy pending,
 * and the tcx link, which holds the hooked program. */
static bool layout_pin(const char *name)
{
	size_t n;

	if (!strcmp(name, TB_LINK_PIN))
		return true;
	for (int i = 0; i < tb_map_count; i++) {
		n = strlen(tb_map_names[i]);
		if (!strncmp(name, tb_map_names[i], n) && (!name[n] || !strcmp(name + n, TB_PENDING)))
			return true;
	}
	return false;
}

int state_unpin(const char *dev, bool all)
{
	char dir[PATH_MAX], path[PATH_MAX + 300];
	struct dirent *e;
	int err = 0;
	DIR *d;

	state_dir(dev, dir, sizeof(dir));
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || (!all && layout_pin(e->d_name)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) && errno != ENOENT && !err)
			err = -errno;
	}
	closedir(d);
	if (all) {
		if (rmdir(dir) && errno != ENOENT && !err)
			err = -errno;
		state_pins_prune();
	}
	return err;
}

static void lock_path(const char *dev, char *buf, size_t len)
{
	char name[DEVKEY_MAX];

	pin_name(dev, name, sizeof(name));
	snprintf(buf, len, "%s/%s.lock", TB_LOCK_DIR, name);
}

/* Device locks this process holds, until exit; -batch runs many commands
 * on one device, and a second flock on a new descriptor would wait for
 * the first forever. */
static struct held {
	char key[DEVKEY_MAX];
	int fd;
} *held;
static int nheld;
static size_t capheld;

static int held_lock(const char *dev)
{
	char key[DEVKEY_MAX];

	devkey_make(dev, key, sizeof(key));
	for (int i = 0; i < nheld; i++)
		if (!strcmp(held[i].key, key))
			return held[i].fd;
	return -1;
}

int state_lock(const char *dev)
{
	char path[PATH_MAX];
	int fd = held_lock(dev);

	if (fd >= 0)
		return fd;
	/* A lock file only for a device, or for pins left by one that is
	 * gone: names that are neither would pile up files in /run. */
	state_dir(dev, path, sizeof(path));
	if (!devkey_ifindex(dev) && access(path, F_OK))
		return -ENODEV;
	if (GROW(held, nheld, capheld, 16))
		return -ENOMEM;
	lock_path(dev, path, sizeof(path));
	fd = lock_open(path, O_RDWR | O_CREAT, LOCK_EX);
	if (fd < 0)
		return fd;
	devkey_make(dev, held[nheld].key, sizeof(held[nheld].key));
	held[nheld++].fd = fd;
	return fd;
}

bool state_locked(const char *dev)
{
	return held_lock(dev) >= 0;
}

void state_unlock(const char *dev)
{
	char key[DEVKEY_MAX];

	devkey_make(dev, key, sizeof(key));
	for (int i = 0; i < nheld; i++)
		if (!strcmp(held[i].key, key)) {
			close(held[i].fd);
			held[i] = held[--nheld];
			return;
		}
}

bool state_settled(const char *dev, int wait_ms)
{
	char path[PATH_MAX];
	int fd;
	bool free = false;

	if (held_lock(dev) >= 0)
		return true;
	lock_path(dev, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;    /* never locked: no attach or detach has run */
	/* Shared: a probe keeps no other reader out, and gives the lock
	 * back at once. */
	for (int waited = 0;; waited += 20) {
		if (!flock(fd, LOCK_SH | LOCK_NB) || errno != EWOULDBLOCK) {
			free = true;
			break;
		}
		if (waited >= wait_ms)
			break;
		usleep(20000);
	}
	close(fd);
	return free;
}

/* What this build's maps are, in struct tb_maps order: a pin of another
 * layout (another tbctl build) would be read as garbage, or overflow a
 * buffer, so it is refused before anything is read or written. */
#define TB_MAP_LAYOUT(name, type, key, value, written) { type, sizeof(key), sizeof(value) },
static const struct { __u32 type, key, value; } layout[] = { TB_MAPS(TB_MAP_LAYOUT) };

static char layout_msg[160];

const char *state_layout_error(void)
{
	return layout_msg;
}

const char *state_too_old(const char *dev)
{
	static char msg[512];

	snprintf(msg, sizeof(msg), "the pinned maps are an older tbctl build's (%s), and this build "
		 "upgrades only layout %u's; detach with the build that made them, or tbctl attach dev %s "
		 "replace starts over (the rules are kept, buckets and counters are not)", layout_msg,
		 TB_LAYOUT - 1, dev);
	return msg;
}

/* Whether map i's pin, fd, has this build's layout; or, where shorter
 * is allowed, an older layout's shorter values. */
static int check_layout(int i, int fd, bool shorter)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.type == layout[i].type && info.key_size == layout[i].key &&
	    (info.value_size == layout[i].value || (shorter && info.value_size < layout[i].value)))
		return 0;
	snprintf(layout_msg, sizeof(layout_msg),
		 "map %s has type %u, key %u and value %u bytes; this build expects %u, %u and %u",
		 tb_map_names[i], info.type, info.key_size, info.value_size, layout[i].type, layout[i].key,
		 layout[i].value);
	return -EPROTO;
}

int state_open_rules(const char *dev, struct tb_maps *m)
{
	static const int want[] = { offsetof(struct tb_maps, config), offsetof(struct tb_maps, rules),
				    offsetof(struct tb_maps, prefixes_v4), offsetof(struct tb_maps, prefixes_v6) };
	static const int matches[] = { offsetof(struct tb_maps, matches_v4), offsetof(struct tb_maps, matches_v6),
				       offsetof(struct tb_maps, nodes), offsetof(struct tb_maps, bans0_v4),
				       offsetof(struct tb_maps, bans0_v6), offsetof(struct tb_maps, bans1_v4),
				       offsetof(struct tb_maps, bans1_v6) };
	char dir[PATH_MAX], path[PATH_MAX + 32];
	int err = 0;

	state_dir(dev, dir, sizeof(dir));
	for (int i = 0; i < tb_map_count; i++)
		m->fd[i] = -1;
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]) && !err; k++) {
		int i = want[k] / sizeof(int);

		snprintf(path, sizeof(path), "%s/%s", dir, tb_map_names[i]);
		m->fd[i] = bpf_obj_get(path);
		if (m->fd[i] < 0)
			err = -errno;
		else if (i != want[0] / (int)sizeof(int))
			err = check_layout(i, m->fd[i], i == want[1] / (int)sizeof(int));
	}
	/* Rules with a match, and the bans made by hand, where the layout
	 * has them. */
	for (size_t k = 0; k < sizeof(matches) / sizeof(matches[0]) && !err; k++) {
		int i = matches[k] / sizeof(int);

		snprintf(path, sizeof(path), "%s/%s", dir, tb_map_names[i]);
		m->fd[i] = bpf_obj_get(path);
		if (m->fd[i] < 0)
			err = errno == ENOENT ? 0 : -errno;
		else
			err = check_layout(i, m->fd[i], false);
	}
	if (err) {
		maps_close(m);
		for (int i = 0; i < tb_map_count; i++)
			m->fd[i] = -1;
	}
	return err;
}

/* For the pins of an attached device: -ESTALE when the layout before
 * this build's made them, -EPROTONOSUPPORT when an older one did (or
 * placed their lock stripes before layout 9: upgraded since, they kept
 * that placement), -EPROTO for a newer build's; 0 otherwise: no config,
 * or one not yet written, claims no layout. */
static int check_version(const char *dev)
{
	struct tb_config cfg;
	__u32 layout;
	int fd, err = state_open_config(dev, &fd);

	if (err)
		return err == -ENOENT ? 0 : err;
	err = state_config_get(fd, &cfg);
	close(fd);
	if (err || !cfg.attached)
		return err;
	layout = cfg.layout ? cfg.layout : 1;
	if (layout == TB_LAYOUT)
		return 0;
	snprintf(layout_msg, sizeof(layout_msg), "the pins are layout %u%s, this build's is %u", layout,
		 cfg.place ? "" : " with lock stripes placed as before layout 9",
		 TB_LAYOUT);
	if (layout > TB_LAYOUT)
		return -EPROTO;
	return layout == TB_LAYOUT - 1 && cfg.place ? -ESTALE : -EPROTONOSUPPORT;
}

static int open_pins(const char *dev, struct tb_maps *m)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	int *fd = m->fd, err = check_version(dev);

	if (err)
		return err;
	state_dir(dev, dir, sizeof(dir));
	for (int i = 0; i < tb_map_count; i++)
		fd[i] = -1;
	/* Every pin first: a partial set is no attached device. */
	for (int i = 0; i < tb_map_count; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, tb_map_names[i]);
		fd[i] = bpf_obj_get(path);
		if (fd[i] < 0) {
			err = -errno;
			maps_close(m);
			return err;
		}
	}
	for (int i = 0; i < tb_map_count; i++) {
		err = check_layout(i, fd[i], false);
		if (err) {
			maps_close(m);
			return err;
		}
	}
	return 0;
}

/* Pins opened and checked once per device while kept (state_keep): a
 * -batch holds its devices' locks throughout, so only its own attach and
 * detach lines change their pins, and it forgets them at each. */
static struct kept {
	char key[DEVKEY_MAX];
	struct tb_maps m;
} *kept;
static int nkept;
static size_t capkept;
static bool keeping;

void state_keep(bool on)
{
	state_forget();
	keeping = on;
	if (!on) {
		free(kept);
		kept = NULL;
		capkept = 0;
	}
}

void state_forget(void)
{
	for (int i = 0; i < nkept; i++)
		maps_close(&kept[i].m);
	nkept = 0;
}

/* The caller's own descriptors for a kept set, closed by maps_close as
 * any other. */
static int maps_dup(const struct tb_maps *from, struct tb_maps *m)
{
	for (int i = 0; i < tb_map_count; i++)
		m->fd[i] = -1;
	for (int i = 0; i < tb_map_count; i++) {
		m->fd[i] = dup(from->fd[i]);
		if (m->fd[i] < 0) {
			int err = -errno;

			maps_close(m);
			return err;
		}
	}
	return 0;
}

int state_open(const char *dev, struct tb_maps *m)
{
	char key[DEVKEY_MAX];
	struct tb_maps o;
	int err;

	devkey_make(dev, key, sizeof(key));
	for (int i = 0; i < nkept; i++)
		if (!strcmp(kept[i].key, key))
			return maps_dup(&kept[i].m, m);
	err = open_pins(dev, keeping ? &o : m);
	if (err || !keeping)
		return err;
	if (GROW(kept, nkept, capkept, 4)) {
		*m = o;         /* not kept: the caller's alone */
		return 0;
	}
	snprintf(kept[nkept].key, sizeof(kept[0].key), "%s", key);
	kept[nkept++].m = o;
	return maps_dup(&o, m);
}

/* Every layout's config begins with layout 1's fields, up to the layout
 * itself (tb_abi.h): what a config of any layout is read by. A value
 * larger than TB_CONFIG_MAX is no tbctl config. */
#define TB_CONFIG_COMMON (offsetof(struct tb_config, layout) + 1)
#define TB_CONFIG_MAX 4096

int state_open_config(const char *dev, int *fd)
{
	enum { CONFIG = offsetof(struct tb_maps, config) / sizeof(int) };
	_Static_assert(offsetof(struct tb_maps, config) == CONFIG * sizeof(int), "fd[] order");
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int err = 0;

	state_dir(dev, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, tb_map_names[CONFIG]);
	*fd = bpf_obj_get(path);
	if (*fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(*fd, &info, &len))
		err = -errno;
	else if (info.type != layout[CONFIG].type || info.key_size != layout[CONFIG].key ||
		 info.value_size < TB_CONFIG_COMMON || info.value_size > TB_CONFIG_MAX)
		err = check_layout(CONFIG, *fd, false);
	if (err)
		close(*fd);
	return err;
}

int state_config_get(int fd, struct tb_config *cfg)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), zero = 0;
	char buf[TB_CONFIG_MAX];

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.value_size > sizeof(buf))
		return -EPROTO;
	if (bpf_map_lookup_elem(fd, &zero, buf))
		return -errno;
	memset(cfg, 0, sizeof(*cfg));
	memcpy(cfg, buf, info.value_size < sizeof(*cfg) ? info.value_size : sizeof(*cfg));
	return 0;
}

int state_read_config(const struct tb_maps *m, struct tb_config *cfg)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(m->config, &zero, cfg) ? -errno : 0;
}

int state_write_config(const struct tb_maps *m, const struct tb_config *cfg)
{
	__u32 zero = 0;

	/* The config publishes what was written before it (a rule before
	 * the generation that shows it, a ban list before the side that
	 * names it): the programs read it first, with acquire order. Each
	 * write is a bpf() call of its own, on whatever CPU tbctl runs. */
	tb_wmb();
	return bpf_map_update_elem(m->config, &zero, cfg, BPF_ANY) ? -errno : 0;
}

int state_random(void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom((char *)buf + got, len - got, 0);

		if (n < 0 && errno != EINTR)
			return -1;
		got += n > 0 ? n : 0;
	}
	return 0;
}

bool state_pinned(const char *dev)
{
	char dir[PATH_MAX];
	struct stat st;

	state_dir(dev, dir, sizeof(dir));
	return !stat(dir, &st);
}

bool state_unfinished(const char *dev)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct stat st;

	state_dir(dev, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/config", dir);
	return !stat(dir, &st) && stat(path, &st) && errno == ENOENT;
}
