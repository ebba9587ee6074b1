/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TB_STATE_H
#define TB_STATE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include "abi/tb_abi.h"
#include "logic/table.h"

/* File descriptors of the datapath's maps, from a skeleton or from pins. */
#define TB_MAP_FD(name, type, key, value, written) int name;
#define TB_MAP_COUNT(name, type, key, value, written) +1
enum { TB_N_MAPS = 0 TB_MAPS(TB_MAP_COUNT) };

/* By name, or all at once as fd[], in TB_MAPS order. */
struct tb_maps {
	union {
		struct {
			TB_MAPS(TB_MAP_FD)
		};
		int fd[TB_N_MAPS];
	};
};

/* Everything tbctl keeps lives under TB_PIN_ROOT/DEV:NETNS (devkey.h):
 * the maps, pinned by name, so each invocation is stateless and state
 * outlives the CLI. Every function here that takes a dev takes a bare
 * device name (this namespace's) or a key (state_foreach_device's). */
#define TB_PIN_ROOT "/sys/fs/bpf/tbctl"
#define TB_BPFFS "/sys/fs/bpf"
/* bpffs holds no regular files, so the per-device lock lives here. */
#define TB_LOCK_DIR "/run/tbctl"

struct bpf_object;
struct bpf_program;
struct tb;

extern const char *const tb_map_names[];
extern const int tb_map_count;

/* The policing maps of any object built on bpf/stages/maps.h, by name. */
void maps_from_obj(struct bpf_object *obj, struct tb_maps *m);
/* tbctl's own object's: by the skeleton, since during an upgrade maps
 * bound to older ones bear their names (bpf_map__reuse_fd). */
void maps_from_skel(const struct tb *skel, struct tb_maps *m);
void maps_close(struct tb_maps *m);
int bpffs_ensure(void);
/* What bpffs_ensure's error err means, for a message. */
const char *bpffs_error(int err);
/* The BPF object (opened, not loaded) with its maps bound to dev's pins,
 * which a load reuses when they exist and creates when not; the table and
 * owed[] sized for max_addrs. */
struct tb *open_pinned(const char *dev, __u32 max_addrs);
/* Leave out of skel's load the hook programs but hook (NULL: both): the
 * verifier takes a tenth of a second over each, and more than a second on
 * an emulated machine; the programs run through BPF_PROG_TEST_RUN are
 * small. */
void state_load_hook(struct tb *skel, const struct bpf_program *hook);
/* Pin the config of skel, loaded by open_pinned, if it is not pinned yet:
 * the last pin an attach makes. 0 or -errno. */
int state_pin_config(const char *dev, struct tb *skel);
void state_dir(const char *dev, char *buf, size_t len);
/* Where dev's tcx link is pinned, beside its maps (lib/tcx.h). */
void state_link_pin(const char *dev, char *buf, size_t len);
/* Where an upgrade pins a map's new copy until the program that uses it
 * is hooked: then it is renamed over the old map's pin. */
#define TB_PENDING ":pending"
/* Whether dev has a pin directory. */
bool state_pinned(const char *dev);
/* len bytes from getrandom(), for the keys attach draws; -1 with errno. */
int state_random(void *buf, size_t len);
/* A pin directory without a config pin: what an attach killed while it
 * pinned its maps leaves. */
bool state_unfinished(const char *dev);
/* fn for every key with pins under TB_PIN_ROOT, in every namespace;
 * the results or'ed. */
int state_foreach_device(int (*fn)(const char *dev, void *ctx), void *ctx);
/* TB_PIN_ROOT holds every device's pins, and the detach of the last one
 * removes it: an attach of another device must not see it go between
 * making it and pinning its maps into it. state_pins_begin makes it and
 * returns a descriptor that holds TB_LOCK_DIR's flock shared, to give to
 * state_pins_end once the load has pinned the maps (or failed), or
 * -errno; state_pins_prune removes the root when it is empty and no
 * attach holds that lock. */
int state_pins_begin(void);
void state_pins_end(int fd);
void state_pins_prune(void);
/* Remove dev's pins: all of them (and the emptied directory), or only
 * those that are no map of this layout, pending or not (what an older
 * layout pinned). 0, or the first failure as -errno. */
int state_unpin(const char *dev, bool all);
/* Serialise tbctl invocations on one device (flock, released at exit,
 * or by state_unlock). */
int state_lock(const char *dev);
void state_unlock(const char *dev);
/* Whether this process holds dev's lock. */
bool state_locked(const char *dev);
/* Wait up to wait_ms for no other tbctl to hold dev's lock: what a
 * reader that found dev's pins half made or half removed does before
 * reading again, to tell an attach or detach in progress from one that
 * was interrupted. False when the lock is still held. */
bool state_settled(const char *dev, int wait_ms);
/* Open the pinned maps; -ENOENT when dev is not attached, -ESTALE when
 * they are the layout before this build's (attach upgrades them),
 * -EPROTONOSUPPORT when older still (attach ... replace starts over),
 * -EPROTO when newer or otherwise laid out (state_layout_error says how). */
int state_open(const char *dev, struct tb_maps *m);
/* While on, state_open opens and checks each device's pins once and hands
 * out copies of its descriptors (for -batch, which holds the locks);
 * state_forget drops them, as every change of the pins must. */
void state_keep(bool on);
void state_forget(void);
const char *state_layout_error(void);
/* What to do about pins too old to upgrade (-EPROTONOSUPPORT). */
const char *state_too_old(const char *dev);
/* Why state_open (or state_open_config) failed with err, for dev, in
 * buf: what to do about pins of another build among it. */
const char *state_open_why(const char *dev, int err, char *buf, size_t len);
/* Open the config and the rule maps of pins of any layout whose rules
 * this build reads, and the manual ban lists where it has them (the rest
 * of m -1), for attach ... replace; -EPROTO with state_layout_error()
 * saying why when it reads them not. */
int state_open_rules(const char *dev, struct tb_maps *m);
/* Open the pinned config alone (what detach and upgrades need, whatever
 * else the pins hold), of any layout, and read it by the beginning every
 * layout shares (fields it lacks read 0). */
int state_open_config(const char *dev, int *fd);
int state_config_get(int fd, struct tb_config *cfg);
int state_read_config(const struct tb_maps *m, struct tb_config *cfg);
/* Write it back (the caller holds the device's lock). 0 or -errno. */
int state_write_config(const struct tb_maps *m, const struct tb_config *cfg);
#endif
