#!/bin/sh
# run-fuzz.sh - run one libFuzzer harness: replay the regression inputs,
# then fuzz from the seed corpus for a time or a number of executions.
#
#   run-fuzz.sh --fuzzer PATH/fuzz_TARGET [--seconds N | --runs N]
#               [--workloads DIR] [--corpus DIR] [-- libFuzzer options]
#
# TARGET (dagfile, rescue, msg) is taken from the fuzzer's file name.
#
# Seeds: tests/fuzz/corpus/TARGET (hand-made rescue logs and messages) and,
# for dagfile, the first 200 lines of every WORKLOADS/*.dag and of
# examples/*.dag, cut at run time (the workflows are never copied into the
# repository).  A missing workloads directory is an error unless
# PMC_ALLOW_NO_WORKLOADS=1 (then the examples alone seed the DAG parser).
#
# Regression: every file under tests/fuzz/regress/TARGET (inputs that once
# crashed or broke an oracle) is run once first; any failure fails the run.
#
# --corpus DIR keeps the working corpus there (long runs grow it across
# calls); by default it lives in a temporary directory, removed unless the
# run fails.  Crash artifacts go to the working directory, whose path is
# printed on failure with the input in base64.  Exit status: 0 when the
# regression inputs and the fuzzing found nothing, else 1.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fuzzer= seconds= runs= workloads="$src/../shared/workloads" corpus=
while [ $# -gt 0 ]; do
    case $1 in
    --fuzzer) fuzzer=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "run-fuzz.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$fuzzer" ] || { echo "run-fuzz.sh: fuzzer not found: $fuzzer (build the 'fuzzers' target)" >&2; exit 1; }
target=$(basename "$fuzzer"); target=${target#fuzz_}
work=$(mktemp -d "${TMPDIR:-/tmp}/pmc-fuzz-$target.XXXXXX")
keep=0
cleanup() { [ "$keep" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

# ---- seed corpus ----
[ -n "$corpus" ] || corpus="$work/corpus"
mkdir -p "$corpus"
if [ -d "$here/corpus/$target" ]; then
    cp "$here/corpus/$target"/* "$corpus"/
fi
if [ "$target" = dagfile ]; then
    if ls "$workloads"/*.dag >/dev/null 2>&1; then
        for f in "$workloads"/*.dag; do
            head -n 200 "$f" >"$corpus/workload-$(basename "$f")"
        done
    elif [ "${PMC_ALLOW_NO_WORKLOADS:-0}" != 1 ]; then
        echo "run-fuzz.sh: no workloads in $workloads (set PMC_ALLOW_NO_WORKLOADS=1 to seed from examples/ only)" >&2
        exit 1
    fi
    for f in "$src"/examples/*.dag; do
        head -n 200 "$f" >"$corpus/example-$(basename "$f")"
    done
fi
echo "== fuzz_$target: $(ls "$corpus" | wc -l) seed files in $corpus"

# ---- regression inputs ----
fail() {
    keep=1
    echo "run-fuzz.sh: fuzz_$target FAILED: $1; working directory kept: $work" >&2
    for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        [ -f "$a" ] || continue
        echo "artifact $a, base64: $(base64 -w0 "$a")" >&2
        echo "  reproduce: $fuzzer $a" >&2
    done
    exit 1
}
regress="$here/regress/$target"
if [ -d "$regress" ] && [ -n "$(ls "$regress")" ]; then
    echo "== replaying $(ls "$regress" | wc -l) regression input(s) from $regress"
    "$fuzzer" -artifact_prefix="$work/" "$regress"/* >"$work/regress.log" 2>&1 ||
        { tail -n 40 "$work/regress.log" >&2; fail "a regression input fails again"; }
fi

# ---- fuzzing ----
limit=
[ -n "$seconds" ] && limit="-max_total_time=$seconds"
[ -n "$runs" ] && limit="$limit -runs=$runs"
[ -n "$limit" ] || limit="-max_total_time=5"
set +e
# shellcheck disable=SC2086 # $limit holds separate options
"$fuzzer" $limit -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$work/" "$@" "$corpus" >"$work/fuzz.log" 2>&1
rc=$?
set -e
grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' \
    "$work/fuzz.log" || true
if [ $rc -ne 0 ]; then
    tail -n 60 "$work/fuzz.log" >&2
    fail "libFuzzer exited $rc"
fi
echo "== fuzz_$target: no crash, leak, timeout or failed check"
