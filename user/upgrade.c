// SPDX-License-Identifier: GPL-2.0
/* Upgrades in place. attach over the pins of an older build keeps every
 * map whose layout did not change, so rules, buckets and counters survive
 * and the program swap stays atomic; libbpf creates the maps that are new
 * at load; what remains is rewritten here. Per layout:
 *   1 -> 2: owed[] is new (config.owed_shift sizes it), and struct
 *           tb_rate gained the reciprocal tb_origin uses, zero in layout 1
 *           rules (which only makes re-created buckets start emptier):
 *           every rule is published again, computed by this build. */
#include <errno.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include "state.h"
#include "upgrade.h"

unsigned int upgrade_layout_of(const struct tb_config *cfg)
{
	return cfg->layout ? cfg->layout : 1;
}

void upgrade_config(struct tb_config *cfg)
{
	if (!cfg->owed_shift)
		cfg->owed_shift = state_owed_shift(cfg->max_addrs);
}

/* Each rule to a fresh slot with this build's tb_rate_make; buckets keep
 * their levels across the change, as on any rule change. */
static int republish_rules(const struct tb_maps *m)
{
	struct ruleset *rs = calloc(1, sizeof(*rs));
	struct tb_prefix *p = calloc(TB_MAX_RULES, sizeof(*p));
	struct rule_spec *s = calloc(TB_MAX_RULES, sizeof(*s));
	int n = 0, err;

	err = rs && p && s ? ruleset_load(rs, m) : -ENOMEM;
	for (int id = 0; !err && id < TB_MAX_RULES; id++) {
		if (!rs->rules[id].in_use)
			continue;
		rule_prefix(&rs->rules[id], &p[n]);
		rule_spec_of(&rs->rules[id], &s[n++]);
	}
	for (int i = 0; !err && i < n; i++) {
		int id = ruleset_set(rs, &p[i], &s[i]);

		err = id < 0 ? id : 0;
	}
	free(rs);
	free(p);
	free(s);
	return err;
}

int upgrade_maps(const struct tb_maps *m, struct tb_config *cfg)
{
	__u32 zero = 0;
	int err = 0;

	if (upgrade_layout_of(cfg) < 2)
		err = republish_rules(m);
	/* The rules bumped the generation: the config is read afresh. */
	if (!err && bpf_map_lookup_elem(m->config, &zero, cfg))
		err = -errno;
	if (err)
		return err;
	cfg->layout = TB_LAYOUT;
	return bpf_map_update_elem(m->config, &zero, cfg, BPF_ANY) ? -errno : 0;
}
