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
#include "view/output.h"
#include "lib/err.h"
#include "lib/hook.h"
#include "lib/qdisc.h"
#include "lib/state.h"
#include "cli/tbctl.h"
#include "lib/upgrade.h"

#define MAX_ADDRS_MIN 1024

static int parse_attach(int argc, char **argv, struct cmd_args *a)
{
	struct kw kws[] = { { "dev" }, { "mode" }, { "key" }, { "max-addrs" }, { "qdisc" }, { 0 } };
	static const char *const qdiscs[] = { "fq", NULL };
	const char *v = NULL;
	int err = kw_parse("attach", argc, argv, kws, &v);

	if (err)
		return err;
	if (v && strcmp(v, "replace"))
		return usage_error("attach", "unknown word \"%s\"", v);
	a->replace = v;
	if ((err = parse_dev("attach", kw_get(kws, "dev"), a)))
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

/* Take tbctl's program off dev, with the qdiscs it made, and remove the
 * pins (of any layout); reports and returns 1 on error. */
static int remove_attached(const char *cmd, const char *dev, const struct tb_config *c)
{
	struct tb_config cfg = *c;
	__u32 id = hooked_prog(dev, &cfg);
	int err = 0;

	if (id)
		err = unhook(cfg.ifindex, cfg.mode, id);
	/* The qdiscs tbctl made go too, hooked program or not: an attach
	 * killed before hooking it may have made them already. */
	if (!err && cfg.mode >= TB_MODE_TC_INGRESS && dev_here(dev, &cfg)) {
		/* Deleting the clsact deletes every filter on it: one that
		 * holds filters others added since stays. */
		int used = cfg.own_qdisc ? qdisc_clsact_in_use(cfg.ifindex) : 0;
		struct bpf_tc_hook hook;

		tc_hook_of(cfg.ifindex, cfg.mode, &hook);
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		if (cfg.own_qdisc && !used)
			bpf_tc_hook_destroy(&hook);
		else if (used > 0)
			out_warn("%s dev %s: the clsact qdisc tbctl made holds other filters; left it in place",
				 cmd, dev);
		else if (used < 0)
			out_warn("%s dev %s: list the clsact qdisc's filters: %s; left it in place", cmd, dev,
				 strerror(-used));
		/* Someone may have put another root qdisc in place of the fq
		 * tbctl installed: theirs stays. */
		if (cfg.own_fq && qdisc_fq_delete(cfg.ifindex) == -EINVAL)
			out_warn("%s dev %s: the root qdisc is no longer the fq tbctl installed; "
				 "left it in place", cmd, dev);
	}
	if (err) {
		out_error("%s dev %s: remove program: %s", cmd, dev, strerror(-err));
		return 1;
	}
	err = state_unpin(dev, true);
	if (err)
		out_error("%s dev %s: remove pins: %s", cmd, dev, strerror(-err));
	return err != 0;
}

/* The rules of pins attach ... replace starts over from, n of them. */
struct kept_rules {
	struct tb_rule *r;
	int n;
};

/* Keep dev's rules, then remove its program and pins, of whatever layout:
 * attach goes on as on a device with none, and puts the rules back. The
 * mode, key and table size not given are the pins'. */
static int replace(struct cmd_args *a, struct kept_rules *k)
{
	struct ruleset *rs = calloc(1, sizeof(*rs));
	struct tb_rule *r = calloc(TB_MAX_RULES, sizeof(*r));
	struct tb_config cfg;
	struct tb_maps m;
	int err = rs && r ? state_open_rules(a->dev, &m) : -ENOMEM, n = 0;

	if (!err) {
		err = ruleset_read(rs, &m);
		cfg = rs->cfg;
		maps_close(&m);
	}
	for (int i = 0; !err && i < TB_MAX_RULES; i++)
		if (rs->rules[i].in_use)
			r[n++] = rs->rules[i];
	free(rs);
	if (err) {
		out_error("attach dev %s replace: read the pinned rules: %s", a->dev,
			  err == -EPROTO ? state_layout_error() : strerror(-err));
		free(r);
		return 1;
	}
	if (!a->has_mode)
		a->mode = cfg.mode;
	if (!a->has_key)
		a->key = cfg.key;
	if (!a->max_addrs)
		a->max_addrs = cfg.max_addrs;
	if (a->fq && a->mode != TB_MODE_TC_EGRESS) {
		out_error("attach dev %s: qdisc fq paces egress: it needs mode tc-egress", a->dev);
		free(r);
		return 1;
	}
	/* From here a failure says what the rules were. */
	k->r = r;
	k->n = n;
	return remove_attached("attach", a->dev, &cfg);
}

/* The keys of a fresh config: the caches' slot seed and the placement's
 * secret, which no attach may go without. -1 with errno on failure. */
static int keys_draw(struct tb_config *cfg)
{
	return state_random(&cfg->slot_seed, sizeof(cfg->slot_seed)) ||
	       state_random(cfg->place_key, sizeof(cfg->place_key)) ? -1 : 0;
}

/* Put the kept rules into the new pins m. */
static int replace_rules(const struct tb_maps *m, const struct kept_rules *k)
{
	struct ruleset *rs = calloc(1, sizeof(*rs));
	struct tb_prefix *p = calloc(k->n + 1, sizeof(*p));
	struct rule_spec *s = calloc(k->n + 1, sizeof(*s));
	int err = rs && p && s ? ruleset_load(rs, m) : -ENOMEM;

	for (int i = 0; i < k->n; i++) {
		rule_prefix(&k->r[i], &p[i]);
		rule_spec_of(&k->r[i], &s[i]);
	}
	if (!err)
		err = ruleset_apply(rs, p, s, k->n);
	free(rs);
	free(p);
	free(s);
	return err;
}

/* attach; with replace, the pins' rules go to *kept before the old pins
 * are removed. */
static int attach_device(const struct cmd_args *args, struct kept_rules *k)
{
	struct cmd_args attach = *args, *a = &attach;
	struct tb_maps old = {}, m;
	struct tb_config cfg = {};
	struct upgrade_moves moves;
	struct utsname un = {};
	bool existing, upgrading, own_qdisc = false, new_fq = false, abandon = false;
	struct tb *skel = NULL;
	struct tb_err e;
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
	if (err == -EPROTONOSUPPORT && !a->replace) {
		out_error("attach dev %s: %s", a->dev, state_too_old(a->dev));
		return 1;
	}
	if (a->replace && err != -ENOENT) {
		if (!err)
			maps_close(&old);
		if (replace(a, k))
			return 1;
		err = -ENOENT;
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
		state_unpin(a->dev, true);
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
	state_load_hook(skel, a->mode <= TB_MODE_XDPGENERIC ? skel->progs.tb_xdp : skel->progs.tb_tc);
	err = upgrading ? upgrade_plan(a->dev, skel, &cfg, &moves) : 0;
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
		if (upgrading && upgrade_config(&moves, &cfg)) {
			out_error("attach dev %s: draw the placement key: %s", a->dev, strerror(errno));
			err = 1;
			goto out;
		}
	} else {
		__u32 max = a->max_addrs ? a->max_addrs : TB_DEFAULT_MAX_ADDRS;

		cfg = (struct tb_config){ .ifindex = ifindex, .mode = a->mode, .key = a->key, .max_addrs = max,
					  .layout = TB_LAYOUT, .place = TB_PLACE_SIPHASH,
					  .owed_shift = state_owed_shift(max), .table_shift = tb_table_shift(max),
					  .ways = tb_table_ways(max) };
		if (keys_draw(&cfg)) {
			out_error("attach dev %s: draw the placement key: %s", a->dev, strerror(errno));
			err = 1;
			goto out;
		}
	}
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
	if (hook_program(a->mode, ifindex, prog_fd, existing, &own_qdisc, &e)) {
		out_error("attach dev %s: %s", a->dev, e.msg);
		err = 1;
		goto out;
	}
	abandon = false;
	if (own_qdisc != cfg.own_qdisc) {
		cfg.own_qdisc = own_qdisc;
		bpf_map_update_elem(m.config, &zero, &cfg, BPF_ANY);
	}
	if (upgrading) {
		unsigned int from = cfg.layout;
		/* Hooked, the new maps are the live ones: once what the older
		 * ones hold is moved, their pins go in place, and only then
		 * does the config say so. After a failure the next attach
		 * finishes. */
		int uerr = upgrade_settle(a->dev, &moves, skel, &cfg);

		uerr = uerr ? uerr : upgrade_maps(a->dev, &m, &cfg);
		if (uerr) {
			out_error("attach dev %s: upgrade the pinned maps from layout %u: %s "
				  "(attach again finishes it)", a->dev, from, strerror(-uerr));
			err = 1;
		} else {
			out_warn("attach dev %s: upgraded the pinned maps from layout %u to %u; "
				 "rules, buckets and counters kept", a->dev, from, TB_LAYOUT);
		}
	}
	if (!err && k->r && (err = replace_rules(&m, k))) {
		out_error("attach dev %s replace: set the rules again: %s", a->dev, strerror(-err));
		err = 1;
	}
out:
	/* The one unwind: what this attach made, in reverse. */
	if (abandon)
		upgrade_abandon(a->dev, &moves);
	if (err && !existing)
		state_unpin(a->dev, true);
	if (err && new_fq)
		qdisc_fq_delete(ifindex);
	tb__destroy(skel);
	return err;
}

static int run_attach(const struct cmd_args *args)
{
	struct kept_rules kept = {};
	int err = attach_device(args, &kept);

	if (err && kept.r) {
		fprintf(stderr, "attach dev %s replace: did not finish; the old pins' rules were:\n", args->dev);
		for (int i = 0; i < kept.n; i++)
			rule_save(stderr, args->dev, &kept.r[i]);
	}
	free(kept.r);
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
	int err, fd;

	if (device_lock("detach", a->dev, true))
		return 1;
	if (!pins_removable(a->dev))
		return 1;
	if (state_unfinished(a->dev)) {
		/* Pins without a config: an attach killed while pinning. */
		err = state_unpin(a->dev, true);
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
	return remove_attached("detach", a->dev, &cfg);
}

const struct command cmd_attach = {
	"attach", parse_attach, run_attach,
	"dev DEV [mode xdp|xdpgeneric|tc-ingress|tc-egress] [key src|dst] [max-addrs N] [qdisc fq] [replace]",
	false, CAPS_HOOK,
};
const struct command cmd_detach = { "detach", parse_detach, run_detach, "dev DEV", true, CAPS_UNHOOK };
