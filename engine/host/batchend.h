/* batchend.h - when the batch allocation we run in ends, for a run started
 * without --max-wall-time.  Asked in order until one answers:
 *   1. Slurm: SLURM_JOB_END_TIME, else `squeue -h -j ID -o %e`;
 *   2. PBS/Torque: `qstat -f ID` (Walltime.Remaining, else walltime limit
 *      less used), else PBS_WALLTIME counted from now;
 *   3. LSF: `bjobs -noheader -o time_left ID` (L and E limits);
 *   4. Flux: execution.expiration of `flux job info ID R` (RFC 20),
 *      else the same with --parent.
 * The formats, their sources and their limits: docs/modules.md
 * "batchend".  A source that is absent or fails is skipped (noted in
 * out->note); a value that cannot be read is an error.
 *
 * Commands run without a shell (posix_spawnp, our PATH), stdin and stderr
 * on /dev/null, in a process group of their own that is SIGKILLed when the
 * command exits or passes its timeout; at most 1 MiB of output is read.
 *
 * Thread-safety: call once at start-up, while no other thread changes the
 * environment or TZ, reaps children it did not start (waitpid(-1)) or
 * ignores SIGCHLD.  Allocates only during the call.
 */
#ifndef PMC_BATCHEND_H
#define PMC_BATCHEND_H

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BATCHEND_TIMEOUT_MS 5000 /* per command */

struct batchend {
    double end_epoch;  /* seconds since the epoch; 0 when not found */
    char source[96];   /* where end_epoch came from, for the log ("" if none) */
    char note[512];    /* sources that said nothing, for the log (-v); "" if none */
    char ignored[160]; /* an end found already past, for a warning; "" if none */
};

/* Find the allocation's end; now_epoch (seconds since the epoch) anchors
 * relative answers.  1: out->end_epoch (>= now_epoch) and out->source set;
 * 0: no batch job, no end, or an end already past (stale; out->ignored
 * says so); -1: a malformed value, named in err (may be NULL).  Every
 * field of out is written.  Each command may take BATCHEND_TIMEOUT_MS. */
int batchend_discover(double now_epoch, struct batchend *out, struct pmc_error *err);

/* The same with timeout_ms per command (<= 0: BATCHEND_TIMEOUT_MS). */
int batchend_discover_timeout(double now_epoch, int timeout_ms, struct batchend *out,
                              struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
