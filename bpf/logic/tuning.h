/* SPDX-License-Identifier: GPL-2.0 */
/* The constants the early signal and credit are tuned by. */
#ifndef TB_TUNING_H
#define TB_TUNING_H


/* The early signal starts when the level falls below 1/TB_EARLY_DIV of the
 * burst, and reaches probability PMAX / 2^32 at an empty bucket: 1 for
 * drop, 1/8 for mark. A lower ceiling let drop starve a long flow; a
 * higher one marked ECN flows down to their minimum window
 * (docs/tcp.md has the figures). After a signal (or a tail drop) the
 * next waits until the level has fallen 1/2^TB_EARLY_HOLD_SHIFT of the
 * burst below its highest point since: the sender needs a round trip to
 * react and then sends below the rate, so the level rises, and
 * signalling on meanwhile cuts one flow again and again. */
#define TB_EARLY_DIV 2
#define TB_EARLY_HOLD_SHIFT 4
#define TB_EARLY_PMAX_DROP 0xffffffffULL
#define TB_EARLY_PMAX_MARK 0x20000000ULL
/* Action mark marks ECN-capable packets in the upper part of the early
 * range only, down to 1/2^TB_MARK_DROP_SHIFT of it, and drops them below
 * (charge.h, tb_mark_spent): at RTT ~ 0 that nearly halved retransmits
 * (docs/tcp.md). */
#define TB_MARK_DROP_SHIFT 1
/* A bucket above its early range sets 1/2^TB_CREDIT_SHIFT of its burst
 * aside as credit (bucket.h, tb_credit_fits), from which packets are
 * admitted with one compare-and-swap instead of the lock (credit.h). */
#define TB_CREDIT_SHIFT 6

#endif
