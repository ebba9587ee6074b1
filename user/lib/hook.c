// SPDX-License-Identifier: GPL-2.0
/* tbctl's program on a device's hook: XDP (native or generic, in libxdp's
 * dispatcher or alone), or on the tc ingress or egress hook, through a
 * tcx link or as tbctl's own filter on the clsact qdisc; and whether the
 * device keeps the departure times it sets (action shape). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/hook.h"
#include "lib/devkey.h"
#include "lib/ruleset.h"
#include "lib/err.h"
#include "lib/qdisc.h"
#include "lib/state.h"
#include "lib/tcx.h"
#include "lib/xdisp.h"

bool dev_here(const char *dev, const struct tb_config *cfg)
{
	return devkey_ifindex(dev) == cfg->ifindex;
}

static __u32 xdp_flags(int mode)
{
	return mode == TB_MODE_XDP ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
}

bool hook_xdp_frags(struct bpf_program *xdp)
{
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_XDP, BPF_FUNC_xdp_get_buff_len, NULL) != 1)
		return false;
	return !bpf_program__set_flags(xdp, bpf_program__flags(xdp) | BPF_F_XDP_HAS_FRAGS);
}

void tc_hook_of(int ifindex, int mode, struct bpf_tc_hook *h)
{
	memset(h, 0, sizeof(*h));
	h->sz = sizeof(*h);
	h->ifindex = ifindex;
	h->attach_point = mode == TB_MODE_TC_EGRESS ? BPF_TC_EGRESS : BPF_TC_INGRESS;
}

/* Whether program id is tbctl's datapath: its name, and maps named as
 * tbctl's. How a program whose pins this bpffs lacks is recognised. */
static bool is_tbctl_prog(__u32 id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), map_ids[32];
	int fd = bpf_prog_get_fd_by_id(id), found = 0;

	if (fd < 0)
		return false;
	info.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
	info.map_ids = (__u64)(unsigned long)map_ids;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    (strcmp(info.name, "tb_xdp") && strcmp(info.name, "tb_tc")))
		info.nr_map_ids = 0;
	close(fd);
	for (__u32 i = 0; i < info.nr_map_ids && i < sizeof(map_ids) / sizeof(map_ids[0]); i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(map_ids[i]);

		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &mlen))
			found += !strcmp(mi.name, "buckets") || !strcmp(mi.name, "config");
		close(mfd);
	}
	return found == 2;
}

__u32 prog_id(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

bool prog_uses(__u32 prog_id, int fd)
{
	struct bpf_map_info mi = {};
	struct bpf_prog_info pi = {};
	__u32 ids[64], len = sizeof(mi), n;
	int pfd;
	bool used = false;

	if (!prog_id || bpf_obj_get_info_by_fd(fd, &mi, &len))
		return false;
	pfd = bpf_prog_get_fd_by_id(prog_id);
	if (pfd < 0)
		return false;
	pi.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	pi.map_ids = (__u64)(unsigned long)ids;
	len = sizeof(pi);
	if (!bpf_obj_get_info_by_fd(pfd, &pi, &len)) {
		n = pi.nr_map_ids < sizeof(ids) / sizeof(ids[0]) ? pi.nr_map_ids : sizeof(ids) / sizeof(ids[0]);
		for (__u32 k = 0; k < n; k++)
			used |= ids[k] == mi.id;
	}
	close(pfd);
	return used;
}

__u32 map_user(int fd)
{
	__u32 id = 0;

	while (!bpf_prog_get_next_id(id, &id))
		if (prog_uses(id, fd))
			return id;
	return 0;
}

__u32 xdp_prog(int ifindex, int mode, __u32 known)
{
	struct xdisp_prog p[XDISP_MAX_PROGS];
	__u32 disp;
	int n = xdisp_programs(ifindex, mode, p, &disp);

	for (int i = 0; i < n; i++)
		if ((known && p[i].id == known) || is_tbctl_prog(p[i].id))
			return p[i].id;
	return 0;
}

static int hook_xdp_direct(const struct hook_req *r, struct tb_err *e)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, xo);
	__u32 flags = xdp_flags(r->mode), old_id = 0;
	int err;

	/* Only tbctl's own program is replaced: another one put in its
	 * place makes the attach fail as on a fresh device. */
	if (r->replace && !bpf_xdp_query_id(r->ifindex, flags, &old_id) && old_id && is_tbctl_prog(old_id)) {
		xo.old_prog_fd = bpf_prog_get_fd_by_id(old_id);
		if (xo.old_prog_fd >= 0)
			flags |= XDP_FLAGS_REPLACE;
	}
	if (!(flags & XDP_FLAGS_REPLACE))
		flags |= XDP_FLAGS_UPDATE_IF_NOEXIST;
	err = bpf_xdp_attach(r->ifindex, r->prog_fd, flags, &xo);
	if (xo.old_prog_fd > 0)
		close(xo.old_prog_fd);
	if (err == -EBUSY || err == -EEXIST)
		return tb_fail(e, err, "another XDP program is attached");
	if (err == -EOPNOTSUPP && r->mode == TB_MODE_XDP)
		return tb_fail(e, err, "the driver has no native XDP (try mode xdpgeneric)");
	if (err)
		return tb_fail(e, err, "attach XDP program: %s", strerror(-err));
	return 0;
}

