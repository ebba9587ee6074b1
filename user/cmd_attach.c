// SPDX-License-Identifier: GPL-2.0
/* attach, detach, status: the program on the device and its pinned maps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tb.skel.h"
#include "output.h"
#include "hook.h"
#include "qdisc.h"
#include "state.h"
#include "tbctl.h"
#include "upgrade.h"

#define MAX_ADDRS_MIN 1024

static int parse_attach(int argc, char **argv, struct cmd_args *a)
{
	struct kw kws[] = { { "dev" }, { "mode" }, { "key" }, { "max-addrs" }, { "qdisc" }, { 0 } };
	static const char *const qdiscs[] = { "fq", NULL };
	const char *v;
	int err = kw_parse("attach", argc, argv, kws, NULL);

	if (err || (err = parse_dev("attach", kw_get(kws, "dev"), a)))
		return err;
	v = kw_get(kws, "mode");
	if (v && (a->mode = choose("attach", "mode", v, mode_names)) < 0)
		return EXIT_USAGE;
	a->has_mode = v;
	v = kw_get(kws, "key");
	if (v && (a->key = choose("attach", "key", v, key_names)) < 0)
		return EXIT_USAGE;
	a->has_key = v;
	v = kw_get(kws, "qdisc");
	if (v && choose("attach", "qdisc", v, qdiscs) < 0)
		return EXIT_USAGE;
	a->fq = v;
	v = kw_get(kws, "max-addrs");
	return v ? parse_count("attach", "max-addrs", v, MAX_ADDRS_MIN, MAX_ADDRS_MAX, &a->max_addrs) : 0;
}

/* Remove dev's pins; the first failure other than a pin already gone,
 * as -errno. */
static int unpin_all(const char *dev)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	int err = 0;

	state_dir(dev, dir, sizeof(dir));
	for (int i = 0; i < 2 * tb_map_count; i++) {
		/* Each map's pin, and a pin an interrupted upgrade left aside. */
		snprintf(path, sizeof(path), "%s/%s%s", dir, tb_map_names[i / 2], i % 2 ? TB_PENDING : "");
		if (unlink(path) && errno != ENOENT && !err)
			err = -errno;
	}
	if (rmdir(dir) && errno != ENOENT && !err)
		err = -errno;
	state_pins_prune();
	return err;
}

/* Detach must not take the program off and then fail to remove the pins
 * (a read-only bpffs): it checks first, and changes nothing if it cannot. */
static int pins_removable(const char *dev)
{
	char dir[PATH_MAX];

	state_dir(dev, dir, sizeof(dir));
	if (access(dir, W_OK) && errno != ENOENT) {
		out_error("detach dev %s: cannot remove the pins in %s: %s", dev, dir, strerror(errno));
		return 0;
	}
	return 1;
}

int attach_conflicts(const struct cmd_args *a, const struct tb_config *cfg)
{
	if ((a->has_mode && a->mode != cfg->mode) || (a->has_key && a->key != cfg->key)) {
		out_error("attach dev %s: attached as mode %s key %s; detach first to change that",
			  a->dev, mode_names[cfg->mode], key_names[cfg->key]);
		return 1;
	}
	if (a->max_addrs && a->max_addrs != cfg->max_addrs) {
		out_error("attach dev %s: the pinned table holds max-addrs %u; detach first to resize",
			  a->dev, cfg->max_addrs);
		return 1;
	}
	return 0;
}

/* Whether program id, which uses a device's pins, is on ifindex here, now
 * named name: the device renamed. */
static bool renamed_to(__u32 ifindex, __u32 id, char *name)
{
	struct hooked h[4];
	int n = hooked_anywhere(ifindex, h);

	for (int i = 0; i < n; i++)
		if (h[i].id == id)
			return if_indextoname(ifindex, name) != NULL;
	return false;
}

