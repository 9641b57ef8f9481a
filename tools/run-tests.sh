#!/bin/sh
# Install what pmc-hybrid needs (Debian 12), build it, and run every test:
# the unit tests, the integration tests (real workflows with 1 and 4 MPI
# ranks) and the Slurm tests (a private Slurm: needs root), through ctest.  Extra arguments go to ctest (e.g. -L unit).
set -eu
cd "$(dirname "$0")/.."
tools/bootstrap.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