/* Through libxdp's dispatcher: a new program goes in at r's priority;
 * on a re-attach the new program takes the old one's place in one swap
 * of the dispatcher, so that no packet meets neither or both. */
static int hook_xdp(const struct hook_req *r, struct tb_err *e)
{
	__u32 old;

	if (!r->xdisp)
		return hook_xdp_direct(r, e);
	old = r->replace ? xdp_prog(r->ifindex, r->mode, 0) : 0;
	if (old)
		return xdisp_replace(r->ifindex, r->mode, old, r->prog_fd, r->prio, r->frags, e);
	return xdisp_attach(r->ifindex, r->mode, r->prog_fd, r->prio, r->frags, e);
}

/* A link swaps its program in place; a new one goes where r places it,
 * pinned so that it outlives this process. */
static int hook_tcx(const struct hook_req *r, struct tb_err *e)
{
	char pin[PATH_MAX];
	__u32 old;
	int err;

	state_link_pin(r->dev, pin, sizeof(pin));
	old = r->replace ? tcx_link_prog(pin) : 0;
	if (old) {
		err = tcx_update(pin, r->prog_fd, old);
		return err ? tb_fail(e, err, "swap the program of tbctl's tcx link: %s", strerror(-err)) : 0;
	}
	/* A link that lost its device (or was detached) holds nothing. */
	unlink(pin);
	err = tcx_attach(r->ifindex, r->mode == TB_MODE_TC_EGRESS, r->prog_fd, &r->place, pin);
	if (err == -ENOENT && r->place.id)
		return tb_fail(e, err, "program %u is no longer on the %s hook", r->place.id,
			       r->mode == TB_MODE_TC_EGRESS ? "egress" : "ingress");
	if (err)
		return tb_fail(e, err, "attach through a tcx link: %s", strerror(-err));
	return 0;
}

static int hook_clsact(const struct hook_req *r, bool *own_qdisc, struct tb_err *e)
{
	LIBBPF_OPTS(bpf_tc_opts, to, .handle = TB_TC_HANDLE, .priority = TB_TC_PRIO, .prog_fd = r->prog_fd);
	struct bpf_tc_hook hook;
	struct tc_filters f;
	int err;

	tc_hook_of(r->ifindex, r->mode, &hook);
	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		return tb_fail(e, err, "create clsact qdisc: %s", strerror(-err));
	if (!err)
		*own_qdisc = true;
	else if (!r->replace)
		*own_qdisc = false;     /* someone else's, made meanwhile */
	/* Only tbctl's own filter is replaced: another one at its handle and
	 * priority (put there by hand) makes the attach fail, and stays. */
	err = qdisc_clsact_filters(r->ifindex, r->mode == TB_MODE_TC_EGRESS, TB_TC_HANDLE, TB_TC_PRIO, &f);
	if (err) {
		tb_fail(e, err, "list tc filters: %s", strerror(-err));
	} else if (f.kind[0] && !(f.prog_id && is_tbctl_prog(f.prog_id))) {
		err = tb_fail(e, -EEXIST, "another tc filter (%s%s) is at tbctl's handle and priority (%#x) on %s",
			      f.kind, f.prog_id ? ", an eBPF program" : "", TB_TC_HANDLE,
			      r->mode == TB_MODE_TC_EGRESS ? "egress" : "ingress");
	} else {
		to.flags = f.kind[0] && r->replace ? BPF_TC_F_REPLACE : 0;
		err = bpf_tc_attach(&hook, &to);
		if (err)
			tb_fail(e, err, "attach tc filter: %s", strerror(-err));
	}
	if (err && *own_qdisc && !r->replace) {
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		bpf_tc_hook_destroy(&hook);
	}
	return err;
}

