// SPDX-License-Identifier: GPL-2.0
/* The Prometheus text format of tbctl's state: per device whether its
 * program is on it and fq paces its shape rules, the global counters
 * (summed over CPUs), per rule its parameters and the sums of
 * its addresses' counters, the table's fill, and the top addresses by
 * dropped bytes. Read lock-free, as show reads: a scrape never waits for
 * a change nor holds one up, and maps opened before a detach stay
 * readable until closed, so a scrape sees a device whole or not at all. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include "lib/clock.h"
#include "lib/heap.h"
#include "lib/hook.h"
#include "exporter/metrics.h"
#include "lib/names.h"
#include "lib/devkey.h"
#include "lib/takeover.h"
#include "lib/ruleset.h"
#include "lib/snapshot.h"
#include "lib/state.h"
#include "lib/tables.h"
#include "view/counters.h"
#include "view/fleet_state.h"
#include "view/prom.h"
#include "logic/counters.h"

#define MAX_DEVS 256

struct rule_sum {
	struct tb_counters c;
	struct tb_counters total;       /* of its total's bucket */
	__u64 addrs;
};

struct top_row {
	struct tb_addr addr;
	int rule;
	struct tb_counters c;
	__u64 fleet_refused;            /* units of its rule's fleet key refused; rule fleet only */
};

/* One device as read at one moment. */
struct dev_read {
	char dev[DEVKEY_MAX];        /* a name, or pins' key (lib/devkey.h) */
	char labels[PROM_DEV_LABELS];   /* prom_dev_labels */
	bool read;                      /* its pins, read whole */
	bool hooked;                    /* tbctl's program on the device */
	int paced;                      /* fq paces its shape rules: 1, 0; -1: no shape rule */
	struct tb_config cfg;
	struct tb_stats st;
	struct tb_fleet_state fs;       /* heartbeat_ns 0: no fleet agent has run */
	__u64 tracked;
	struct ruleset *rs;
	struct rule_sum *sum;           /* [TB_MAX_RULES] */
	struct top_row *top;            /* heap.h, top_n at most */
	size_t ntop, top_n;
};


static void sample_dev(FILE *f, const char *name, const struct dev_read *d, __u64 v)
{
	fprintf(f, "%s{%s} %llu\n", name, d->labels, (unsigned long long)v);
}

static void sample_rule(FILE *f, const char *name, const struct dev_read *d, int id, __u64 v)
{
	char rule[PREFIX_TEXT_MAX];

	rule_format(&d->rs->rules[id], rule, sizeof(rule));
	fprintf(f, "%s{%s,rule=\"%s\",action=\"%s\"} %llu\n", name, d->labels, rule, action_names[d->rs->rules[id].action],
		(unsigned long long)v);
}

/* Listing order of the top addresses: most dropped bytes first. */
static int by_dropped_desc(const void *x, const void *y)
{
	__u64 a = ((const struct top_row *)x)->c.dropped_bytes, b = ((const struct top_row *)y)->c.dropped_bytes;

	return a < b ? 1 : a > b ? -1 : 0;
}

static int read_bucket(const struct tb_addr *a, const struct tb_bucket *b, int rule, void *ctx)
{
	struct dev_read *d = ctx;
	struct top_row r = { .addr = *a, .c = b->c, .rule = rule };

	d->tracked++;
	if (r.rule >= 0) {
		tb_counters_add(&d->sum[r.rule].c, &r.c);
		d->sum[r.rule].addrs++;
	}
	if (r.c.dropped_bytes)
		heap_offer(d->top, &d->ntop, d->top_n, sizeof(r), &r, by_dropped_desc);
	return 0;
}

/* What the fleet keys of the top rows under fleet rules refused. */
static void read_top_fleet(struct dev_read *d, const struct tb_maps *m)
{
	__u64 now = now_ns(), credit;

	for (size_t t = 0; t < d->ntop; t++) {
		struct top_row *r = &d->top[t];

		if (r->rule >= 0 && d->rs->rules[r->rule].fleet)
			snapshot_fleet_key(m, &d->rs->rules[r->rule], &r->addr, now, &credit, &r->fleet_refused);
	}
}

/* The device's maps, read in the order show reads them. -ENOENT (and
 * not attached) when there are no pins, or another build's. */
