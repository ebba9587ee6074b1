// SPDX-License-Identifier: GPL-2.0
/* status: what is attached, where, with how many rules and addresses,
 * and what an attach, detach or upgrade left half done. */
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
#include "lib/hook.h"
#include "lib/xdisp.h"
#include "lib/netns.h"
#include "lib/devkey.h"
#include "lib/takeover.h"
#include "lib/qdisc.h"
#include "lib/state.h"
#include "lib/tables.h"
#include "cli/tbctl.h"
#include "lib/upgrade.h"
#include "view/fleet_state.h"

static int count_bucket(const struct tb_addr *k, const struct tb_bucket *b, void *ctx)
{
	(void)k;
	(void)b;
	++*(__u64 *)ctx;
	return 0;
}

/* A device whose pins status cannot report on: said, in the listing
 * with the healthy ones, and counted as a failure. */
static int status_broken(const char *dev, const char *why, struct json_object *arr)
{
	char name[DEVKEY_LABEL_MAX];

	devkey_label(dev, name, sizeof(name));
	if (out.json) {
		struct json_object *o = json_object_new_object();

		json_add_str(o, "dev", name);
		json_add_str(o, "error", why);
		json_object_array_add(arr, o);
	} else {
		out_error("status dev %s: %s", name, why);
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

/* What status says of one attached device. */
struct status_dev {
	const char *dev;
	struct tb_config cfg;
	struct tb_fleet_state fs;
	__u64 addrs;
	int rules, fleet_rules;
	int paced;              /* shape_paced() */
	enum hook_where where;
	bool elsewhere;         /* the pins of another namespace's device */
	__u32 id;
	/* The programs on its tcx hook, in order; 0 when it is on none,
	 * or they cannot be listed (that takes CAP_NET_ADMIN). */
	__u32 tcx[TCX_MAX_PROGS];
	int ntcx;
	/* The programs on its XDP hook, in order, and libxdp's dispatcher
	 * that runs them (0: tbctl's program is attached without it). */
	struct xdisp_prog xdp[XDISP_MAX_PROGS];
	int nxdp;
	__u32 dispatcher;
	char name[IF_NAMESIZE]; /* the device's name now, when renamed */
	char name_pinned[IF_NAMESIZE];  /* the name its pins are keyed by */
	char netns[IF_NAMESIZE + 64];   /* its namespace, as netns_label says it */
	bool netns_shown;       /* said in text: it is not this namespace */
	char state[200];
};

/* The pins opened, or what stood in the way said; 0 and *done when
 * there is nothing to report (detached after it was listed). */
static int status_open(const char *dev, const struct status_ctx *sc, int settle, struct tb_maps *m, bool *done)
{
	char why[256];
	int err = state_open(dev, m);

	*done = false;
	if (!err)
		return 0;
	*done = true;
	if (err == -ENOENT && sc->listed && !state_pinned(dev))
		return 0;
	if (err == -ENOENT && state_unfinished(dev))
		return status_half(dev, "its pins half made or half removed",
				   "an attach was interrupted while pinning its maps, or a detach while "
				   "removing them (tbctl attach finishes it, tbctl detach removes it)", settle, sc->arr);
	if (err == -ENOENT)
		return status_half(dev, "no pins yet", "not attached", settle, sc->arr);
	if (err == -ESTALE)
		snprintf(why, sizeof(why), "pinned by an older tbctl build (%s); tbctl attach upgrades them",
			 state_layout_error());
	else if (err == -EPROTONOSUPPORT)
		snprintf(why, sizeof(why), "%s", state_too_old(dev));
	else
		snprintf(why, sizeof(why), "%s", err == -EPROTO ? state_layout_error() : strerror(-err));
	return status_broken(dev, why, sc->arr);
}

/* Config, rules, addresses, the program that uses the pins, and the
 * fleet agent's state; -errno on failure. */
static int status_gather(struct status_dev *sd, const struct tb_maps *m)
{
	static struct ruleset rs;
	__u32 zero = 0;
	int err = state_read_config(m, &sd->cfg);

	if (!err)
		err = ruleset_read(&rs, m);
	if (!err)
		err = buckets_foreach(m, count_bucket, &sd->addrs);
	if (!err)
		sd->id = pins_prog(sd->dev, &sd->cfg, &sd->where, sd->name);
	if (!err && sd->where == HOOK_HERE)
		sd->ntcx = hook_tcx_programs(&sd->cfg, sd->id, sd->tcx);
	if (!err && sd->where == HOOK_HERE && sd->id && sd->cfg.mode <= TB_MODE_XDPGENERIC)
		sd->nxdp = xdisp_programs(sd->cfg.ifindex, sd->cfg.mode, sd->xdp, &sd->dispatcher);
	if (!err && bpf_map_lookup_elem(m->fleetstate, &zero, &sd->fs))
		err = -errno;
	if (err)
		return err;
	for (int i = 0; i < TB_MAX_RULES; i++) {
		sd->rules += rs.rules[i].in_use;
		sd->fleet_rules += rs.rules[i].in_use && rs.rules[i].fleet;
	}
	/* Shape rules only set departure times: fq must still be the one
	 * to keep them, whatever has been done to the qdiscs since. */
	sd->paced = shape_paced(sd->dev, &sd->cfg, &rs);
	return 0;
}

/* Where its program is, in words. */
static void status_where(struct status_dev *sd)
{
	if (sd->elsewhere && sd->id)
		snprintf(sd->state, sizeof(sd->state), "attached (program %u, held by its tcx link)", sd->id);
	else if (sd->elsewhere)
		snprintf(sd->state, sizeof(sd->state), "attached by its pins (its hook is out of this namespace's "
			 "sight: status there checks it)");
	else if (sd->id && sd->where == HOOK_HERE)
		snprintf(sd->state, sizeof(sd->state), "attached");
	else if (sd->id && sd->where == HOOK_RENAMED)
		snprintf(sd->state, sizeof(sd->state), "attached to %s, as the device is now named (program %u)",
			 sd->name, sd->id);
	else if (sd->id)
		snprintf(sd->state, sizeof(sd->state), "attached to ifindex %u, moved to another network namespace "
			 "(program %u, held by its tcx link)", sd->cfg.ifindex, sd->id);
	else if (sd->where == HOOK_AWAY)
		snprintf(sd->state, sizeof(sd->state), "NOT ATTACHED here (no device %s of ifindex %u in this "
			 "namespace: deleted, or moved to another; made again, attach takes the pins over)",
			 sd->name_pinned, sd->cfg.ifindex);
	else
		snprintf(sd->state, sizeof(sd->state), "NOT ATTACHED (program gone from the device)");
}

/* Whether the pins say it is attached, where no hook can say. */
static bool status_attached(const struct status_dev *sd)
{
	return sd->id || sd->elsewhere;
}

/* Where the device is, in one word for -j. */
static const char *status_device(const struct status_dev *sd)
{
	if (sd->elsewhere)
		return "other netns";
	if (sd->where == HOOK_HERE)
		return "here";
	if (sd->where == HOOK_RENAMED)
		return "renamed";
	return sd->id ? "moved" : "gone";
}

/* How a tc mode's program is on the hook: "tcx", "clsact", or NULL
 * (an XDP mode, or not here to tell). */
static const char *status_tc_hook(const struct status_dev *sd)
{
	if (sd->cfg.mode <= TB_MODE_XDPGENERIC || !status_attached(sd))
		return NULL;
	return sd->cfg.tcx ? "tcx" : "clsact";
}

/* How an XDP mode's program is on the hook: "dispatcher" (libxdp's),
 * "direct", or NULL (a tc mode, or not here to tell). */
static const char *status_xdp_hook(const struct status_dev *sd)
{
	if (sd->cfg.mode > TB_MODE_XDPGENERIC || !sd->nxdp)
		return NULL;
	return sd->dispatcher ? "dispatcher" : "direct";
}

static struct json_object *status_xdp_json(const struct status_dev *sd)
{
	struct json_object *a = json_object_new_array();

	for (int i = 0; i < sd->nxdp; i++) {
		struct json_object *p = json_object_new_object();

		json_add_u64(p, "id", sd->xdp[i].id);
		json_add_str(p, "name", sd->xdp[i].name);
		json_add_u64(p, "priority", sd->xdp[i].prio);
		json_object_object_add(p, "tbctl", json_object_new_boolean(sd->xdp[i].id == sd->id));
		json_object_array_add(a, p);
	}
	return a;
}

static void status_xdp_text(const struct status_dev *sd)
{
	if (!sd->dispatcher)
		return;
	printf("  XDP hook through libxdp's dispatcher (id %u), in the order they run:", sd->dispatcher);
	for (int i = 0; i < sd->nxdp; i++)
		printf("%s %s (id %u, priority %u%s)", i ? "," : "", sd->xdp[i].name, sd->xdp[i].id, sd->xdp[i].prio,
		       sd->xdp[i].id == sd->id ? ", tbctl's" : "");
	printf("\n");
}

/* The programs on its tcx hook, in the order they run, tbctl's marked. */
static struct json_object *status_tcx_json(const struct status_dev *sd)
{
	struct json_object *a = json_object_new_array();
	char name[BPF_OBJ_NAME_LEN];

	for (int i = 0; i < sd->ntcx; i++) {
		struct json_object *p = json_object_new_object();

		prog_name(sd->tcx[i], name);
		json_add_u64(p, "id", sd->tcx[i]);
		json_add_str(p, "name", name);
		json_object_object_add(p, "tbctl", json_object_new_boolean(sd->tcx[i] == sd->id));
		json_object_array_add(a, p);
	}
	return a;
}

static void status_tcx_text(const struct status_dev *sd)
{
	char name[BPF_OBJ_NAME_LEN];

	if (sd->ntcx < 2)
		return;
	printf("  tcx %s hook, in the order they run:", sd->cfg.mode == TB_MODE_TC_EGRESS ? "egress" : "ingress");
	for (int i = 0; i < sd->ntcx; i++) {
		prog_name(sd->tcx[i], name);
		printf("%s %s (id %u%s)", i ? "," : "", name, sd->tcx[i], sd->tcx[i] == sd->id ? ", tbctl's" : "");
	}
	printf("\n");
}

static void status_json(const struct status_dev *sd, struct json_object *arr)
{
	struct json_object *o = json_object_new_object();
	const char *tc_hook = status_tc_hook(sd);

	json_add_str(o, "dev", sd->name_pinned);
	json_add_str(o, "netns", sd->netns);
	json_add_u64(o, "netns_inode", devkey_unkeyed(sd->dev) ? 0 : devkey_netns(sd->dev));
	json_add_u64(o, "ifindex", sd->cfg.ifindex);
	json_add_str(o, "mode", mode_names[sd->cfg.mode]);
	if (tc_hook)
		json_add_str(o, "tc_hook", tc_hook);
	if (sd->ntcx)
		json_object_object_add(o, "tcx_programs", status_tcx_json(sd));
	if (status_xdp_hook(sd))
		json_add_str(o, "xdp_hook", status_xdp_hook(sd));
	if (sd->dispatcher) {
		json_add_u64(o, "xdp_dispatcher", sd->dispatcher);
		json_object_object_add(o, "xdp_programs", status_xdp_json(sd));
	}
	json_add_str(o, "key", key_names[sd->cfg.key]);
	json_object_object_add(o, "attached", json_object_new_boolean(status_attached(sd)));
	json_object_object_add(o, "hook_checked", json_object_new_boolean(!sd->elsewhere || sd->id));
	json_add_str(o, "device", status_device(sd));
	json_add_u64(o, "prog_id", sd->id);
	json_add_u64(o, "rules", sd->rules);
	json_add_u64(o, "addresses", sd->addrs);
	json_add_u64(o, "max_addrs", sd->cfg.max_addrs);
	json_add_str(o, "placement", sd->cfg.place == TB_PLACE_SIPHASH ? "siphash" : "mix");
	if (sd->paced >= 0)
		json_object_object_add(o, "shape_paced", json_object_new_boolean(sd->paced));
	if (sd->fleet_rules || sd->fs.heartbeat_ns)
		fleet_state_json(&sd->fs, o);
	json_object_array_add(arr, o);
}

static void status_text(const struct status_dev *sd)
{
	const char *tc_hook = status_tc_hook(sd) ? status_tc_hook(sd) : sd->dispatcher ? "libxdp's dispatcher" : NULL;

	printf("%s%s%s%s: mode %s key %s %s%s%s, %d rule%s, %llu of %u addresses tracked%s\n", sd->name_pinned,
	       sd->netns_shown ? " (netns " : "", sd->netns_shown ? sd->netns : "", sd->netns_shown ? ")" : "",
	       mode_names[sd->cfg.mode], key_names[sd->cfg.key], sd->state, tc_hook ? " through " : "",
	       tc_hook ? tc_hook : "", sd->rules, sd->rules == 1 ? "" : "s", (unsigned long long)sd->addrs,
	       sd->cfg.max_addrs, sd->paced ? "" : "; shape rules NOT PACED (fq no longer schedules the egress)");
	status_tcx_text(sd);
	status_xdp_text(sd);
	if (sd->fleet_rules && !sd->fs.heartbeat_ns)
		printf("  fleet: %d fleet rule%s, NO AGENT has run (tbctl fleet run dev %s store URL)\n",
		       sd->fleet_rules, sd->fleet_rules == 1 ? "" : "s", sd->name_pinned);
	else if (sd->fleet_rules || sd->fs.heartbeat_ns)
		fleet_state_text(stdout, &sd->fs);
}

/* Which device and namespace the pins are keyed by. */
static void status_place(struct status_dev *sd)
{
	devkey_dev(sd->dev, sd->name_pinned);
	sd->elsewhere = !devkey_here(sd->dev);
	if (devkey_unkeyed(sd->dev))
		snprintf(sd->netns, sizeof(sd->netns), "unknown (keyed by the name alone, by an earlier release)");
	else
		netns_label(devkey_netns(sd->dev), sd->netns, sizeof(sd->netns));
	sd->netns_shown = !devkey_ours(sd->dev) || devkey_unkeyed(sd->dev);
}

/* settle: 1 on a first read, 0 once the device's lock was free, -1 when it
 * was held throughout the wait. */
static int status_read(const char *dev, const struct status_ctx *sc, int settle)
{
	struct status_dev sd = { .dev = dev };
	struct tb_maps m;
	bool done;
	char msg[128];
	int err = status_open(dev, sc, settle, &m, &done);

	if (done)
		return err;
	status_place(&sd);
	err = status_gather(&sd, &m);
	maps_close(&m);
	if (err) {
		snprintf(msg, sizeof(msg), "read pinned maps: %s", strerror(-err));
		return status_broken(dev, msg, sc->arr);
	}
	if (!sd.cfg.attached)
		return status_half(dev, "its config not written yet",
				   "an attach was interrupted before its config was written "
				   "(tbctl attach finishes it, tbctl detach removes it)", settle, sc->arr);
	if (sd.paced < -1) {
		snprintf(msg, sizeof(msg), "read qdiscs: %s", strerror(-sd.paced));
		return status_broken(dev, msg, sc->arr);
	}
	status_where(&sd);
	if (out.json)
		status_json(&sd, sc->arr);
	else
		status_text(&sd);
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

static int run_status(const void *opts)
{
	const struct cmd_target *a = opts;
	struct status_ctx sc = { .listed = !a->has_dev };
	int err;

	if (bpffs_ready("status"))
		return 1;
	/* Built only for -j: text goes out as it is made. */
	sc.arr = out.json ? json_object_new_array() : NULL;
	if (a->has_dev && device_take_over("status", a->dev, TAKE_USABLE))
		return 1;
	if (!a->has_dev)
		takeover_all();
	err = a->has_dev ? status_one(a->dev, &sc) : state_foreach_device(status_one, &sc);
	if (out.json)
		out_json(sc.arr);
	return err;
}

const struct command cmd_status = {
	.name = "status",
	.usage = "[dev DEV]",
	.opts_size = sizeof(struct cmd_target),
	.parse = parse_dev_optional,
	.run = run_status,
	.caps = CAPS_READ,
};