/* Attach r's program, atomically replacing ours when there is one, so no
 * packet passes unpoliced in between. */
int hook_program(const struct hook_req *r, bool *own_qdisc, struct tb_err *e)
{
	if (r->mode <= TB_MODE_XDPGENERIC)
		return hook_xdp(r, e);
	return r->tcx ? hook_tcx(r, e) : hook_clsact(r, own_qdisc, e);
}

/* tbctl's filter on the clsact hook of mode: its program's id, or 0. */
static __u32 clsact_prog(int ifindex, int mode)
{
	LIBBPF_OPTS(bpf_tc_opts, to, .handle = TB_TC_HANDLE, .priority = TB_TC_PRIO);
	struct bpf_tc_hook hook;

	tc_hook_of(ifindex, mode, &hook);
	return bpf_tc_query(&hook, &to) ? 0 : to.prog_id;
}

/* A program of tbctl's on the tcx hook of mode: its id, or 0. */
static __u32 tcx_prog(int ifindex, int mode)
{
	__u32 ids[TCX_MAX_PROGS];
	int n = tcx_progs(ifindex, mode == TB_MODE_TC_EGRESS, ids, NULL);

	for (int i = 0; i < n; i++)
		if (is_tbctl_prog(ids[i]))
			return ids[i];
	return 0;
}

/* Whether what names a program (its name, or its id in digits) names
 * program id, whose name is name. */
static bool names_prog(const char *what, __u32 id, const char *name)
{
	char *end;
	unsigned long n = strtoul(what, &end, 10);

	return *what && !*end ? n == id : !strcmp(what, name);
}

int hook_tcx_find(int ifindex, int mode, const char *what, __u32 *id, struct tb_err *e)
{
	__u32 ids[TCX_MAX_PROGS];
	char name[BPF_OBJ_NAME_LEN], on[256] = "";
	int n = tcx_progs(ifindex, mode == TB_MODE_TC_EGRESS, ids, NULL), found = 0;
	size_t len = 0;

	if (n < 0)
		return tb_fail(e, n, "list the programs on the tcx hook: %s", strerror(-n));
	for (int i = 0; i < n; i++) {
		prog_name(ids[i], name);
		if (names_prog(what, ids[i], name) && found++ == 0)
			*id = ids[i];
		if (len < sizeof(on))
			len += snprintf(on + len, sizeof(on) - len, "%s%s (id %u)", i ? ", " : "", name, ids[i]);
	}
	if (found > 1)
		return tb_fail(e, -EINVAL, "%d programs of that name are on the hook (%s): give its id", found, on);
	if (!found)
		return tb_fail(e, -ENOENT, "no such program on the %s hook, which holds %s",
			       mode == TB_MODE_TC_EGRESS ? "egress" : "ingress", n ? on : "none");
	return 0;
}

/* tbctl's programs on the device, found by the device alone: in each
 * XDP mode, and as tbctl's tc filter at either hook. */
int hooked_anywhere(int ifindex, struct hooked *h)
{
	int n = 0;

	for (int mode = TB_MODE_XDP; mode <= TB_MODE_XDPGENERIC; mode++) {
		__u32 id = xdp_prog(ifindex, mode, 0);

		if (id)
			h[n++] = (struct hooked){ mode, id };
	}
	for (int mode = TB_MODE_TC_INGRESS; mode <= TB_MODE_TC_EGRESS; mode++) {
		__u32 id = tcx_prog(ifindex, mode);

		if (!id && (id = clsact_prog(ifindex, mode)) && !is_tbctl_prog(id))
			id = 0;
		if (id)
			h[n++] = (struct hooked){ mode, id };
	}
	return n;
}