static int read_dev(struct dev_read *d)
{
	struct snapshot sn;
	char name[IF_NAMESIZE];
	enum hook_where where;
	struct tb_maps m;
	int err = state_open(d->dev, &m);

	if (err)
		return err == -ENOENT || err == -EPROTO || err == -ESTALE ? 0 : err;
	memset(&sn, 0, sizeof(sn));
	err = state_read_config(&m, &d->cfg);
	if (!err && !d->cfg.attached)
		goto out;
	if (!err)
		err = snapshot_begin(&sn, &m, d->rs);
	if (!err)
		d->hooked = pins_prog(d->dev, &d->cfg, &where, name) != 0 || !devkey_here(d->dev);
	if (!err) {
		d->paced = shape_paced(d->dev, &d->cfg, d->rs);
		err = d->paced < -1 ? d->paced : 0;
	}
	if (!err)
		err = stats_sum(&m, &d->st);
	if (!err && bpf_map_lookup_elem(m.fleetstate, &(__u32){ 0 }, &d->fs))
		err = -errno;
	if (!err)
		err = snapshot_foreach(&sn, read_bucket, d);
	if (!err && d->ntop)
		qsort(d->top, d->ntop, sizeof(*d->top), by_dropped_desc);
	if (!err)
		read_top_fleet(d, &m);
	for (int id = 0; !err && id < TB_MAX_RULES; id++) {
		__u32 slot = d->rs->rules[id].shared;
		struct tb_shared sh;

		if (!rule_charges_shared(&d->rs->rules[id]))
			continue;
		if (bpf_map_lookup_elem_flags(m.shared, &slot, &sh, BPF_F_LOCK))
			err = -errno;
		else if (d->rs->rules[id].total.rate)
			d->sum[id].total = sh.b.c;
		else
			d->sum[id].c = sh.b.c;
	}
	d->read = !err;
out:
	snapshot_end(&sn);
	maps_close(&m);
	return err;
}

/* The fleet agent's state, for the devices one has run on. */
static void write_fleet(FILE *f, struct dev_read *d, int n)
{
	const char **devs = calloc(n ? n : 1, sizeof(*devs));
	struct tb_fleet_state *fs = calloc(n ? n : 1, sizeof(*fs));
	int k = 0;

	for (int i = 0; devs && fs && i < n; i++)
		if (d[i].read) {
			devs[k] = d[i].labels;
			fs[k++] = d[i].fs;
		}
	if (devs && fs)
		fleet_state_prom(f, devs, fs, k);
	free(devs);
	free(fs);
}

/* A gauge of each device (attached ones only, unless all). */
static void device_gauge(FILE *f, const char *name, const char *help, struct dev_read *d, int n,
			 __u64 (*value)(const struct dev_read *d))
{
	prom_family(f, name, "gauge", help);
	for (int i = 0; i < n; i++)
		if (d[i].read)
			sample_dev(f, name, &d[i], value(&d[i]));
}

static __u64 dev_tracked(const struct dev_read *d)
{
	return d->tracked;
}

static __u64 dev_max(const struct dev_read *d)
{
	return d->cfg.max_addrs;
}

/* Each device: whether it is policed, its shape rules paced, its table;
 * then its global counters. */
static void write_devices(FILE *f, struct dev_read *d, int n)
{
	char name[96];

	prom_family(f, "tbctl_device_attached", "gauge",
		    "1 when tbctl polices the device, 0 when not: no pins, or its program is gone from the device");
	for (int i = 0; i < n; i++)
		sample_dev(f, "tbctl_device_attached", &d[i], d[i].read && d[i].hooked);
	prom_family(f, "tbctl_device_shape_paced", "gauge",
		    "For a device with action shape rules: 1 when fq schedules its egress, 0 when shaped packets pass unpaced");
	for (int i = 0; i < n; i++)
		if (d[i].read && d[i].paced >= 0)
			sample_dev(f, "tbctl_device_shape_paced", &d[i], d[i].paced);
	device_gauge(f, "tbctl_addresses_tracked", "Per-address buckets in the table", d, n, dev_tracked);
	device_gauge(f, "tbctl_addresses_max", "Size of the per-address table (max-addrs)", d, n, dev_max);
	for (int k = 0; k < stats_field_count; k++) {
		snprintf(name, sizeof(name), "tbctl_%s_total", stats_fields[k].name);
		prom_family(f, name, "counter", stats_fields[k].help);
		for (int i = 0; i < n; i++)
			if (d[i].read)
				sample_dev(f, name, &d[i], counter_value(&d[i].st, &stats_fields[k]));
	}
}

