/* SPDX-License-Identifier: GPL-2.0 */
/* The target tbctl's XDP program is verified against when it is loaded
 * as one of libxdp's dispatcher's programs (user/lib/xdisp.c): an
 * extension program must name a loaded program whose function it could
 * replace, and the dispatcher it goes into is made only as it is
 * attached. The kernel then links it to the dispatcher's slot, whose
 * function has this one's type. Not on any hook. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int tb_xdp_anchor(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
