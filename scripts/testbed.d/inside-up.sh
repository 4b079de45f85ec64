#!/usr/bin/env bash
# Runs INSIDE the testbed (as root, in its network namespace), called by `scripts/testbed up`:
# writes the daemon configurations, starts munge, SLURM, HTCondor and XRootD, records their pids in
# /run/afkit-testbed/NAME.pid and waits until each answers. On failure: names the daemon, shows
# the tail of its log and exits 1. Usage: inside-up.sh [TIMEOUT_SECONDS]
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
RUN=/run/afkit-testbed
DATA=/srv/xrootd/data
TIMEOUT=${1:-90}
HOST=$(hostname)
PORTS=(9618 6817 6818 1094)

log() { printf 'testbed: %s\n' "$*" >&2; }
fail() {
  printf 'testbed: error: %s\n' "$1" >&2
  shift
  local f
  for f in "$@"; do
    [[ -s $f ]] || continue
    printf -- '--- last lines of %s\n' "$f" >&2
    tail -n 25 "$f" >&2
  done
  exit 1
}

case ${1:-} in
  -h | --help) sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
[[ ${AFKIT_TESTBED:-} == 1 && -d $RUN ]] || fail "inside-up.sh runs inside the testbed only (scripts/testbed up)"

# check_ports : every port the daemons need is free (names the holder otherwise).
check_ports() {
  local port holder
  for port in "${PORTS[@]}"; do
    holder=$(ss -Hltnp "sport = :$port" 2>/dev/null || true)
    [[ -z $holder ]] || fail "port $port is already in use: $holder" 
  done
}

# runtime_dirs : what systemd-tmpfiles would create in /run (and /var/lock -> /run/lock).
runtime_dirs() {
  install -d -o condor -g condor /run/condor /run/lock/condor
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o xrootd -g xrootd /run/xrootd
}

configure() {
  # glibc's AI_ADDRCONFIG (slurm's passive getaddrinfo) ignores 127.0.0.1 and finds no IPv4
  # address in a loopback-only namespace; a second loopback address satisfies it.
  [[ $(ip -4 addr show dev lo) == *"127.0.1.1/"* ]] || ip addr add 127.0.1.1/8 dev lo
  printf '127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$HOST" >/etc/hosts
  install -m 0644 "$HERE/condor.conf" /etc/condor/config.d/50-afkit-testbed.conf
  # the node's real size: jobs may ask for memory (sbatch --mem) as on a real cluster
  local cpus mem_mb
  cpus=$(nproc)
  mem_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 9 / 10240))
  sed -e "s/@HOSTNAME@/$HOST/g" -e "s/@CPUS@/$cpus/g" -e "s/@MEMORY_MB@/$mem_mb/g" \
    "$HERE/slurm.conf.in" >/etc/slurm/slurm.conf
  install -m 0755 "$HERE/prolog-slurmctld" /etc/slurm/prolog-slurmctld
  # the federation's sites (testbed/afkit_testbed/federation/batch.py); an empty file makes every slurm command warn
  echo '# no federation sites' >/etc/slurm/federation.conf
  install -m 0644 "$HERE/xrootd.cfg" /etc/xrootd/afkit-testbed.cfg
  if [[ ! -s /etc/munge/munge.key ]]; then
    mungekey --create --keyfile /etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key
    chmod 0600 /etc/munge/munge.key
  fi
  # The data directory: written by root, by user afkit (group xrootd) and through xrootd.
  [[ " $(id -nG afkit) " == *" xrootd "* ]] || usermod -aG xrootd afkit
  chown xrootd:xrootd "$DATA"
  chmod 2775 "$DATA"
}

# start NAME LOG CMD... : start CMD in the foreground mode of the daemon, in its own session.
start() {
  local name=$1 out=$2
  shift 2
  setsid "$@" </dev/null >>"$out" 2>&1 &
  printf '%s\n' "$!" >"$RUN/$name.pid"
}

alive() { kill -0 "$(<"$RUN/$1.pid")" 2>/dev/null; }

# wait_for NAME CHECK_FUNCTION LOG... : poll until CHECK succeeds or the deadline passes.
wait_for() {
  local name=$1 check=$2
  shift 2
  while ! "$check"; do
    alive "$name" || fail "$name exited during start-up" "$@"
    ((SECONDS < DEADLINE)) || fail "$name did not answer within $TIMEOUT s" "$@"
    sleep 0.25
  done
}

munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
slurm_ok() { [[ $(sinfo -h -N -n "$HOST" -o %T 2>/dev/null) == idle ]]; }
condor_ok() {
  local slots
  slots=$(condor_status -af Name 2>/dev/null | grep -c . || true)
  ((slots >= 2)) && [[ -n $(condor_status -schedd -af Name 2>/dev/null) ]]
}
xrootd_ok() {
  [[ -n $(ss -Hltn 'sport = :1094') ]] &&
    timeout 10 xrdfs 127.0.0.1:1094 query config version >/dev/null 2>&1
}

main() {
  check_ports
  runtime_dirs
  configure
  DEADLINE=$((SECONDS + TIMEOUT))
  start munged /var/log/munge/munged.out setpriv --reuid=munge --regid=munge --init-groups \
    /usr/sbin/munged --foreground
  start xrootd /var/log/xrootd/xrootd.out setpriv --reuid=xrootd --regid=xrootd --init-groups \
    /usr/bin/xrootd -c /etc/xrootd/afkit-testbed.cfg -l /var/log/xrootd/xrootd.log -n afkit
  start condor_master /var/log/condor/master.out /usr/sbin/condor_master -f
  wait_for munged munge_ok /var/log/munge/munged.out /var/log/munge/munged.log
  start slurmctld /var/log/slurm/slurmctld.out /usr/sbin/slurmctld -D
  start slurmd /var/log/slurm/slurmd.out /usr/sbin/slurmd -D
  wait_for slurmctld slurm_ok /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log \
    /var/log/slurm/slurmctld.out /var/log/slurm/slurmd.out
  alive slurmd || fail "slurmd exited during start-up" /var/log/slurm/slurmd.log /var/log/slurm/slurmd.out
  wait_for xrootd xrootd_ok /var/log/xrootd/afkit/xrootd.log /var/log/xrootd/xrootd.log /var/log/xrootd/xrootd.out
  wait_for condor_master condor_ok /var/log/condor/MasterLog /var/log/condor/CollectorLog \
    /var/log/condor/StartLog /var/log/condor/SchedLog /var/log/condor/master.out
  # The PyPI htcondor wheel (pinned by the Snakemake executor plugin) cannot use FS
  # authentication against Debian's daemons; an IDTOKEN for the submitting user fixes it.
  setpriv --reuid=afkit --regid=afkit --init-groups env HOME=/home/afkit \
    condor_token_fetch -token afkit-testbed >/dev/null 2>"$RUN/token.err" ||
    fail "condor_token_fetch as user afkit failed" "$RUN/token.err" /var/log/condor/CollectorLog
}

main