/* Pins of a device that was deleted and made again under the same name
 * (a tunnel or veth brought up anew): once no program uses them, the new
 * device takes them over, rules, buckets and counters alike. The kernel
 * frees a deleted device's program shortly after the device, which is
 * waited for. Not while a program uses them on the old device, renamed,
 * or on one moved to another network namespace. The qdiscs tbctl had
 * made went with the old device. */
static int adopt(const char *dev, struct tb_config *cfg, int ifindex)
{
	char name[IF_NAMESIZE] = "";
	__u32 user;
	int fd, err = state_open_config(dev, &fd);

	if (err) {
		out_error("attach dev %s: open pinned config: %s", dev, strerror(-err));
		return 1;
	}
	user = map_user(fd);
	for (int i = 0; i < 100 && user && !renamed_to(cfg->ifindex, user, name); i++) {
		usleep(20000);
		user = map_user(fd);
	}
	close(fd);
	if (user && name[0]) {
		out_error("attach dev %s: the pinned state belongs to ifindex %u, now named %s, where "
			  "tbctl's program (id %u) uses it; rename it back to %s", dev, cfg->ifindex, name, user, dev);
		return 1;
	}
	if (user) {
		out_error("attach dev %s: the pinned state belongs to ifindex %u, which this network namespace "
			  "does not have, and program %u uses it; detach it where that device is", dev,
			  cfg->ifindex, user);
		return 1;
	}
	out_warn("attach dev %s: the device was made again (ifindex %u, was %u); its rules, buckets "
		 "and counters carry over", dev, ifindex, cfg->ifindex);
	cfg->ifindex = ifindex;
	cfg->own_qdisc = cfg->own_fq = 0;
	return 0;
}

/* An upgrade killed after pinning its new maps: finished when the program
 * on the device uses them, undone otherwise (upgrade.c). */
static int resume_upgrade(const char *dev)
{
	struct tb_config cfg;
	bool finished;
	int fd, err = state_open_config(dev, &fd);

	if (err)
		return 0;       /* no config: nothing of an upgrade to find */
	err = state_config_get(fd, &cfg);
	close(fd);
	if (!err)
		err = upgrade_resume(dev, hooked_prog(dev, &cfg),
				     &finished);
	if (err) {
		out_error("attach dev %s: an interrupted upgrade left maps pinned aside: %s", dev,
			  strerror(-err));
		return 1;
	}
	if (finished)
		out_warn("attach dev %s: finishing an upgrade that was interrupted", dev);
	return 0;
}

