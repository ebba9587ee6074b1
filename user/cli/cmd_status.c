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
#include "lib/qdisc.h"
#include "lib/state.h"
#include "cli/tbctl.h"
#include "lib/upgrade.h"

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
	struct tb_fleet_state fs = {};
	struct tb_config cfg;
	struct tb_maps m;
	int rules = 0, fleet_rules = 0, paced, err;
	__u32 zero = 0;
	char state[160], name[IF_NAMESIZE] = "";
	bool moved = false;
	__u32 id = 0;

	err = state_open(dev, &m);
	/* Listed, then detached before it was read: no longer there to report. */
	if (err == -ENOENT && sc->listed && !state_pinned(dev))
		return 0;
	if (err == -ENOENT && state_unfinished(dev))
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
	if (err == -EPROTONOSUPPORT)
		return status_broken(dev, state_too_old(dev), arr);
	if (err)
		return status_broken(dev, err == -EPROTO ? state_layout_error() : strerror(-err), arr);
	err = state_read_config(&m, &cfg);
	if (!err)
		err = ruleset_read(&rs, &m);
	if (!err)
		err = buckets_foreach(&m, count_bucket, &cnt);
	if (!err)
		id = pins_prog(dev, &cfg, m.config, &moved);
	if (!err && bpf_map_lookup_elem(m.fleetstate, &zero, &fs))
		err = -errno;
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
	for (int i = 0; i < TB_MAX_RULES; i++) {
		rules += rs.rules[i].in_use;
		fleet_rules += rs.rules[i].in_use && rs.rules[i].fleet;
	}
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
		json_add_str(o, "placement", cfg.place == TB_PLACE_SIPHASH ? "siphash" : "mix");
		if (paced >= 0)
			json_object_object_add(o, "shape_paced", json_object_new_boolean(paced));
		if (fleet_rules || fs.heartbeat_ns)
			fleet_status(&fs, o);
		json_object_array_add(arr, o);
	} else {
		printf("%s: mode %s key %s %s, %d rule%s, %llu of %u addresses tracked%s\n", dev,
		       mode_names[cfg.mode], key_names[cfg.key], state,
		       rules, rules == 1 ? "" : "s", (unsigned long long)cnt.addrs, cfg.max_addrs,
		       paced ? "" : "; shape rules NOT PACED (fq no longer schedules the egress)");
		if (fleet_rules && !fs.heartbeat_ns)
			printf("  fleet: %d fleet rule%s, NO AGENT has run (tbctl fleet run dev %s store URL)\n",
			       fleet_rules, fleet_rules == 1 ? "" : "s", dev);
		else if (fleet_rules || fs.heartbeat_ns)
			fleet_status(&fs, NULL);
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
	int err = bpffs_ensure();

	if (err) {
		out_error("status: bpffs unavailable at %s: %s", TB_BPFFS, bpffs_error(err));
		return 1;
	}
	/* Built only for -j: text goes out as it is made. */
	sc.arr = out.json ? json_object_new_array() : NULL;
	err = a->has_dev ? status_one(a->dev, &sc) : state_foreach_device(status_one, &sc);
	if (out.json)
		out_json(sc.arr);
	return err;
}

const struct command cmd_status = { "status", parse_status, run_status, "[dev DEV]", false, CAPS_READ };
