// SPDX-License-Identifier: GPL-2.0
/* attach: tbctl's program on a device and its pinned maps, made, taken
 * over, upgraded or started over. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tb.skel.h"
#include "view/output.h"
#include "lib/err.h"
#include "lib/devkey.h"
#include "lib/hook.h"
#include "lib/order.h"
#include "lib/xdisp.h"
#include "lib/qdisc.h"
#include "lib/state.h"
#include "lib/tables.h"
#include "cli/tbctl.h"
#include "lib/upgrade.h"
#include "view/rule_text.h"
#include "view/ban_text.h"
#include "lib/bans.h"
#include "lib/clock.h"
#include "logic/sizing.h"

#define MAX_ADDRS_MIN 1024

struct attach_opts {
	struct cmd_target t;
	int mode;               /* a re-attach keeps the mode and key not given */
	int key;
	bool has_mode;
	bool has_key;
	__u32 max_addrs;        /* 0: keep the pinned table's, or the default */
	bool fq;                /* install fq as the root qdisc (for action shape) */
	bool replace;           /* start over: the pins' rules kept, the rest not */
	const char *place_prog; /* before or after this program (name or id) on a tcx hook */
	bool after;
	int tc_hook;            /* enum tc_hook, when has_tc_hook */
	bool has_tc_hook;
	__u32 xdp_prio;         /* run priority in libxdp's dispatcher, when has_xdp_prio */
	bool has_xdp_prio;
};

/* How a tc mode's program goes on the hook, when attach is told. */
enum tc_hook { TC_HOOK_TCX, TC_HOOK_CLSACT };
static const char *const tc_hooks[] = { "tcx", "clsact", NULL };

static int parse_attach(const char *cmd, int argc, char **argv, void *opts)
{
	struct attach_opts *a = opts;
	struct kw kws[] = { { "dev" }, { "mode" }, { "key" }, { "max-addrs" }, { "qdisc" }, { "before" }, { "after" },
			    { "tc-hook" }, { "xdp-priority" }, { 0 } };
	static const char *const qdiscs[] = { "fq", NULL };
	const char *v = NULL;
	int err = kw_parse(cmd, argc, argv, kws, &v);

	if (err)
		return err;
	if (v && strcmp(v, "replace"))
		return usage_error(cmd, "unknown word \"%s\"", v);
	a->replace = v;
	if ((err = parse_dev(cmd, kw_get(kws, "dev"), &a->t)))
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
	a->place_prog = kw_get(kws, "after");
	a->after = a->place_prog;
	if (a->after && kw_get(kws, "before"))
		return usage_error(cmd, "before and after: give one");
	if (!a->after)
		a->place_prog = kw_get(kws, "before");
	if (a->place_prog && a->has_mode && a->mode <= TB_MODE_XDPGENERIC)
		return usage_error(cmd, "%s: only a tc mode's program is placed among others (tc-ingress, tc-egress)",
				   a->after ? "after" : "before");
	v = kw_get(kws, "tc-hook");
	if (v && (a->tc_hook = choose("attach", "tc-hook", v, tc_hooks)) < 0)
		return EXIT_USAGE;
	a->has_tc_hook = v;
	if (v && a->has_mode && a->mode <= TB_MODE_XDPGENERIC)
		return usage_error(cmd, "tc-hook: only for a tc mode (tc-ingress, tc-egress)");
	v = kw_get(kws, "xdp-priority");
	a->has_xdp_prio = v;
	a->xdp_prio = XDISP_PRIO_DEFAULT;
	if (v && a->has_mode && a->mode > TB_MODE_XDPGENERIC)
		return usage_error(cmd, "xdp-priority: only for an XDP mode (xdp, xdpgeneric)");
	if (v && (err = parse_count("attach", "xdp-priority", v, 0, INT32_MAX, &a->xdp_prio)))
		return err;
	v = kw_get(kws, "max-addrs");
	return v ? parse_count("attach", "max-addrs", v, MAX_ADDRS_MIN, MAX_ADDRS_MAX, &a->max_addrs) : 0;
}

