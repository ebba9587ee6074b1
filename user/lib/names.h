/* SPDX-License-Identifier: GPL-2.0 */
/* The words for the config's and rules' enums (tb_abi.h), as commands
 * take them and every output says them; each array ends in NULL and is
 * indexed by the enum. */
#ifndef TB_NAMES_H
#define TB_NAMES_H

#include <stddef.h>
#include <linux/types.h>

extern const char *const mode_names[];
extern const char *const key_names[];
extern const char *const cost_names[];
extern const char *const action_names[];
extern const char *const scope_names[];
/* A switch's two words, off first: early, fleet. */
extern const char *const on_off_names[];
/* A rule's scope as its keyword: scope_names', or per-/len in buf. */
const char *scope_format(__u8 scope, __u8 len, char *buf, size_t size);

#endif
