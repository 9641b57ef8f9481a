#!/bin/sh
# Install the Debian 12 packages pmc-hybrid builds and tests with.
# Idempotent: installs only what is missing.  Needs root (or sudo).
#
# libzmq3-dev: the join link (docs/join.md); Debian's libzmq is built with
# libsodium, so CURVE security is there (join_listen() checks zmq_has).
#
# slurmctld slurmd slurm-client munge: the ctest group "slurm" runs its own
# private Slurm (tools/slurm-local.sh).  Their packages would start the
# system's munged, slurmctld and slurmd (invoke-rc.d, or deb-systemd-invoke
# under systemd): unless the machine has a policy already, a policy-rc.d
# that denies every start is in place while apt-get runs, so that no system
# daemon starts (or fails the install for want of /etc/slurm/slurm.conf).
set -eu
PKGS="build-essential cmake pkg-config mpich libmpich-dev libhwloc-dev libnuma-dev
libjemalloc-dev libgtest-dev python3 procps libjansson-dev clang libclang-rt-14-dev
clang-format python3-matplotlib man-db slurmctld slurmd slurm-client munge libzmq3-dev"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
POLICY=/usr/sbin/policy-rc.d
if [ ! -e "$POLICY" ]; then
    trap '$SUDO rm -f "$POLICY"' EXIT
    trap 'exit 1' INT TERM
    printf '#!/bin/sh\n# tools/bootstrap.sh: no service starts while it installs\nexit 101\n' |
        $SUDO tee "$POLICY" > /dev/null
    $SUDO chmod 0755 "$POLICY"
fi
echo "bootstrap: installing$missing"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
