/* SPDX-License-Identifier: GPL-2.0 */
/* A rule's match as an operator types it: the protocol, then ports, TCP
 * flags or ICMP types, as rule set takes them and save writes them. */
#ifndef TB_MATCH_TEXT_H
#define TB_MATCH_TEXT_H

#include <stddef.h>
#include <linux/types.h>
#include "lib/prefix.h"

/* The words of a match, each NULL where not given. */
struct match_words {
	const char *proto;      /* NAME or 1..255 */
	const char *dport;      /* PORT[-PORT] */
	const char *sport;
	/* NAMES[/NAMES] or NUM[/NUM]: the flags set, of those that count;
	 * without "/", those named and ACK, unless named, clear */
	const char *flags;
	const char *type;       /* an ICMP or ICMPv6 type: NAME, or NUM[-NUM] */
};

/* The words into p's match (p's family set: an IPv4 prefix takes no
 * ICMPv6). 0, or -1 with err set. */
int match_parse(const struct match_words *w, struct tb_prefix *p, char *err, size_t errlen);
/* The match's words ("" for none), with a leading space: what
 * match_parse reads back to the same match. */
void match_format(const struct tb_match *m, char *buf, size_t len);
/* The protocol's name, or its number. */
void proto_format(__u8 proto, char *buf, size_t len);
/* TCP flags as names joined by ',' ("syn,ack"); "none" for none. */
void tcp_flags_format(__u8 flags, char *buf, size_t len);
/* ICMP type t of protocol proto (ICMP or ICMPv6) by its name, or its
 * number. */
void icmp_type_format(__u8 proto, __u16 t, char *buf, size_t len);

#endif