static int run_attach(const struct cmd_args *args)
{
	struct cmd_args attach = *args, *a = &attach;
	struct tb_maps old = {}, m;
	struct tb_config cfg = {};
	struct upgrade_moves moves;
	bool existing, upgrading, own_qdisc = false, new_fq = false, hooked = false;
	struct tb *skel;
	int ifindex, err, prog_fd, pins;
	__u32 zero = 0;

	ifindex = if_nametoindex(a->dev);
	if (!ifindex) {
		out_error("attach dev %s: no such device", a->dev);
		return 1;
	}
	if (device_lock("attach", a->dev, true))
		return 1;
	if (resume_upgrade(a->dev))
		return 1;
	err = state_open(a->dev, &old);
	if (err == -EPROTO) {
		out_error("attach dev %s: the pinned maps are another tbctl build's (%s); "
			  "detach, then attach with this build", a->dev, state_layout_error());
		return 1;
	}
	upgrading = err == -ESTALE;
	if (upgrading) {
		/* An older build's: kept, and brought up to this layout. */
		err = state_open_config(a->dev, &old.config);
		if (!err)
			err = state_config_get(old.config, &cfg);
		if (old.config >= 0)
			close(old.config);
		if (err) {
			out_error("attach dev %s: read pinned config: %s", a->dev, strerror(-err));
			return 1;
		}
		existing = true;
	} else if ((existing = !err)) {
		err = state_read_config(&old, &cfg);
		maps_close(&old);
		if (err) {
			out_error("attach dev %s: read pinned config: %s", a->dev, strerror(-err));
			return 1;
		}
	}
	if (!existing) {
		struct hooked h[4];

		if (hooked_anywhere(ifindex, h)) {
			out_error("attach dev %s: tbctl's program (id %u, mode %s) is on the device, but its pins "
				  "are not in %s (bpffs unmounted, or another mount namespace's); detach here "
				  "removes it", a->dev, h[0].id, mode_names[h[0].mode], TB_PIN_ROOT);
			return 1;
		}
	}
	if (existing && !cfg.attached) {
		/* An attach killed before its config was written: its maps
		 * hold nothing yet, and nothing was hooked. Start again. */
		out_warn("attach dev %s: finishing an attach that was interrupted", a->dev);
		unpin_all(a->dev);
		existing = false;
		cfg = (struct tb_config){};
	}
	if (existing) {
		if (attach_conflicts(a, &cfg))
			return 1;
		if (!a->has_mode)
			a->mode = cfg.mode;
		if (!a->has_key)
			a->key = cfg.key;
		if (cfg.ifindex != (__u32)ifindex && adopt(a->dev, &cfg, ifindex))
			return 1;
	}

	if (a->fq && a->mode != TB_MODE_TC_EGRESS) {
		out_error("attach dev %s: qdisc fq paces egress: it needs mode tc-egress", a->dev);
		return 1;
	}
	if (a->fq) {
		char root[IF_NAMESIZE] = "";

		err = qdisc_fq_paces(ifindex);
		new_fq = err == 0;
		if (new_fq)
			err = qdisc_fq_install(ifindex, root, sizeof(root));
		if (err == -EEXIST) {
			out_error("attach dev %s: the root qdisc is %s, which tbctl does not replace; "
				  "remove it, or make fq the root yourself", a->dev, root);
			return 1;
		}
		if (err < 0) {
			out_error("attach dev %s: install fq as the root qdisc: %s", a->dev,
				  err == -ENOENT ? "this kernel has no fq qdisc (sch_fq)" : strerror(-err));
			return 1;
		}
	}

	skel = open_pinned(a->dev, existing ? cfg.max_addrs : a->max_addrs ? a->max_addrs : TB_DEFAULT_MAX_ADDRS);
	if (!skel) {
		out_error("attach dev %s: open BPF object: %s", a->dev, strerror(errno));
		return 1;
	}
	skel->rodata->tb_key_dst = a->key == TB_KEY_DST;
	skel->rodata->tb_egress = a->mode == TB_MODE_TC_EGRESS;
	skel->rodata->tb_xdp_frags = hook_xdp_frags(skel->progs.tb_xdp);
	err = upgrading ? upgrade_plan(a->dev, skel, &moves) : 0;
	if (err) {
		out_error("attach dev %s: upgrade the pinned maps: %s; detach, then attach with this build",
			  a->dev, err == -EPROTO ? upgrade_error() : strerror(-err));
		if (new_fq)
			qdisc_fq_delete(ifindex);
		tb__destroy(skel);
		return 1;
	}
	pins = state_pins_begin();
	err = pins < 0 ? pins : tb__load(skel);
	if (!err)
		err = state_pin_config(a->dev, skel);
	state_pins_end(pins);
	if (err && upgrading)
		upgrade_abandon(a->dev, &moves);
	if (!err && upgrading) {
		/* Before the hook: the old program reads the old maps meanwhile. */
		err = upgrade_copy(&moves, skel);
		if (err) {
			out_error("attach dev %s: copy the pinned maps into this build's layout: %s",
				  a->dev, strerror(-err));
			upgrade_abandon(a->dev, &moves);
			if (new_fq)
				qdisc_fq_delete(ifindex);
			tb__destroy(skel);
			return 1;
		}
	}
	if (err) {
		out_error("attach dev %s: load BPF program and maps: %s%s", a->dev, strerror(-err),
			  existing ? " (pinned maps from an incompatible build? detach first)" :
			  out.verbose ? "" : " (-v shows the kernel's log)");
		if (out.verbose)
			out_libbpf_tail(20);
		if (!existing)
			unpin_all(a->dev);
		if (new_fq)
			qdisc_fq_delete(ifindex);
		tb__destroy(skel);
		return 1;
	}
	prog_fd = bpf_program__fd(a->mode <= TB_MODE_XDPGENERIC ? skel->progs.tb_xdp : skel->progs.tb_tc);
	maps_from_skel(skel, &m);
	if (existing) {
		own_qdisc = cfg.own_qdisc;
	} else {
		cfg = (struct tb_config){ .ifindex = ifindex, .mode = a->mode, .key = a->key,
					  .max_addrs = a->max_addrs ? a->max_addrs : TB_DEFAULT_MAX_ADDRS,
					  .stripes = TB_STRIPES_KEYED };
		cfg.layout = TB_LAYOUT;
	}
	/* Fields later layouts added (owed_shift), fresh or upgraded alike. */
	upgrade_config(&cfg);
	/* Config first: the new program may see packets the moment it is
	 * hooked. It also says, before the clsact qdisc is made, that tbctl
	 * is making it, so a detach after a kill in between removes it. */
	cfg.attached = 1;
	cfg.prog_id = prog_id(prog_fd);
	cfg.own_fq |= new_fq;
	if (a->mode >= TB_MODE_TC_INGRESS && !cfg.own_qdisc && qdisc_clsact_exists(ifindex) == 0)
		cfg.own_qdisc = own_qdisc = true;
	if (bpf_map_update_elem(m.config, &zero, &cfg, BPF_ANY)) {
		out_error("attach dev %s: write config: %s", a->dev, strerror(errno));
		err = 1;
	} else if (hook_program(a, ifindex, prog_fd, existing, &own_qdisc)) {
		err = 1;
	} else {
		hooked = true;
		if (own_qdisc != cfg.own_qdisc) {
			cfg.own_qdisc = own_qdisc;
			bpf_map_update_elem(m.config, &zero, &cfg, BPF_ANY);
		}
	}
	if (upgrading && !hooked) {
		upgrade_abandon(a->dev, &moves);
	} else if (upgrading) {
		unsigned int from = upgrade_layout_of(&cfg);
		/* Hooked, the new maps are the live ones: once what the older
		 * ones hold is moved, their pins go in place, and only then
		 * does the config say so. After a failure the next attach
		 * finishes. */
		int uerr = upgrade_settle(a->dev, &moves, skel);

		uerr = uerr ? uerr : upgrade_maps(&m, &cfg);
		if (uerr) {
			out_error("attach dev %s: upgrade the pinned maps from layout %u: %s "
				  "(attach again finishes it)", a->dev, from, strerror(-uerr));
			err = 1;
		} else {
			out_warn("attach dev %s: upgraded the pinned maps from layout %u to %u; "
				 "rules, buckets and counters kept", a->dev, from, TB_LAYOUT);
			if (cfg.stripes == TB_STRIPES_FOLD)
				out_warn("attach dev %s: lock stripes and owed slots keep layout %u's placement, "
					 "which senders can aim at; a fresh attach (detach, attach, rules "
					 "again) places them by a keyed hash", a->dev, from);
		}
	}
	if (err && !existing)
		unpin_all(a->dev);
	if (err && new_fq)
		qdisc_fq_delete(ifindex);
	tb__destroy(skel);
	return err;
}

