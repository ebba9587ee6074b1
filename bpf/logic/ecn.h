/* SPDX-License-Identifier: GPL-2.0 */
/* Setting ECN's Congestion Experienced codepoint in place, with the IPv4
 * header checksum kept right. Pure bounds-checked writes, so it serves XDP,
 * tc and the host unit tests alike. */
#ifndef TB_ECN_H
#define TB_ECN_H

#include "logic/parse.h"

/* One's-complement sum of two 16-bit quantities with the carry folded in. */
static __always_inline __u16 tb_csum16_add(__u16 a, __u16 b)
{
	__u32 s = (__u32)a + b;

	return (__u16)((s & 0xffff) + (s >> 16));
}

/* Mark the frame's IP packet CE when it is ECN-capable (ECT(0) or
 * ECT(1)); a packet that is not ECN-capable, or is CE already, is left as
 * it is. The 16-bit word holding the ECN bits is rewritten whole; for
 * IPv4 the header checksum is updated incrementally (RFC 1624:
 * HC' = ~(~HC + ~m + m')), so the header's one's-complement sum does not
 * change. IPv6 has no header checksum, but a receive checksum over the
 * packet (CHECKSUM_COMPLETE) does change: *csum_delta gets ~m + m', for
 * tc to add to skb->csum. Returns 1 when the packet was marked. The IP
 * header is found again rather than taken from the parse: offsets from
 * before the policy's global calls would need their precision tracked
 * back through them, which Debian 6.1's verifier cannot do, and it then
 * kept every state of the program apart. */
static __always_inline int tb_ecn_set_ce(void *data, const void *data_end, __u16 *csum_delta)
{
	__u8 *w = tb_ip_header(data, data_end);
	__u16 old, new, hc;

	*csum_delta = 0;
	if (!w)
		return 0;
	if (tb_ethertype(w) == tb_htons(ETH_P_IP)) {
		if ((void *)(w + 12) > data_end || !(w[1] & 3) || (w[1] & 3) == TB_ECN_CE)
			return 0;
		/* Header words and checksum alike read big-endian. */
		old = (__u16)(w[0] << 8 | w[1]);
		new = old | TB_ECN_CE;
		hc = (__u16)(w[10] << 8 | w[11]);
		hc = (__u16)~tb_csum16_add(tb_csum16_add((__u16)~hc, (__u16)~old), new);
		w[1] = new & 0xff;
		w[10] = hc >> 8;
		w[11] = hc & 0xff;
		return 1;
	}
	if (tb_ethertype(w) != tb_htons(ETH_P_IPV6) || (void *)(w + 2) > data_end || !(w[1] >> 4 & 3) ||
	    (w[1] >> 4 & 3) == TB_ECN_CE)
		return 0;
	/* skb->csum sums memory as the CPU loads it: take the word that way. */
	__builtin_memcpy(&old, w, 2);
	w[1] |= TB_ECN_CE << 4;
	__builtin_memcpy(&new, w, 2);
	*csum_delta = tb_csum16_add((__u16)~old, new);
	return 1;
}

#endif
