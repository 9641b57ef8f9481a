#!/bin/sh
# Build pmc-hybrid with each sanitizer given (default: address, undefined,
# thread) in build-<name>/ and run the unit and integration tests there.
# Expects tools/bootstrap.sh to have run (tools/run-tests.sh does).
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- address undefined thread
for san in "$@"; do
    echo "== sanitizer: $san"
    cmake -S . -B "build-$san" -DPMC_SANITIZE="$san" -DCMAKE_BUILD_TYPE=Debug >/dev/null
    cmake --build "build-$san" -j"$(nproc)" >/dev/null
    (cd "build-$san" && ctest --output-on-failure -j"$(nproc)" -L 'unit|integration' &&
        ctest --output-on-failure -R 'bench.sim.smoke')
done
