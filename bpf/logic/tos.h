/* SPDX-License-Identifier: GPL-2.0 */
/* Rewriting the IP header's traffic class in place (IPv4's TOS byte,
 * IPv6's Traffic Class): ECN's Congestion Experienced codepoint (action
 * mark) and the DSCP (action remark), with the IPv4 header checksum kept
 * right. Pure bounds-checked writes, so it serves XDP, tc and the host
 * unit tests alike.
 *
 * The 16-bit word holding the class is rewritten whole; for IPv4 the
 * header checksum is updated incrementally (RFC 1624:
 * HC' = ~(~HC + ~m + m')), so the header's one's-complement sum does not
 * change. IPv6 has no header checksum, but a receive checksum over the
 * packet (CHECKSUM_COMPLETE) does change: *csum_delta gets ~m + m', for
 * tc to add to skb->csum. The IP header is found again rather than taken
 * from the parse: offsets from before the policy's global calls would
 * need their precision tracked back through them, which Debian 6.1's
 * verifier cannot do, and it then kept every state of the program
 * apart. */
#ifndef TB_TOS_H
#define TB_TOS_H

#include "logic/parse.h"

#define TB_ECN_MASK 3
#define TB_DSCP_MAX 63

/* One's-complement sum of two 16-bit quantities with the carry folded in. */
static __always_inline __u16 tb_csum16_add(__u16 a, __u16 b)
{
	__u32 s = (__u32)a + b;

	return (__u16)((s & 0xffff) + (s >> 16));
}

/* The class of the IP header at w (ip: its first 12 bytes are there),
 * or -1 where there is none to rewrite. *v4 says which family. */
static __always_inline int tb_tclass_read(const __u8 *w, const void *data_end, int *v4)
{
	if (!w)
		return -1;
	*v4 = tb_ethertype(w) == tb_htons(ETH_P_IP);
	if (*v4)
		return (void *)(w + 12) > data_end ? -1 : w[1];
	if (tb_ethertype(w) != tb_htons(ETH_P_IPV6) || (void *)(w + 2) > data_end)
		return -1;
	return (w[0] & 0x0f) << 4 | w[1] >> 4;
}

/* Write class tc into the IP header at w, which tb_tclass_read found. */
static __always_inline void tb_tclass_write(__u8 *w, int v4, __u8 tc, __u16 *csum_delta)
{
	__u16 old, new, hc;

	if (v4) {
		/* Header words and checksum alike read big-endian. */
		old = (__u16)(w[0] << 8 | w[1]);
		new = (__u16)(w[0] << 8 | tc);
		hc = (__u16)(w[10] << 8 | w[11]);
		hc = (__u16)~tb_csum16_add(tb_csum16_add((__u16)~hc, (__u16)~old), new);
		w[1] = tc;
		w[10] = hc >> 8;
		w[11] = hc & 0xff;
		return;
	}
	/* skb->csum sums memory as the CPU loads it: take the word that way. */
	__builtin_memcpy(&old, w, 2);
	w[0] = (w[0] & 0xf0) | tc >> 4;
	w[1] = (__u8)((tc & 0x0f) << 4 | (w[1] & 0x0f));
	__builtin_memcpy(&new, w, 2);
	*csum_delta = tb_csum16_add((__u16)~old, new);
}

/* Mark the frame's IP packet CE when it is ECN-capable (ECT(0) or
 * ECT(1)); a packet that is not ECN-capable, or is CE already, is left as
 * it is. Returns 1 when the packet was marked. */
static __always_inline int tb_ecn_set_ce(void *data, const void *data_end, __u16 *csum_delta)
{
	__u8 *w = tb_ip_header(data, data_end);
	int v4, tc = tb_tclass_read(w, data_end, &v4);

	*csum_delta = 0;
	if (tc < 0 || !(tc & TB_ECN_MASK) || (tc & TB_ECN_MASK) == TB_ECN_CE)
		return 0;
	tb_tclass_write(w, v4, (__u8)(tc | TB_ECN_CE), csum_delta);
	return 1;
}

/* Set the DSCP of the frame's IP packet, its ECN bits kept. Returns 1
 * when the class changed. */
static __always_inline int tb_dscp_set(void *data, const void *data_end, __u8 dscp, __u16 *csum_delta)
{
	__u8 *w = tb_ip_header(data, data_end);
	int v4, tc = tb_tclass_read(w, data_end, &v4);
	__u8 next = (__u8)((dscp & TB_DSCP_MAX) << 2 | (tc & TB_ECN_MASK));

	*csum_delta = 0;
	if (tc < 0 || next == tc)
		return 0;
	tb_tclass_write(w, v4, next, csum_delta);
	return 1;
}

#endif
