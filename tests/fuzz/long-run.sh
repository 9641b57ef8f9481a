#!/bin/sh
# long-run.sh - the documented long fuzzing run: every harness for at least
# RUNS executions (default 10^7), one after the other, each from its own
# persistent corpus (BUILD/tests/fuzz/long-corpus/TARGET, so a second call
# continues where the first stopped).  Prints one table row per harness
# (executions, executions/s, wall time, corpus files) for docs/reliability.md.
#
#   tests/fuzz/long-run.sh [BUILD_DIR [RUNS [TARGET...]]]
#   tests/fuzz/long-run.sh build 10000000 msg rescue
#
# BUILD_DIR is a configured CMake build directory (default: build); the
# fuzzers are (re)built there first (`cmake --build BUILD --target fuzzers`,
# which needs only clang, not the rest of the tree).  Exit status 1 when any
# harness finds something (the artifact and how to reproduce it are printed).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
runs=${2:-10000000}
if [ $# -gt 2 ]; then
    shift 2
else
    set -- msg rescue dagfile
fi
cmake --build "$build" --target fuzzers >/dev/null
bin=$(cd "$build/tests/fuzz" && pwd)
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "| harness | executions | exec/s | wall s | corpus files | result |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
status=0
for target in "$@"; do
    corpus="$bin/long-corpus/$target"
    log="$bin/long-run-$target.log"
    t0=$(date +%s)
    if sh "$here/run-fuzz.sh" --fuzzer "$bin/fuzz_$target" --runs "$runs" --corpus "$corpus" \
        >"$log" 2>&1; then
        result=ok
    else
        result="FAILED (see $log)"
        status=1
    fi
    t1=$(date +%s)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    echo "| fuzz_$target | ${execs:-?} | ${rate:-?} | $((t1 - t0)) | $(ls "$corpus" | wc -l) | $result |"
done
exit $status
