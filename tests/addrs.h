/* SPDX-License-Identifier: GPL-2.0 */
/* Table keys of addresses as the parser makes them, for host unit tests:
 * IPv4 as ::ffff:a.b.c.d, IPv6 whole. */
#ifndef TB_TEST_ADDRS_H
#define TB_TEST_ADDRS_H

#include <arpa/inet.h>
#include "abi/tb_abi.h"

static inline struct tb_addr v4(const char *s)
{
	struct tb_addr a = { .w = { 0, 0, htonl(0xffff) } };

	inet_pton(AF_INET, s, &a.w[3]);
	return a;
}

static inline struct tb_addr v6(const char *s)
{
	struct tb_addr a;

	inet_pton(AF_INET6, s, a.w);
	return a;
}

#endif