/* Non-zero (said) when a re-attach asks for another mode, key or table
 * size than the pinned config has. */
static int attach_conflicts(const void *opts, const struct tb_config *cfg)
{
	const struct attach_opts *a = opts;

	if ((a->has_mode && a->mode != cfg->mode) || (a->has_key && a->key != cfg->key)) {
		out_error("attach dev %s: attached as mode %s key %s, not mode %s key %s; detach first to change that",
			  a->t.dev, mode_names[cfg->mode], key_names[cfg->key],
			  mode_names[a->has_mode ? a->mode : cfg->mode], key_names[a->has_key ? a->key : cfg->key]);
		return 1;
	}
	if (a->max_addrs && a->max_addrs != cfg->max_addrs) {
		out_error("attach dev %s: the pinned table holds max-addrs %u; detach first to resize",
			  a->t.dev, cfg->max_addrs);
		return 1;
	}
	if (a->place_prog) {
		out_error("attach dev %s: attached already, and %s places a new attachment; detach first to move it",
			  a->t.dev, a->after ? "after" : "before");
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

/* The rules of pins attach ... replace starts over from, n of them, and
 * the bans made by hand, where the pins' layout has them. */
struct kept_rules {
	struct tb_rule *r;
	int n;
	struct ban *bans;
	size_t nbans;
};

/* Keep dev's rules, then remove its program and pins, of whatever layout:
 * attach goes on as on a device with none, and puts the rules back. The
 * mode, key and table size not given are the pins'. */
static int replace(struct attach_opts *a, struct kept_rules *k)
{
	struct ruleset *rs = calloc(1, sizeof(*rs));
	struct tb_rule *r = calloc(TB_MAX_RULES, sizeof(*r));
	struct tb_config cfg;
	struct tb_maps m;
	int err = rs && r ? state_open_rules(a->t.dev, &m) : -ENOMEM, n = 0;

	if (!err) {
		err = ruleset_read(rs, &m);
		cfg = rs->cfg;
		if (!err && m.bans0_v4 >= 0 && m.bans0_v6 >= 0 && m.bans1_v4 >= 0 && m.bans1_v6 >= 0)
			err = bans_read(&m, now_ns(), &k->bans, &k->nbans);
		maps_close(&m);
	}
	for (int i = 0; !err && i < TB_MAX_RULES; i++)
		if (rs->rules[i].in_use)
			r[n++] = rs->rules[i];
	free(rs);
	if (err) {
		out_error("attach dev %s replace: read the pinned rules and bans: %s", a->t.dev,
			  err == -EPROTO ? state_layout_error() : strerror(-err));
		free(r);
		return 1;
	}
	if (!a->has_mode)
		a->mode = cfg.mode;
	a->has_mode = true;     /* the pins' mode, exactly */
	if (!a->has_key)
		a->key = cfg.key;
	if (!a->max_addrs)
		a->max_addrs = cfg.max_addrs;
	if (a->fq && a->mode != TB_MODE_TC_EGRESS) {
		out_error("attach dev %s: qdisc fq paces egress: it needs mode tc-egress", a->t.dev);
		free(r);
		return 1;
	}
	/* From here a failure says what the rules were. */
	k->r = r;
	k->n = n;
	if (remove_attached("attach", a->t.dev, &cfg))
		return 1;
	/* Older pins read where an earlier release made them are gone: the
	 * new ones are this namespace's. */
	devkey_drop_unkeyed(a->t.dev);
	return 0;
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

/* One attach as it goes: what it found, made and must undo. */
struct attach {
	struct attach_opts a;   /* mode and key the pins' when not given */
	const char *dev;
	int ifindex;
	struct tb_config cfg;
	bool existing;          /* pins of this build, or of an older one */
	bool upgrading;         /* an older build's: brought up to this layout */
	bool own_qdisc, new_fq;
	bool tcx;               /* a tc mode, through a tcx link */
	struct tcx_place place;
	bool xdisp;             /* an XDP mode, through libxdp's dispatcher */
	int anchor;             /* what its program is loaded against, until loaded */
	bool any_mode;          /* fresh, no mode given: xdp, else tc-ingress */
	struct tb *skel_tc;     /* the tc program of a fall back from xdp */
	bool abandon;           /* a failure now abandons the upgrade */
	struct upgrade_moves moves;
	struct tb *skel;
	struct tb_maps m;
	int prog_fd;
};

/* What any attach needs first: the device, its lock, and no upgrade
 * left half-done. */
static int attach_begin(struct attach *at)
{
	at->ifindex = if_nametoindex(at->dev);
	if (!at->ifindex) {
		out_error("attach dev %s: no such device", at->dev);
		return 1;
	}
	if (device_lock("attach", at->dev, true) || device_take_over("attach", at->dev, TAKE_UPGRADE))
		return 1;
	return resume_upgrade(at->dev);
}

/* The pinned config, of this build (err 0) or an older one (-ESTALE). */
static int pinned_config(struct attach *at, struct tb_maps *old, int err)
{
	if (err == -ESTALE) {
		err = state_open_config(at->dev, &old->config);
		if (!err)
			err = state_config_get(old->config, &at->cfg);
		if (old->config >= 0)
			close(old->config);
	} else {
		err = state_read_config(old, &at->cfg);
		maps_close(old);
	}
	if (err)
		out_error("attach dev %s: read pinned config: %s", at->dev, strerror(-err));
	return err;
}

/* What is pinned for the device: this build's maps, an older build's to
 * upgrade, or nothing (then nothing of tbctl's may be on the device). */
static int attach_find_pins(struct attach *at, struct kept_rules *k)
{
	struct attach_opts *a = &at->a;
	struct tb_maps old = {};
	int err = state_open(at->dev, &old);

	if (err == -EPROTO || (err == -EPROTONOSUPPORT && !a->replace)) {
		char why[256];

		out_error("attach dev %s: %s", at->dev, state_open_why(at->dev, err, why, sizeof(why)));
		return 1;
	}
	if (a->replace && err != -ENOENT) {
		if (!err)
			maps_close(&old);
		if (replace(a, k))
			return 1;
		err = -ENOENT;
	}
	at->upgrading = err == -ESTALE;
	at->existing = !err || at->upgrading;
	if (at->existing && pinned_config(at, &old, err))
		return 1;
	if (!at->existing) {
		struct hooked h[4];

		if (hooked_anywhere(at->ifindex, h)) {
			out_error("attach dev %s: tbctl's program (id %u, mode %s) is on the device, but its pins "
				  "are not in %s (bpffs unmounted, or another mount namespace's); detach here "
				  "removes it", at->dev, h[0].id, mode_names[h[0].mode], TB_PIN_ROOT);
			return 1;
		}
	}
	return 0;
}

/* A re-attach keeps what the pins say; pins left by an attach that was
 * killed before its config was written are started over. */
static int attach_settle_pins(struct attach *at)
{
	struct attach_opts *a = &at->a;

	if (at->existing && !at->cfg.attached) {
		/* Its maps hold nothing yet, and nothing was hooked. */
		out_warn("attach dev %s: finishing an attach that was interrupted", at->dev);
		state_unpin(at->dev, true);
		at->existing = false;
		at->cfg = (struct tb_config){};
	}
	if (!at->existing)
		return 0;
	if (attach_conflicts(a, &at->cfg))
		return 1;
	if (!a->has_mode)
		a->mode = at->cfg.mode;
	if (!a->has_key)
		a->key = at->cfg.key;
	return at->cfg.ifindex != (__u32)at->ifindex && adopt(at->dev, &at->cfg, at->ifindex);
}

/* How a tc mode's program goes on the hook: as tc-hook says, else
 * through a tcx link where the kernel has tcx; a re-attach keeps the
 * form the pins say (so an upgrade swaps the program in place). */
static int attach_tc_hook(struct attach *at)
{
	const struct attach_opts *a = &at->a;
	bool tcx = a->tc_hook == TC_HOOK_TCX;

	if (at->existing)
		at->tcx = at->cfg.tcx;
	else
		at->tcx = a->mode >= TB_MODE_TC_INGRESS && tcx_supported(at->ifindex) == 1;
	if (!a->has_tc_hook)
		return 0;
	if (a->mode <= TB_MODE_XDPGENERIC) {
		out_error("attach dev %s: tc-hook: only for a tc mode (tc-ingress, tc-egress)", at->dev);
		return 1;
	}
	if (tcx && tcx_supported(at->ifindex) != 1) {
		out_error("attach dev %s: tc-hook tcx: this kernel has no tcx (Linux 6.6 added it)", at->dev);
		return 1;
	}
	if (at->existing && tcx != at->tcx) {
		out_error("attach dev %s: attached through %s, not %s; detach first to change that", at->dev,
			  tc_hooks[at->tcx ? TC_HOOK_TCX : TC_HOOK_CLSACT], tc_hooks[a->tc_hook]);
		return 1;
	}
	at->tcx = tcx;
	return 0;
}

/* How an XDP mode's program goes on the hook: through libxdp's
 * dispatcher, unless LIBXDP_SKIP_DISPATCHER=1 says not to, as it says to
 * libxdp. A re-attach keeps the program's place among the dispatcher's,
 * so a priority given must be the one it has. */
static int attach_xdp_hook(struct attach *at)
{
	const struct attach_opts *a = &at->a;
	struct xdisp_prog p[XDISP_MAX_PROGS];
	__u32 disp, old;
	int n;

	at->xdisp = xdisp_wanted();
	if (!a->has_xdp_prio || !at->existing)
		return 0;
	if (a->mode > TB_MODE_XDPGENERIC) {
		out_error("attach dev %s: xdp-priority: only for an XDP mode, and it is attached in mode %s", at->dev,
			  mode_names[a->mode]);
		return 1;
	}
	old = xdp_prog(at->ifindex, a->mode, at->cfg.prog_id);
	n = xdisp_programs(at->ifindex, a->mode, p, &disp);
	for (int i = 0; i < n; i++)
		if (disp && p[i].id == old && p[i].prio != a->xdp_prio) {
			out_error("attach dev %s: attached at xdp-priority %u, not %u; detach first to move it", at->dev,
				  p[i].prio, a->xdp_prio);
			return 1;
		}
	return 0;
}

/* First on a tcx hook, unless before or after says where. */
static int attach_place(struct attach *at)
{
	const struct attach_opts *a = &at->a;
	const char *word = a->after ? "after" : "before";
	struct tb_err e;

	at->place = (struct tcx_place){ .after = a->after };
	if (!a->place_prog)
		return 0;
	if (a->mode <= TB_MODE_XDPGENERIC) {
		out_error("attach dev %s: %s: only a tc mode's program is placed among others (tc-ingress, tc-egress)",
			  at->dev, word);
		return 1;
	}
	if (!at->tcx) {
		out_error("attach dev %s: %s: programs are placed among others on a tcx hook, %s; tbctl's clsact "
			  "filter goes at priority %#x", at->dev, word,
			  a->has_tc_hook ? "not with tc-hook clsact" : "and this kernel has none (Linux 6.6 added it)",
			  TB_TC_PRIO);
		return 1;
	}
	if (hook_tcx_find(at->ifindex, a->mode, a->place_prog, &at->place.id, &e)) {
		out_error("attach dev %s: %s %s: %s", at->dev, word, a->place_prog, e.msg);
		return 1;
	}
	return 0;
}

/* qdisc fq: installed as the root, unless it is already, or another
 * root is there (tbctl replaces no one's qdisc). */
static int attach_fq(struct attach *at)
{
	char root[IF_NAMESIZE] = "";
	int err;

	if (!at->a.fq)
		return 0;
	if (at->a.mode != TB_MODE_TC_EGRESS) {
		out_error("attach dev %s: qdisc fq paces egress: it needs mode tc-egress", at->dev);
		return 1;
	}
	err = qdisc_fq_paces(at->ifindex);
	at->new_fq = err == 0;
	if (at->new_fq)
		err = qdisc_fq_install(at->ifindex, root, sizeof(root));
	if (err == -EEXIST) {
		out_error("attach dev %s: the root qdisc is %s, which tbctl does not replace; "
			  "remove it, or make fq the root yourself", at->dev, root);
		return 1;
	}
	if (err < 0) {
		out_error("attach dev %s: install fq as the root qdisc: %s", at->dev,
			  err == -ENOENT ? "this kernel has no fq qdisc (sch_fq)" : strerror(-err));
		return 1;
	}
	return 0;
}

/* An XDP program for the dispatcher is loaded as an extension; where
 * that cannot be prepared, it is attached without the dispatcher. */
static void attach_xdp_prepare(struct attach *at)
{
	struct tb_err e;

	at->anchor = -1;
	if (!at->xdisp || at->a.mode > TB_MODE_XDPGENERIC)
		return;
	at->anchor = xdisp_prepare(at->skel->progs.tb_xdp, &e);
	if (at->anchor >= 0)
		return;
	/* As libxdp falls back, saying so only when asked to. */
	if (out.verbose)
		out_warn("attach dev %s: %s; attaching without libxdp's dispatcher", at->dev, e.msg);
	at->xdisp = false;
}

/* The object loaded over the pins (made where there are none), the
 * config pinned, and an upgrade's maps copied into this layout's. */
static int attach_load(struct attach *at)
{
	const struct attach_opts *a = &at->a;
	char why[256];
	int err, pins;

	at->skel = open_pinned(at->dev, at->existing ? at->cfg.max_addrs :
					a->max_addrs ? a->max_addrs : TB_DEFAULT_MAX_ADDRS);
	if (!at->skel) {
		out_error("attach dev %s: open BPF object: %s", at->dev, strerror(errno));
		return 1;
	}
	if (order_supported(at->skel->rodata->tb_order_form, why, sizeof(why))) {
		out_error("attach dev %s: %s", at->dev, why);
		return 1;
	}
	at->skel->rodata->tb_key_dst = a->key == TB_KEY_DST;
	at->skel->rodata->tb_egress = a->mode == TB_MODE_TC_EGRESS;
	at->skel->rodata->tb_xdp_frags = hook_xdp_frags(at->skel->progs.tb_xdp);
	state_load_hook(at->skel, a->mode <= TB_MODE_XDPGENERIC ? at->skel->progs.tb_xdp : at->skel->progs.tb_tc);
	attach_xdp_prepare(at);
	at->any_mode = !at->existing && !a->has_mode && !a->has_tc_hook && !a->place_prog;
	err = at->upgrading ? upgrade_plan(at->dev, at->skel, &at->cfg, &at->moves) : 0;
	if (err) {
		out_error("attach dev %s: upgrade the pinned maps: %s; detach, then attach with this build",
			  at->dev, err == -EPROTO ? upgrade_error() : strerror(-err));
		return 1;
	}
	pins = state_pins_begin();
	err = pins < 0 ? pins : tb__load(at->skel);
	if (!err)
		err = state_pin_config(at->dev, at->skel);
	state_pins_end(pins);
	if (at->anchor >= 0)
		close(at->anchor);
	/* From here until the hook, a failure abandons the upgrade. */
	at->abandon = at->upgrading;
	if (err) {
		out_error("attach dev %s: load BPF program and maps: %s%s", at->dev, strerror(-err),
			  at->existing ? " (pinned maps from an incompatible build? detach first)" :
			  out.verbose ? "" : " (-v shows the kernel's log)");
		if (out.verbose)
			out_libbpf_tail(20);
		return 1;
	}
	/* Before the hook: the old program reads the old maps meanwhile. */
	err = at->upgrading ? upgrade_copy(&at->moves, at->skel) : 0;
	if (err) {
		out_error("attach dev %s: copy the pinned maps into this build's layout: %s", at->dev, strerror(-err));
		return 1;
	}
	at->prog_fd = bpf_program__fd(a->mode <= TB_MODE_XDPGENERIC ? at->skel->progs.tb_xdp : at->skel->progs.tb_tc);
	maps_from_skel(at->skel, &at->m);
	return 0;
}

/* The config the new program reads: the pins' (an upgrade's brought up
 * to date), or a fresh one with new keys. */
static int attach_config(struct attach *at)
{
	const struct attach_opts *a = &at->a;
	__u32 max = a->max_addrs ? a->max_addrs : TB_DEFAULT_MAX_ADDRS;

	if (at->existing) {
		at->own_qdisc = at->cfg.own_qdisc;
		if (at->upgrading && upgrade_config(&at->moves, &at->cfg))
			goto keys;
		return 0;
	}
	at->cfg = (struct tb_config){ .ifindex = at->ifindex, .mode = a->mode, .key = a->key, .max_addrs = max,
				      .layout = TB_LAYOUT, .place = TB_PLACE_SIPHASH,
				      .owed_shift = state_owed_shift(max), .table_shift = tb_table_shift(max),
				      .ways = tb_table_ways(max), .tcx = at->tcx, .event_rate = TB_EVENT_RATE_DEFAULT,
				      .event_interval_ms = TB_EVENT_INTERVAL_MS_DEFAULT };
	if (!keys_draw(&at->cfg))
		return 0;
keys:
	out_error("attach dev %s: draw the placement key: %s", at->dev, strerror(errno));
	return 1;
}

/* Config first: the new program may see packets the moment it is
 * hooked. It also says, before the clsact qdisc is made, that tbctl is
 * making it, so a detach after a kill in between removes it. */
static int attach_hook_as(struct attach *at, struct tb_err *e)
{
	struct hook_req r = { .dev = at->dev, .mode = at->a.mode, .ifindex = at->ifindex, .prog_fd = at->prog_fd,
			      .replace = at->existing, .tcx = at->tcx, .place = at->place, .xdisp = at->xdisp,
			      .prio = at->a.xdp_prio, .frags = at->skel->rodata->tb_xdp_frags };
	int err;

	at->cfg.mode = at->a.mode;
	at->cfg.tcx = at->tcx;
	at->cfg.attached = 1;
	at->cfg.prog_id = prog_id(at->prog_fd);
	at->cfg.own_fq |= at->new_fq;
	if (at->a.mode >= TB_MODE_TC_INGRESS && !at->tcx && !at->cfg.own_qdisc && qdisc_clsact_exists(at->ifindex) == 0)
		at->cfg.own_qdisc = at->own_qdisc = true;
	if ((err = state_write_config(&at->m, &at->cfg)))
		return tb_fail(e, err, "write config: %s", strerror(-err));
	return hook_program(&r, &at->own_qdisc, e);
}

/* The tc program, which the load left out, loaded over the pins it made:
 * only an attach that falls back from XDP pays for its verification. */
static int attach_load_tc(struct attach *at, struct tb_err *e)
{
	struct tb *tc = open_pinned(at->dev, at->cfg.max_addrs);
	int err;

	if (!tc)
		return tb_fail(e, -errno, "open BPF object: %s", strerror(errno));
	tc->rodata->tb_key_dst = at->a.key == TB_KEY_DST;
	state_load_hook(tc, tc->progs.tb_tc);
	err = tb__load(tc);
	if (err) {
		tb__destroy(tc);
		return tb_fail(e, err, "load the tc program: %s", strerror(-err));
	}
	at->skel_tc = tc;
	at->prog_fd = bpf_program__fd(tc->progs.tb_tc);
	return 0;
}

/* A fresh attach given no mode takes native XDP, and where the device
 * has none (or refuses tbctl's program there) tc-ingress, saying so. */
static int attach_hook(struct attach *at)
{
	struct tb_err e;
	char why[64] = "";
	int err = attach_hook_as(at, &e);

	if (err && at->any_mode && err != -EBUSY && err != -EEXIST && err != -EPERM) {
		snprintf(why, sizeof(why), "native XDP refused (%s)", strerror(-err));
		at->a.mode = TB_MODE_TC_INGRESS;
		at->tcx = tcx_supported(at->ifindex) == 1;
		err = attach_load_tc(at, &e);
		if (!err)
			err = attach_hook_as(at, &e);
		if (!err)
			out_warn("attach dev %s: %s; attached in mode tc-ingress through %s", at->dev, why,
				 at->tcx ? "tcx" : "clsact");
	}
	if (err) {
		out_error("attach dev %s: %s%s%s", at->dev, why, why[0] ? ", and in mode tc-ingress: " : "", e.msg);
		return 1;
	}
	at->abandon = false;
	if (at->own_qdisc != at->cfg.own_qdisc) {
		at->cfg.own_qdisc = at->own_qdisc;
		state_write_config(&at->m, &at->cfg);
	}
	return 0;
}

/* Hooked, the new maps are the live ones: once what the older ones hold
 * is moved, their pins go in place, and only then does the config say
 * so. After a failure the next attach finishes. */
static int attach_upgrade_finish(struct attach *at)
{
	unsigned int from = at->cfg.layout;
	int err = upgrade_settle(at->dev, &at->moves, at->skel, &at->cfg);

	err = err ? err : upgrade_maps(at->dev, &at->m, &at->cfg);
	if (err) {
		out_error("attach dev %s: upgrade the pinned maps from layout %u: %s "
			  "(attach again finishes it)", at->dev, from, strerror(-err));
		return 1;
	}
	out_warn("attach dev %s: upgraded the pinned maps from layout %u to %u; "
		 "rules, buckets and counters kept", at->dev, from, TB_LAYOUT);
	return 0;
}

/* attach; with replace, the pins' rules go to *k before the old pins are
 * removed. */
static int attach_device(const struct attach_opts *a, struct kept_rules *k)
{
	struct attach at = { .a = *a, .dev = a->t.dev };
	int err;

	if (attach_begin(&at) || attach_find_pins(&at, k) || attach_settle_pins(&at) || attach_tc_hook(&at) ||
	    attach_xdp_hook(&at) || attach_place(&at) || attach_fq(&at))
		return 1;
	err = attach_load(&at) || attach_config(&at) || attach_hook(&at);
	if (!err && at.upgrading)
		err = attach_upgrade_finish(&at);
	if (!err && k->r && (err = replace_rules(&at.m, k))) {
		out_error("attach dev %s replace: set the rules again: %s", at.dev, strerror(-err));
		err = 1;
	}
	if (!err && k->nbans && (err = bans_write(&at.m, k->bans, k->nbans))) {
		out_error("attach dev %s replace: set the bans again: %s", at.dev, strerror(-err));
		err = 1;
	}
	/* The one unwind: what this attach made, in reverse. */
	if (at.abandon)
		upgrade_abandon(at.dev, &at.moves);
	if (err && !at.existing)
		state_unpin(at.dev, true);
	if (err && at.new_fq)
		qdisc_fq_delete(at.ifindex);
	tb__destroy(at.skel);
	tb__destroy(at.skel_tc);
	return err;
}

static int run_attach(const void *opts)
{
	const struct attach_opts *a = opts;
	struct kept_rules kept = {};
	int err = attach_device(a, &kept);

	if (err && kept.r) {
		fprintf(stderr, "attach dev %s replace: did not finish; the old pins' rules were:\n", a->t.dev);
		for (int i = 0; i < kept.n; i++)
			rule_save(stderr, a->t.dev, &kept.r[i]);
		ban_save(stderr, a->t.dev, kept.bans, kept.nbans, now_ns());
	}
	free(kept.r);
	free(kept.bans);
	return err;
}

const struct command cmd_attach = {
	.name = "attach",
	.usage = "dev DEV [mode xdp|xdpgeneric|tc-ingress|tc-egress] [key src|dst] [max-addrs N] [qdisc fq] "
		 "[tc-hook tcx|clsact] [before|after PROG] [xdp-priority N] [replace]",
	.opts_size = sizeof(struct attach_opts),
	.parse = parse_attach,
	.run = run_attach,
	.check = attach_conflicts,
	.flags = CMD_ATTACH | CMD_SAVED,
	.caps = CAPS_HOOK,
};