/* A rule parameter of every rule that has it, in the unit it counts. */
static void rule_param(FILE *f, const char *name, const char *help, struct dev_read *d, int n, int cost,
		       __u64 (*value)(const struct tb_rule *r))
{
	prom_family(f, name, "gauge", help);
	for (int i = 0; i < n; i++)
		for (int id = 0; d[i].read && id < TB_MAX_RULES; id++) {
			const struct tb_rule *r = &d[i].rs->rules[id];

			if (r->in_use && r->cost == cost && r->action != TB_ACTION_PASS && value(r))
				sample_rule(f, name, &d[i], id, value(r));
		}
}

static __u64 rule_rate(const struct tb_rule *r) { return r->r.rate; }
static __u64 rule_burst(const struct tb_rule *r) { return r->burst; }
static __u64 total_rate(const struct tb_rule *r) { return r->total.rate; }
static __u64 total_burst(const struct tb_rule *r) { return r->total.rate ? r->total_burst : 0; }

/* Rule parameters, in the unit the rule counts: rate, then burst. */
static void write_rule_params(FILE *f, struct dev_read *d, int n)
{
	char name[96], help[160];

	for (int cost = TB_COST_BYTES; cost <= TB_COST_PACKETS; cost++) {
		const char *unit = cost == TB_COST_BYTES ? "bytes" : "packets";

		for (int burst = 0; burst <= 1; burst++) {
			snprintf(name, sizeof(name), burst ? "tbctl_rule_burst_%s" : "tbctl_rule_rate_%s_per_second",
				 unit);
			snprintf(help, sizeof(help), "A rule's %s, for rules that count %s", burst ? "burst" : "rate",
				 unit);
			rule_param(f, name, help, d, n, cost, burst ? rule_burst : rule_rate);
			snprintf(name, sizeof(name), burst ? "tbctl_rule_total_burst_%s" :
				 "tbctl_rule_total_rate_%s_per_second", unit);
			snprintf(help, sizeof(help), "The %s of a rule's total, for rules that count %s",
				 burst ? "burst" : "rate", unit);
			rule_param(f, name, help, d, n, cost, burst ? total_burst : total_rate);
		}
	}
}

/* What each rule's total refused, its addresses, and its counters. */
static void write_rule_counts(FILE *f, struct dev_read *d, int n)
{
	char name[96], help[192];

	for (int bytes = 0; bytes <= 1; bytes++) {
		snprintf(name, sizeof(name), "tbctl_rule_total_refused_%s_total", bytes ? "bytes" : "packets");
		snprintf(help, sizeof(help), "%s the rule's addresses passed and its total refused (dropped, "
			 "or counted by a monitor rule)", bytes ? "Bytes" : "Packets");
		prom_family(f, name, "counter", help);
		for (int i = 0; i < n; i++)
			for (int id = 0; d[i].read && id < TB_MAX_RULES; id++) {
				const struct tb_counters *t = &d[i].sum[id].total;

				if (d[i].rs->rules[id].in_use && d[i].rs->rules[id].total.rate)
					sample_rule(f, name, &d[i], id, bytes ? t->dropped_bytes + t->monitored_bytes :
						    t->dropped_packets + t->monitored_packets);
			}
	}
	prom_family(f, "tbctl_rule_addresses", "gauge", "Tracked addresses charged to the rule (0 for a shared rule)");
	for (int i = 0; i < n; i++)
		for (int id = 0; d[i].read && id < TB_MAX_RULES; id++)
			if (d[i].rs->rules[id].in_use)
				sample_rule(f, "tbctl_rule_addresses", &d[i], id, d[i].sum[id].addrs);
	for (int k = 0; k < counter_field_count; k++) {
		snprintf(name, sizeof(name), "tbctl_rule_%s_total", counter_fields[k].name);
		snprintf(help, sizeof(help), "%s of the rule's tracked addresses, or of its shared bucket "
			 "(an evicted or reset address takes its share along)", counter_fields[k].name);
		prom_family(f, name, "counter", help);
		for (int i = 0; i < n; i++)
			for (int id = 0; d[i].read && id < TB_MAX_RULES; id++)
				if (d[i].rs->rules[id].in_use)
					sample_rule(f, name, &d[i], id, counter_value(&d[i].sum[id].c, &counter_fields[k]));
	}
}

static void sample_top(FILE *f, const char *name, const struct dev_read *d, const struct top_row *r, __u64 v)
{
	char addr[INET6_ADDRSTRLEN], rule[PREFIX_TEXT_MAX] = "none";

	ruleset_addr_format(d->rs, &r->addr, r->rule, addr, sizeof(addr));
	if (r->rule >= 0)
		rule_format(&d->rs->rules[r->rule], rule, sizeof(rule));
	fprintf(f, "%s{%s,address=\"%s\",rule=\"%s\"} %llu\n", name, d->labels, addr, rule, (unsigned long long)v);
}