/* Take program id off the device's hook for mode: only that program. */
/* detach with no pins here: bpffs unmounted, or another mount
 * namespace's. tbctl's programs found on the device are removed; pins
 * another bpffs holds stay there (detach there removes them). */
static int detach_unpinned(const char *dev)
{
	struct hooked h[4];
	int ifindex = if_nametoindex(dev), n = ifindex ? hooked_anywhere(ifindex, h) : 0, rc = 0;

	if (!n) {
		out_error("detach dev %s: not attached", dev);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int err = unhook(ifindex, h[i].mode, h[i].id);

		if (err) {
			out_error("detach dev %s: remove tbctl's program (id %u, mode %s): %s", dev, h[i].id,
				  mode_names[h[i].mode], strerror(-err));
			rc = 1;
		} else {
			out_warn("detach dev %s: no pins in %s, but tbctl's program (id %u, mode %s) was on the "
				 "device: removed it (pins another bpffs holds stay there)", dev, TB_PIN_ROOT,
				 h[i].id, mode_names[h[i].mode]);
		}
	}
	return rc;
}

/* Whether dev has a pin directory. */
static bool pinned(const char *dev)
{
	char dir[PATH_MAX];
	struct stat st;

	state_dir(dev, dir, sizeof(dir));
	return !stat(dir, &st);
}

