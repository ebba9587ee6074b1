// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include "lib/ctlprog.h"
#include "lib/state.h"
#include "tb.skel.h"

struct tb *ctlprog_open(const char *dev, __u32 max_addrs, const char *name)
{
	struct tb *skel = open_pinned(dev, max_addrs);
	struct bpf_program *p;
	int err;

	if (!skel)
		return NULL;
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, !strcmp(bpf_program__name(p), name));
	err = tb__load(skel);
	if (err) {
		tb__destroy(skel);
		errno = -err;
		return NULL;
	}
	return skel;
}

int ctlprog_run(const struct bpf_program *prog, void *data, __u32 len, bool back)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = data, .data_size_in = len, .data_out = back ? data : NULL,
		    .data_size_out = back ? len : 0, .repeat = 1);

	if (bpf_prog_test_run_opts(bpf_program__fd(prog), &o))
		return -errno;
	return o.retval == XDP_PASS ? 0 : -EINVAL;
}