/* What the fleet refused of the top addresses under fleet rules, in the
 * unit their rule charges. */
static void write_top_fleet(FILE *f, struct dev_read *d, int n)
{
	char name[96], help[160];

	for (int packets = 0; packets <= 1; packets++) {
		bool family = false;

		snprintf(name, sizeof(name), "tbctl_address_fleet_refused_%s_total", packets ? "packets" : "bytes");
		snprintf(help, sizeof(help), "%s a top address's fleet key refused (its rule charges %s)",
			 packets ? "Packets" : "Bytes", packets ? "packets" : "bytes");
		for (int i = 0; i < n; i++)
			for (size_t t = 0; t < d[i].ntop; t++) {
				const struct top_row *r = &d[i].top[t];
				const struct tb_rule *rule = r->rule >= 0 ? &d[i].rs->rules[r->rule] : NULL;

				if (!rule || !rule->fleet || (rule->cost == TB_COST_PACKETS) != packets)
					continue;
				if (!family)
					prom_family(f, name, "counter", help);
				family = true;
				sample_top(f, name, &d[i], r, r->fleet_refused);
			}
	}
}

/* The top addresses by dropped bytes: one series each, of their passed
 * and dropped counters. */
static void write_top_addresses(FILE *f, struct dev_read *d, int n)
{
	char name[96], help[160];
	bool any = false;

	for (int i = 0; i < n; i++)
		any |= d[i].ntop > 0;
	for (int k = 0; any && k < counter_field_count; k++) {
		if (strncmp(counter_fields[k].name, "passed_", 7) && strncmp(counter_fields[k].name, "dropped_", 8))
			continue;
		snprintf(name, sizeof(name), "tbctl_address_%s_total", counter_fields[k].name);
		snprintf(help, sizeof(help), "%s of one of the top addresses by dropped bytes", counter_fields[k].name);
		prom_family(f, name, "counter", help);
		for (int i = 0; i < n; i++)
			for (size_t t = 0; t < d[i].ntop; t++)
				sample_top(f, name, &d[i], &d[i].top[t],
					   counter_value(&d[i].top[t].c, &counter_fields[k]));
	}
	write_top_fleet(f, d, n);
}

/* Every family, over every device that was read. */
static void write_families(FILE *f, struct dev_read *d, int n)
{
	write_devices(f, d, n);
	write_rule_params(f, d, n);
	write_rule_counts(f, d, n);
	write_top_addresses(f, d, n);
}

struct found {
	char (*names)[DEVKEY_MAX];
	int n;
};

static int found_device(const char *dev, void *ctx)
{
	struct found *f = ctx;

	if (f->n < MAX_DEVS)
		strcpy(f->names[f->n++], dev);
	return 0;
}

int metrics_write(FILE *out, const char *const *devs, int n, unsigned int top)
{
	static char found[MAX_DEVS][DEVKEY_MAX];
	struct dev_read *d;
	int err = 0;

	if (!n) {
		struct found f = { found, 0 };

		takeover_all();
		state_foreach_device(found_device, &f);
		n = f.n;
		devs = NULL;
	}
	d = calloc(n ? n : 1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (int i = 0; i < n && !err; i++) {
		snprintf(d[i].dev, sizeof(d[i].dev), "%.*s", (int)sizeof(d[i].dev) - 1, devs ? devs[i] : found[i]);
		prom_dev_labels(d[i].labels, d[i].dev);
		d[i].rs = calloc(1, sizeof(*d[i].rs));
		d[i].sum = calloc(TB_MAX_RULES, sizeof(*d[i].sum));
		d[i].top_n = top;
		d[i].top = calloc(top ? top : 1, sizeof(*d[i].top));
		if (!d[i].rs || !d[i].sum || !d[i].top)
			err = -ENOMEM;
		else
			err = read_dev(&d[i]);
	}
	if (!err) {
		int shown = 0;

		/* Found by the pin directory alone: listed only when read. */
		for (int i = 0; i < n; i++) {
			if (devs || d[i].read) {
				d[shown++] = d[i];
				continue;
			}
			free(d[i].rs);
			free(d[i].sum);
			free(d[i].top);
		}
		write_families(out, d, shown);
		write_fleet(out, d, shown);
		n = shown;
		err = fflush(out) || ferror(out) ? -EIO : 0;
	}
	for (int i = 0; i < n; i++) {
		free(d[i].rs);
		free(d[i].sum);
		free(d[i].top);
	}
	free(d);
	return err;
}
