/* SPDX-License-Identifier: GPL-2.0 */
/* A DSCP as an operator types it: a name of RFC 4594's classes (cs0..cs7,
 * af11..af43, ef), va (RFC 5865), le (RFC 8622), df, or a number 0..63,
 * as nft takes them. */
#ifndef TB_DSCP_TEXT_H
#define TB_DSCP_TEXT_H

#include <stddef.h>
#include <linux/types.h>

/* 0 with *dscp set, or -1 with err set. */
int dscp_parse(const char *word, __u8 *dscp, char *err, size_t errlen);
/* The DSCP's name, or its number where it has none. */
void dscp_format(__u8 dscp, char *buf, size_t len);

#endif
