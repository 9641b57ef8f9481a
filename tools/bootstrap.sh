#!/bin/sh
# Install the Debian 12 packages pmc-hybrid builds and tests with.
# Idempotent: installs only what is missing.  Needs root (or sudo).
set -eu
PKGS="build-essential cmake pkg-config mpich libmpich-dev libhwloc-dev libnuma-dev
libjemalloc-dev libgtest-dev python3 procps libjansson-dev clang libclang-rt-14-dev
clang-format python3-matplotlib man-db"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "bootstrap: installing$missing"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
