/* spin.h - the one short spin-then-yield wait of pmc-hybrid, for a thread
 * that waits on another's progress measured in nanoseconds (a ready
 * queue's producer between its claim of a slot and its publication, the
 * DAG parser's scanning thread publishing its next 64 lines): 64 pause
 * instructions, then sched_yield() at every call, so a
 * waiter that shares its CPU with the thread it waits for gives it the
 * CPU.  Waits that may last (idle workers) park instead (engine/transport/mailbox.h).
 *
 * Thread-safety: the counter belongs to the waiting thread.
 */
#ifndef PMC_SPIN_H
#define PMC_SPIN_H

#include <sched.h>

/* One step of a wait; *spins counts the steps (start it at 0). */
static inline void pmc_spin_wait(unsigned *spins)
{
    if ((*spins)++ < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        sched_yield();
    }
}

#endif
