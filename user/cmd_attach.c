// SPDX-License-Identifier: GPL-2.0
/* attach, detach, status: the program on the device and its pinned maps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
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
	struct utsname un = {};
	bool existing, upgrading, own_qdisc = false, new_fq = false, abandon = false;
	struct tb *skel = NULL;
	int ifindex, err, prog_fd, pins;
	__u32 zero = 0;

	ifindex = if_nametoindex(a->dev);
	if (!ifindex) {
		out_error("attach dev %s: no such device", a->dev);
		return 1;
	}
	if (uname(&un) || !hook_order_holds(un.machine)) {
		out_error("attach dev %s: tbctl's programs need x86's memory order (stores seen, and loads made, "
			  "in program order), and this machine is %s", a->dev, un.machine);
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
		err = 1;
		goto out;
	}
	skel->rodata->tb_key_dst = a->key == TB_KEY_DST;
	skel->rodata->tb_egress = a->mode == TB_MODE_TC_EGRESS;
	skel->rodata->tb_xdp_frags = hook_xdp_frags(skel->progs.tb_xdp);
	err = upgrading ? upgrade_plan(a->dev, skel, &moves) : 0;
	if (err) {
		out_error("attach dev %s: upgrade the pinned maps: %s; detach, then attach with this build",
			  a->dev, err == -EPROTO ? upgrade_error() : strerror(-err));
		err = 1;
		goto out;
	}
	pins = state_pins_begin();
	err = pins < 0 ? pins : tb__load(skel);
	if (!err)
		err = state_pin_config(a->dev, skel);
	state_pins_end(pins);
	/* From here until the hook, a failure abandons the upgrade. */
	abandon = upgrading;
	if (err) {
		out_error("attach dev %s: load BPF program and maps: %s%s", a->dev, strerror(-err),
			  existing ? " (pinned maps from an incompatible build? detach first)" :
			  out.verbose ? "" : " (-v shows the kernel's log)");
		if (out.verbose)
			out_libbpf_tail(20);
		err = 1;
		goto out;
	}
	/* Before the hook: the old program reads the old maps meanwhile. */
	err = upgrading ? upgrade_copy(&moves, skel) : 0;
	if (err) {
		out_error("attach dev %s: copy the pinned maps into this build's layout: %s", a->dev,
			  strerror(-err));
		err = 1;
		goto out;
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
		goto out;
	}
	if (hook_program(a->dev, a->mode, ifindex, prog_fd, existing, &own_qdisc)) {
		err = 1;
		goto out;
	}
	abandon = false;
	if (own_qdisc != cfg.own_qdisc) {
		cfg.own_qdisc = own_qdisc;
		bpf_map_update_elem(m.config, &zero, &cfg, BPF_ANY);
	}
	if (upgrading) {
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
out:
	/* The one unwind: what this attach made, in reverse. */
	if (abandon)
		upgrade_abandon(a->dev, &moves);
	if (err && !existing)
		unpin_all(a->dev);
	if (err && new_fq)
		qdisc_fq_delete(ifindex);
	tb__destroy(skel);
	return err;
}

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
	if (state_unfinished(a->dev)) {
		/* Pins without a config: an attach killed while pinning. */
		err = unpin_all(a->dev);
		if (err)
			out_error("detach dev %s: remove pins: %s", a->dev, strerror(-err));
		return err != 0;
	}
	err = state_open_config(a->dev, &fd);
	if (err == -ENOENT && !state_pinned(a->dev))
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

const struct command cmd_attach = {
	"attach", parse_attach, run_attach,
	"dev DEV [mode xdp|xdpgeneric|tc-ingress|tc-egress] [key src|dst] [max-addrs N] [qdisc fq]",
	false, CAPS_HOOK,
};
const struct command cmd_detach = { "detach", parse_detach, run_detach, "dev DEV", true, CAPS_UNHOOK };
