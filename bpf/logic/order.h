/* SPDX-License-Identifier: GPL-2.0 */
/* The memory orders the lock-free protocols rely on, said where each is
 * relied on, and made by whatever the machine needs:
 *
 *   tb_load_acquire(p)      a load that later loads and stores stay after
 *   tb_store_release(p, v)  a store that earlier loads and stores come before
 *   tb_rmb()                earlier loads before later loads
 *   tb_wmb()                earlier stores before later stores
 *
 * None orders a store before a later load: no protocol here needs that.
 *
 * BPF for x86: plain loads and stores, which x86 makes visible, and makes,
 * in program order; only the compiler is kept from moving them.
 * BPF for other machines (arm64): a fetching atomic as a full fence, which
 * every JIT emits fully ordered (a non-fetching atomic add is not, on
 * arm64). Where the compiler has BPF's load-acquire and store-release,
 * they serve instead once tbctl has found that the kernel takes them
 * (6.15 on) and set tb_acq_rel before the load; the verifier then drops
 * the other branch, as tb_acq_rel is read-only.
 * The host (unit tests, tbctl): the compiler's fences, around READ_ONCE
 * and WRITE_ONCE so that a test's hooks on those still see every access.
 *
 * Per-CPU data that only programs on its own CPU read needs none of
 * this: a CPU sees its own accesses in program order, so barrier() is
 * enough there. */
#ifndef TB_ORDER_H
#define TB_ORDER_H

#ifndef barrier
#define barrier() asm volatile("" ::: "memory")
#endif
#ifndef READ_ONCE
#define READ_ONCE(x) (*(const volatile typeof(x) *)&(x))
#endif
#ifndef WRITE_ONCE
#define WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))
#endif

/* Which kind of instructions the object orders with (tb_order_form, and
 * user/lib/order.c, which checks that the machine and kernel have it). */
#define TB_ORDER_PLAIN 1
#define TB_ORDER_FENCE 2

/* The fences each target makes. On every target tb_rmb also keeps later
 * stores after earlier loads, and tb_wmb earlier loads before later
 * stores: after a load, the one makes it an acquire, and before a store,
 * the other a release (tb_load_fenced, tb_store_fenced). */
#ifndef __bpf__

#define tb_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define tb_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)

#elif defined(__TARGET_ARCH_x86)

#define TB_ORDER_FORM TB_ORDER_PLAIN
#define tb_rmb() barrier()
#define tb_wmb() barrier()

#elif defined(__TARGET_ARCH_arm64)

#define TB_ORDER_FORM TB_ORDER_FENCE
/* A full fence: an exchange on a stack word, which is always a fetching
 * atomic (BPF_XCHG). */
static __always_inline void tb_fence(void)
{
	volatile __u64 word = 0;

	__sync_lock_test_and_set(&word, 0);
}

#define tb_rmb() tb_fence()
#define tb_wmb() tb_fence()

#else
#error "say the machine the BPF objects are for: -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64"
#endif

#define tb_load_fenced(p)                                                                          \
	({                                                                                         \
		typeof(*(p)) v_ = READ_ONCE(*(p));                                                 \
		tb_rmb();                                                                          \
		v_;                                                                                \
	})
#define tb_store_fenced(p, v)                                                                      \
	do {                                                                                       \
		tb_wmb();                                                                          \
		WRITE_ONCE(*(p), (v));                                                             \
	} while (0)

#if defined(__bpf__) && defined(__TARGET_ARCH_arm64) && defined(__BPF_FEATURE_LOAD_ACQ_STORE_REL)
#define tb_load_acquire(p) (tb_acq_rel ? __atomic_load_n((p), __ATOMIC_ACQUIRE) : tb_load_fenced(p))
#define tb_store_release(p, v)                                                                     \
	do {                                                                                       \
		if (tb_acq_rel)                                                                    \
			__atomic_store_n((p), (v), __ATOMIC_RELEASE);                              \
		else                                                                               \
			tb_store_fenced((p), (v));                                                 \
	} while (0)
#else
#define tb_load_acquire(p) tb_load_fenced(p)
#define tb_store_release(p, v) tb_store_fenced((p), (v))
#endif

#ifdef __bpf__
/* The form this object orders with, for tbctl to check before a load;
 * and whether the kernel takes load-acquire and store-release, which
 * tbctl sets before the load (user/lib/order.c), and only an object for
 * a machine that needs fences, built by a compiler that has them, uses. */
const volatile __u8 tb_order_form = TB_ORDER_FORM;
const volatile __u8 tb_acq_rel = 0;
#endif

#endif