/* The program on ifindex's hook of cfg's mode, read with CAP_BPF alone:
 * through netlink, or from dev's tcx link pin. */
static __u32 hook_prog_at(const char *dev, const struct tb_config *cfg, int ifindex)
{
	if (cfg->mode <= TB_MODE_XDPGENERIC)
		return xdp_prog(ifindex, cfg->mode, cfg->prog_id);
	return cfg->tcx ? hook_tcx_link(dev) : clsact_prog(ifindex, cfg->mode);
}

__u32 hooked_prog(const char *dev, const struct tb_config *cfg)
{
	__u32 id;

	if (!dev_here(dev, cfg))
		return 0;
	id = hook_prog_at(dev, cfg, cfg->ifindex);
	/* Another program (or tc filter) put in tbctl's place is not
	 * tbctl's to report or to take off. */
	return id && (id == cfg->prog_id || is_tbctl_prog(id)) ? id : 0;
}

int unhook(int ifindex, int mode, __u32 id)
{
	int err;

	if (mode <= TB_MODE_XDPGENERIC && xdisp_is_component(id)) {
		err = xdisp_detach(ifindex, mode, id);
	} else if (mode <= TB_MODE_XDPGENERIC) {
		LIBBPF_OPTS(bpf_xdp_attach_opts, xo, .old_prog_fd = bpf_prog_get_fd_by_id(id));

		/* REPLACE with the old fd: only our program is taken off. */
		err = bpf_xdp_detach(ifindex, xdp_flags(mode) | XDP_FLAGS_REPLACE, &xo);
		close(xo.old_prog_fd);
	} else if ((err = tcx_detach(ifindex, mode == TB_MODE_TC_EGRESS, id)) == -ENOENT || err == -EINVAL) {
		LIBBPF_OPTS(bpf_tc_opts, to, .handle = TB_TC_HANDLE, .priority = TB_TC_PRIO);
		struct bpf_tc_hook hook;

		tc_hook_of(ifindex, mode, &hook);
		err = bpf_tc_detach(&hook, &to);
	}
	return err;
}

__u32 hook_tcx_link(const char *dev)
{
	char pin[PATH_MAX];

	state_link_pin(dev, pin, sizeof(pin));
	return tcx_link_prog(pin);
}

int hook_tcx_programs(const struct tb_config *cfg, __u32 id, __u32 *ids)
{
	int n;

	if (cfg->mode <= TB_MODE_XDPGENERIC || !id)
		return 0;
	n = tcx_progs(cfg->ifindex, cfg->mode == TB_MODE_TC_EGRESS, ids, NULL);
	for (int i = 0; i < n; i++)
		if (ids[i] == id)
			return n;
	return 0;
}

void prog_name(__u32 id, char *name)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);

	name[0] = 0;
	if (fd < 0)
		return;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		memcpy(name, info.name, BPF_OBJ_NAME_LEN);
	close(fd);
}

__u32 pins_prog(const char *dev, const struct tb_config *cfg, enum hook_where *where, char *name)
{
	bool renamed;
	__u32 id;

	*where = HOOK_HERE;
	if (dev_here(dev, cfg))
		return hooked_prog(dev, cfg);
	renamed = devkey_here(dev) && cfg->ifindex && if_indextoname(cfg->ifindex, name);
	if (cfg->tcx)
		id = hook_tcx_link(dev);
	else
		id = renamed && hook_prog_at(dev, cfg, cfg->ifindex) == cfg->prog_id ? cfg->prog_id : 0;
	*where = id && renamed ? HOOK_RENAMED : HOOK_AWAY;
	return id;
}

int shape_paced(const char *dev, const struct tb_config *cfg, const struct ruleset *rs)
{
	if (!ruleset_shapes(rs) || !dev_here(dev, cfg))
		return -1;
	return qdisc_fq_paces(cfg->ifindex);
}

bool renamed_to(__u32 ifindex, __u32 id, char *name)
{
	struct hooked h[4];
	int n = hooked_anywhere(ifindex, h);

	for (int i = 0; i < n; i++)
		if (h[i].id == id)
			return if_indextoname(ifindex, name) != NULL;
	return false;
}