/* A pin directory without a config pin: what an attach killed while it
 * pinned its maps leaves. */
static bool unfinished(const char *dev)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct stat st;

	state_dir(dev, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/config", dir);
	return !stat(dir, &st) && stat(path, &st) && errno == ENOENT;
}

static int parse_detach(int argc, char **argv, struct cmd_args *a)
{
	return parse_dev_only("detach", argc, argv, a, false);
}

static int run_detach(const struct cmd_args *a)
{
	struct tb_config cfg;
	__u32 id;
	int err, fd;

	if (device_lock("detach", a->dev, true))
		return 1;
	if (!pins_removable(a->dev))
		return 1;
	if (unfinished(a->dev)) {
		/* Pins without a config: an attach killed while pinning. */
		err = unpin_all(a->dev);
		if (err)
			out_error("detach dev %s: remove pins: %s", a->dev, strerror(-err));
		return err != 0;
	}
	err = state_open_config(a->dev, &fd);
	if (err == -ENOENT && !pinned(a->dev))
		return detach_unpinned(a->dev);
	if (!err)
		close(fd);
	if (open_attached_config("detach", a->dev, &fd))
		return 1;
	err = state_config_get(fd, &cfg);
	close(fd);
	if (err) {
		out_error("detach dev %s: read pinned config: %s", a->dev, strerror(-err));
		return 1;
	}
	id = hooked_prog(a->dev, &cfg);
	if (id)
		err = unhook(cfg.ifindex, cfg.mode, id);
	/* The qdiscs tbctl made go too, hooked program or not: an attach
	 * killed before hooking it may have made them already. */
	if (!err && cfg.mode >= TB_MODE_TC_INGRESS && dev_here(a->dev, &cfg)) {
		/* Deleting the clsact deletes every filter on it: one that
		 * holds filters others added since stays. */
		int used = cfg.own_qdisc ? qdisc_clsact_in_use(cfg.ifindex) : 0;
		struct bpf_tc_hook hook;

		tc_hook_of(cfg.ifindex, cfg.mode, &hook);
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		if (cfg.own_qdisc && !used)
			bpf_tc_hook_destroy(&hook);
		else if (used > 0)
			out_warn("detach dev %s: the clsact qdisc tbctl made holds other filters; left it in place",
				 a->dev);
		else if (used < 0)
			out_warn("detach dev %s: list the clsact qdisc's filters: %s; left it in place", a->dev,
				 strerror(-used));
		/* Someone may have put another root qdisc in place of the fq
		 * tbctl installed: theirs stays. */
		if (cfg.own_fq && qdisc_fq_delete(cfg.ifindex) == -EINVAL)
			out_warn("detach dev %s: the root qdisc is no longer the fq tbctl installed; "
				 "left it in place", a->dev);
	}
	if (err) {
		out_error("detach dev %s: remove program: %s", a->dev, strerror(-err));
		return 1;
	}
	err = unpin_all(a->dev);
	if (err)
		out_error("detach dev %s: remove pins: %s", a->dev, strerror(-err));
	return err != 0;
}

struct status_count {
	__u64 addrs;
};

static int count_bucket(const struct tb_addr *k, const struct tb_bucket *b, void *ctx)
{
	(void)k;
	(void)b;
	((struct status_count *)ctx)->addrs++;
	return 0;
}

