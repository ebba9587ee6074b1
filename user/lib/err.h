/* SPDX-License-Identifier: GPL-2.0 */
/* What a library call was doing when it failed, and why, for its caller
 * to say in its own words: the library never prints. */
#ifndef TB_ERR_H
#define TB_ERR_H

struct tb_err {
	char msg[256];
};

/* Say in e what failed (printf-style), then return err, the -errno the
 * caller returns. */
int tb_fail(struct tb_err *e, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
