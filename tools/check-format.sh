#!/bin/sh
# check-format.sh - fail when a C/C++ source of pmc-hybrid is not formatted
# as .clang-format says (ctest style.clang-format; STYLE.md: style is
# enforced by tools, so review talks about design).
#
# Usage: tools/check-format.sh [CLANG_FORMAT [ROOT]]
#   CLANG_FORMAT  the clang-format to run (default: clang-format)
#   ROOT          the source tree (default: the parent of this script's folder)
# Checks every *.c, *.h, *.cc, *.cpp, *.hpp under io/, sched/, engine/,
# tools/, bench/ and tests/ with `clang-format --dry-run -Werror` (nothing is
# changed), prints clang-format's complaints and the files to fix, and exits
# 1 when there is any, 0 when there is none, 2 when clang-format cannot run.
# Fix with: clang-format -i FILE...
set -eu
cf=${1:-clang-format}
root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
if ! "$cf" --version >/dev/null 2>&1; then
    echo "check-format: cannot run $cf (Debian: apt-get install clang-format)" >&2
    exit 2
fi
files=$(find io sched engine tools bench tests -type f \
            \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' -o -name '*.hpp' \) \
            2>/dev/null | LC_ALL=C sort)
if [ -z "$files" ]; then
    echo "check-format: no sources under $root" >&2
    exit 2
fi
bad=
for f in $files; do
    "$cf" --dry-run -Werror --style=file "$f" || bad="$bad $f"
done
if [ -n "$bad" ]; then
    echo "check-format: not formatted as .clang-format says:$bad"
    echo "check-format: fix with: clang-format -i$bad"
    exit 1
fi
echo "check-format: $(echo "$files" | wc -l) files formatted"
