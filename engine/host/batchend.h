/* batchend.h - when the batch allocation we run in ends, for a run started
 * without --max-wall-time (issue 11, "The batch job's end").
 *
 * batchend_discover() asks, in this order, until one answers:
 *
 *  1. Slurm.  The variable SLURM_JOB_END_TIME (seconds since the epoch, an
 *     integer; put into the job's environment by Slurm >= 20.11 with
 *     SLURM_JOB_START_TIME; sbatch(1), OUTPUT ENVIRONMENT VARIABLES).  It
 *     is the end as of the job's start: a limit changed later (scontrol
 *     update TimeLimit=) is not seen.  Else, when SLURM_JOB_ID is set:
 *     `squeue -h -j ID -o %e` (squeue(1): %e "Time at which the job ended
 *     or is expected to end (based upon its time limit)"), run with
 *     SLURM_TIME_FORMAT=standard so that it prints YYYY-MM-DDTHH:MM:SS in
 *     local time (the default "standard" format, whatever the user's
 *     SLURM_TIME_FORMAT), read with mktime(3) in our TZ, which squeue
 *     inherits.  "N/A", "NONE", "Unknown", "UNLIMITED", "INVALID": no end.
 *  2. PBS / Torque, when PBS_JOBID is set: `qstat -f ID`, reading
 *     "Walltime.Remaining = N" (Torque: seconds left, see qstat(1) in the
 *     Torque 4.x/6.x docs; HH:MM:SS also accepted) or, failing that,
 *     "Resource_List.walltime = HH:MM:SS" less "resources_used.walltime =
 *     HH:MM:SS" (PBS Pro / OpenPBS: pbs_job_attributes(7B); the time used
 *     is sampled by the MoM, so the remaining time is late by up to one
 *     sampling period, about a minute or two: the drain margin covers it).
 *     Else the variable PBS_WALLTIME (Torque: the job's walltime limit in
 *     seconds), counted from now: no PBS variable gives the job's start, so
 *     the end found is later than the real one by the time the job ran
 *     before us (its set-up time), and the source says so.  A limit of 0
 *     means none.
 *  3. LSF, when LSB_JOBID is set: `bjobs -noheader -o time_left ID`
 *     (bjobs -o; the value is "hours:minutes S" as with bjobs -WL, S being
 *     L for a run limit, E for an estimated run time (bsub -We), X for an
 *     estimate already exceeded; H:MM:SS with LSB_HMS_TIME_FORMAT=Y or
 *     -hms; "-" when there is no limit).  L and E count (E, an estimate, is
 *     not enforced: stopping before it is early, never late; the source
 *     says which).  X and "-": no end.  Minute resolution: the drain margin
 *     covers the rounding.
 *  4. Flux, when FLUX_JOB_ID is set: `flux job info ID R`, the job's
 *     resource set (Flux RFC 20, R version 1), whose execution.expiration
 *     is the end in seconds since the epoch (absent or 0: none).  If that
 *     command fails, `flux --parent job info ID R`: inside an instance
 *     started by flux batch/alloc, FLUX_URI names the new instance and
 *     FLUX_JOB_ID the job in its parent.  The JSON is read with jansson.
 *
 * A source that is not there (variable unset, command not on PATH) or does
 * not work (the command exits non-zero, is killed by a signal, or runs
 * past the time limit) says nothing, and the next one is asked; each such
 * failure of a system whose job variable is set is noted in out->note, for
 * a warning.  A value that is there but cannot be read is an error (the
 * user should know, and may give --max-wall-time).
 *
 * Commands run without a shell (argv, from posix_spawnp(3) and this
 * process's PATH), stdin and stderr on /dev/null, stdout into a pipe, no
 * other descriptor of ours, in a process group of their own with default
 * signal dispositions and an empty signal mask, the environment unchanged
 * (but for squeue's SLURM_TIME_FORMAT), for at most timeout_ms
 * milliseconds: then the group is killed (SIGKILL) and reaped.  The group
 * is also killed when the command exits, so that nothing it left behind
 * keeps running, and the command is not waited for beyond its exit (a
 * child of it may hold the pipe open).  At most 1 MiB of output is read.
 *
 * Thread-safety: call once, at start-up, from one thread, while no other
 * thread changes the environment or TZ (getenv, mktime), reaps children it
 * did not start (waitpid(-1)), or ignores SIGCHLD (the exit status would be
 * lost).  Allocates only during the call; nothing is kept.
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
    char note[512];    /* what was asked and said nothing ("squeue: exit
                        * status 1; qstat: no answer within 5000 ms, killed"),
                        * for the log (-v); "" if none */
    char ignored[160]; /* an end found but already past, so not used:
                        * "SLURM_JOB_END_TIME: the job's end, 2023-11-14
                        * 22:13:10 UTC, is 10 s past", for a warning; "" if none */
};

/* Find the end of the batch allocation.  now_epoch: the current time in
 * seconds since the epoch (time(2) or CLOCK_REALTIME), from which relative
 * answers (seconds left) are counted.  Returns 1 with out->end_epoch and
 * out->source set (at or after now_epoch); 0 when not in a batch job or no
 * source gave an end (out->end_epoch 0, out->source ""), or when the end
 * found is already past (before now_epoch): a batch system that enforced
 * it would have ended the job, so the value is stale (a job's variables
 * copied into another environment, a limit extended since) and is ignored,
 * with out->ignored naming its source and how long ago it was; -1 when a
 * value is malformed: err names the variable or command and the value.
 * out->note and out->ignored are set in every case.  out is the
 * caller's (every field written); err may be NULL.  Each command may take
 * up to BATCHEND_TIMEOUT_MS. */
int batchend_discover(double now_epoch, struct batchend *out, struct pmc_error *err);

/* The same, each command limited to timeout_ms milliseconds (<= 0: the
 * default, BATCHEND_TIMEOUT_MS). */
int batchend_discover_timeout(double now_epoch, int timeout_ms, struct batchend *out,
                              struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