/* A device whose pins status cannot report on: said, in the listing
 * with the healthy ones, and counted as a failure. */
static int status_broken(const char *dev, const char *why, struct json_object *arr)
{
	if (out.json) {
		struct json_object *o = json_object_new_object();

		json_add_str(o, "dev", dev);
		json_add_str(o, "error", why);
		json_object_array_add(arr, o);
	} else {
		out_error("status dev %s: %s", dev, why);
	}
	return 1;
}

/* What status reports into, and whether the device was found by listing
 * TB_PIN_ROOT rather than named. */
struct status_ctx {
	struct json_object *arr;
	bool listed;
};

/* How long status waits for an attach or detach that holds a device's
 * lock with its pins half made or half removed. */
#define STATUS_SETTLE_MS 3000
/* status_read's answer when it found the pins half made and was not to
 * report that yet. */
#define STATUS_HALF (-1)

/* What status found in the midst of an attach or detach, or after one
 * was interrupted: said (as final) when settle is 0 (the device's lock
 * was free, or this process holds it), or as what it found (now) when
 * the lock was held throughout the wait (settle < 0); else STATUS_HALF. */
static int status_half(const char *dev, const char *now, const char *final, int settle, struct json_object *arr)
{
	char msg[256];

	if (settle > 0)
		return STATUS_HALF;
	if (settle < 0)
		snprintf(msg, sizeof(msg), "an attach or detach has held the device's lock for over %d s, %s",
			 STATUS_SETTLE_MS / 1000, now);
	return status_broken(dev, settle < 0 ? msg : final, arr);
}

/* settle: 1 on a first read, 0 once the device's lock was free, -1 when it
 * was held throughout the wait. */
static int status_read(const char *dev, const struct status_ctx *sc, int settle)
{
	struct json_object *arr = sc->arr;
	static struct ruleset rs;
	struct status_count cnt = {};
	struct tb_config cfg;
	struct tb_maps m;
	int rules = 0, paced, err;
	char state[160], name[IF_NAMESIZE] = "";
	bool moved = false;
	__u32 id = 0;

	err = state_open(dev, &m);
	/* Listed, then detached before it was read: no longer there to report. */
	if (err == -ENOENT && sc->listed && !pinned(dev))
		return 0;
	if (err == -ENOENT && unfinished(dev))
		return status_half(dev, "its pins half made or half removed",
				   "an attach was interrupted while pinning its maps, or a detach while "
				   "removing them (tbctl attach finishes it, tbctl detach removes it)", settle, arr);
	if (err == -ENOENT)
		return status_half(dev, "no pins yet", "not attached", settle, arr);
	if (err == -ESTALE) {
		char msg[256];

		snprintf(msg, sizeof(msg), "pinned by an older tbctl build (%s); tbctl attach upgrades them",
			 state_layout_error());
		return status_broken(dev, msg, arr);
	}
	if (err)
		return status_broken(dev, err == -EPROTO ? state_layout_error() : strerror(-err), arr);
	err = state_read_config(&m, &cfg);
	if (!err)
		err = ruleset_read(&rs, &m);
	if (!err)
		err = buckets_foreach(&m, count_bucket, &cnt);
	if (!err)
		id = pins_prog(dev, &cfg, m.config, &moved);
	maps_close(&m);
	if (err) {
		char msg[128];

		snprintf(msg, sizeof(msg), "read pinned maps: %s", strerror(-err));
		return status_broken(dev, msg, arr);
	}
	if (!cfg.attached)
		return status_half(dev, "its config not written yet",
				   "an attach was interrupted before its config was written "
				   "(tbctl attach finishes it, tbctl detach removes it)", settle, arr);
	for (int i = 0; i < TB_MAX_RULES; i++)
		rules += rs.rules[i].in_use;
	/* Shape rules only set departure times: fq must still be the one
	 * to keep them, whatever has been done to the qdiscs since. */
	paced = shape_paced(dev, &cfg, &rs);
	if (paced < -1) {
		char msg[128];

		snprintf(msg, sizeof(msg), "read qdiscs: %s", strerror(-paced));
		return status_broken(dev, msg, arr);
	}
	if (id && !moved)
		snprintf(state, sizeof(state), "attached");
	else if (id && renamed_to(cfg.ifindex, id, name))
		snprintf(state, sizeof(state), "attached to %s, as the device is now named (program %u)", name, id);
	else if (id)
		snprintf(state, sizeof(state), "attached in another network namespace (program %u; status "
			 "there tells more)", id);
	else if (moved)
		snprintf(state, sizeof(state), "NOT ATTACHED (no device %s of ifindex %u here; made again, "
			 "attach takes the pins over)", dev, cfg.ifindex);
	else
		snprintf(state, sizeof(state), "NOT ATTACHED (program gone from the device)");
	if (out.json) {
		struct json_object *o = json_object_new_object();

		json_add_str(o, "dev", dev);
		json_add_u64(o, "ifindex", cfg.ifindex);
		json_add_str(o, "mode", mode_names[cfg.mode]);
		json_add_str(o, "key", key_names[cfg.key]);
		json_object_object_add(o, "attached", json_object_new_boolean(id != 0));
		json_add_str(o, "device", !moved ? "here" : !id ? "gone" : name[0] ? "renamed" : "other netns");
		json_add_u64(o, "prog_id", id);
		json_add_u64(o, "rules", rules);
		json_add_u64(o, "addresses", cnt.addrs);
		json_add_u64(o, "max_addrs", cfg.max_addrs);
		json_add_str(o, "stripes", cfg.stripes == TB_STRIPES_KEYED ? "keyed" : "fold");
		if (paced >= 0)
			json_object_object_add(o, "shape_paced", json_object_new_boolean(paced));
		json_object_array_add(arr, o);
	} else {
		printf("%s: mode %s key %s %s, %d rule%s, %llu of %u addresses tracked%s%s\n", dev,
		       mode_names[cfg.mode], key_names[cfg.key], state,
		       rules, rules == 1 ? "" : "s", (unsigned long long)cnt.addrs, cfg.max_addrs,
		       cfg.stripes == TB_STRIPES_KEYED ? "" :
		       "; lock stripes folded as upgraded (a fresh attach keys them)",
		       paced ? "" : "; shape rules NOT PACED (fq no longer schedules the egress)");
	}
	return 0;
}

