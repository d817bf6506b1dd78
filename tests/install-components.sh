#!/bin/sh
# Installs the real components the slow tests run, from Debian's archive (bookworm):
# promtool (package prometheus), node_exporter, Slurm's controller and node daemons with their
# client commands, munge (Slurm's authentication), rpm with rpmbuild (an RPM database in
# the simulator's fake root), and headless Chromium (the HTML reports opened in a browser). Idempotent: installs only what is
# missing, so a second run costs a few `command -v`. Needs root (or sudo) and apt-get.
set -eu

missing=""
want() { # want COMMAND PACKAGE: the package, when the command is not there yet
    PATH="$PATH:/usr/sbin:/sbin" command -v "$1" >/dev/null 2>&1 || missing="$missing $2"
}
want promtool prometheus
want prometheus-node-exporter prometheus-node-exporter
want slurmctld slurmctld
want slurmd slurmd
want scontrol slurm-client
want munged munge
want rpm rpm
want rpmbuild rpm
want openssl openssl  # a certificate for the https CDN of tests/fit/test_fit_hub.py
want chromium chromium

[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-components.sh: no apt-get here; install these Debian packages:$missing" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
        echo "install-components.sh: run as root (or with sudo) to install:$missing" >&2
        exit 1
    }
    sudo="sudo"
fi
# The tests start their own daemons, on loopback, in temporary folders: the packages' services
# are not wanted. A policy-rc.d that refuses (exit 101) keeps the maintainer scripts from
# starting them; it is removed afterwards, and one that was already there is left alone.
policy=/usr/sbin/policy-rc.d
ours=""
if [ ! -e "$policy" ]; then
    $sudo sh -c "printf '#!/bin/sh\\nexit 101\\n' > $policy && chmod 755 $policy"
    ours=1
fi
trap '[ -n "$ours" ] && $sudo rm -f "$policy"' EXIT
echo "install-components.sh: installing$missing" >&2
$sudo apt-get update -qq >/dev/null
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    $missing >/dev/null
