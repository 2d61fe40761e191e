/* SPDX-License-Identifier: MIT */
/* A test-and-test-and-set spinlock for the table shards.
 *
 * Shard critical sections are a hash lookup and a few stores; an uncontended
 * pthread mutex costs two locked instructions and two calls, this costs one
 * exchange and a plain store.  Waiters spin on a read (no cache-line ping-pong)
 * and yield the CPU after a while, so a preempted holder does not make them burn
 * their time slice. */
#ifndef GPULEAK_SPINLOCK_H
#define GPULEAK_SPINLOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct {
    _Atomic int locked;
} gl_spinlock;

#define GL_SPINLOCK_INIT                                                                           \
    {                                                                                              \
        0                                                                                          \
    }

/* One round of waiting for another thread (a lock's holder, a slot's
 * writer): a pause for the first 128 rounds, then the CPU given up, so that
 * a waiter does not burn its time slice on a holder that was preempted. */
static inline void gl_spin_backoff(unsigned *rounds)
{
    if (++*rounds < 128)
        __builtin_ia32_pause();
    else
        sched_yield();
}

static inline void gl_spin_lock(gl_spinlock *l)
{
    for (;;) {
        if (!atomic_exchange_explicit(&l->locked, 1, memory_order_acquire))
            return;
        for (unsigned rounds = 0; atomic_load_explicit(&l->locked, memory_order_relaxed);)
            gl_spin_backoff(&rounds);
    }
}

static inline void gl_spin_unlock(gl_spinlock *l)
{
    atomic_store_explicit(&l->locked, 0, memory_order_release);
}

/* Take the lock if it comes free within about `spins` tries.  For readers with
 * the world stopped (check/world.h): a holder that is stopped never lets go,
 * and its structure is then read as it stands. */
static inline bool gl_spin_trylock(gl_spinlock *l, unsigned spins)
{
    for (unsigned i = 0;; i++) {
        if (!atomic_load_explicit(&l->locked, memory_order_relaxed) &&
            !atomic_exchange_explicit(&l->locked, 1, memory_order_acquire))
            return true;
        if (i >= spins)
            return false;
        __builtin_ia32_pause();
    }
}

/* After fork() in the child: a lock held by a thread that no longer exists. */
static inline void gl_spin_reset(gl_spinlock *l) { atomic_store(&l->locked, 0); }

#endif
