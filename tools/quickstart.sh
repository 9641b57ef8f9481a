#!/bin/sh
# Install what pmc-hybrid needs (Debian 12), build it, and run a bundled
# example workflow on this machine, without mpiexec.
set -eu
cd "$(dirname "$0")/.."
tools/bootstrap.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
work=$(mktemp -d)
cp examples/montage-small.dag "$work/"
echo "== running examples/montage-small.dag in $work"
build/pmc-hybrid "$work/montage-small.dag" >"$work/stdout.txt"
grep -c '^\[cluster-task' "$work/stdout.txt" | sed 's/^/tasks run: /'
tail -n 1 "$work/stdout.txt"