/* Readers take no lock. Pins found half made or half removed are read
 * again once no attach or detach holds the device's lock: mid-attach
 * they are not an error, only a moment. */
static int status_one(const char *dev, void *ctx)
{
	const struct status_ctx *sc = ctx;
	int rc = status_read(dev, sc, 1);

	return rc == STATUS_HALF ? status_read(dev, sc, state_settled(dev, STATUS_SETTLE_MS) ? 0 : -1) : rc;
}

static int parse_status(int argc, char **argv, struct cmd_args *a)
{
	return parse_dev_only("status", argc, argv, a, true);
}

static int run_status(const struct cmd_args *a)
{
	struct status_ctx sc = { .listed = !a->has_dev };
	int err = 0;

	if (bpffs_ensure()) {
		out_error("status: bpffs unavailable at %s", TB_BPFFS);
		return 1;
	}
	/* Built only for -j: text goes out as it is made. */
	sc.arr = out.json ? json_object_new_array() : NULL;
	err = a->has_dev ? status_one(a->dev, &sc) : state_foreach_device(status_one, &sc);
	if (out.json)
		out_json(sc.arr);
	return err;
}

const struct command cmd_attach = {
	"attach", parse_attach, run_attach,
	"dev DEV [mode xdp|xdpgeneric|tc-ingress|tc-egress] [key src|dst] [max-addrs N] [qdisc fq]",
	false, CAPS_HOOK,
};
const struct command cmd_detach = { "detach", parse_detach, run_detach, "dev DEV", true, CAPS_UNHOOK };
const struct command cmd_status = { "status", parse_status, run_status, "[dev DEV]", false, CAPS_READ };
