#!/usr/bin/env bats
# Host tests of scripts/testbed (no daemons): argument handling, exit codes, the cache key, the
# refusal of half-built caches. Every test uses its own cache/state directories, never the real
# testbed.

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  load "$BATS_TEST_DIRNAME/waiting"
  REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd -P)
  TB="$REPO/scripts/testbed"
  export AFKIT_TESTBED_CACHE="$BATS_TEST_TMPDIR/cache"
  export AFKIT_TESTBED_STATE="$BATS_TEST_TMPDIR/state"
  export AFKIT_CVMFS_FIXTURE="$BATS_TEST_TMPDIR/cvmfs"
  cp "$REPO/scripts/testbed.d/packages.txt" "$BATS_TEST_TMPDIR/packages.txt"
  export AFKIT_TESTBED_PACKAGES="$BATS_TEST_TMPDIR/packages.txt"
}

# own_ns_sleeper : start `sleep 300` in a mount namespace of its own; sets SLEEPER once the
# namespace is in place (fails the test otherwise).
own_ns_sleeper() {
  unshare --mount --propagation private sleep 300 </dev/null >/dev/null 2>&1 3>&- &
  SLEEPER=$!
  assert wait_until 30 in_other_mount_ns "$SLEEPER" "$(readlink /proc/self/ns/mnt)"
}

# in_other_mount_ns PID NS : is PID alive in a mount namespace other than NS?
in_other_mount_ns() {
  local ns
  ns=$(readlink "/proc/$1/ns/mnt" 2>/dev/null) && [[ -n $ns && $ns != "$2" ]]
}

# running_cmd CMDLINE : is a process of exactly CMDLINE running?
running_cmd() { pgrep -x -f "$1" >/dev/null; }

# fake_rootfs DIR KEY : a tree that passes the completeness check (marker + key programs).
fake_rootfs() {
  local dir=$1 key=$2 p
  for p in usr/bin/apptainer usr/sbin/condor_master usr/sbin/slurmctld usr/bin/xrootd \
    usr/bin/python3 usr/bin/bash; do
    mkdir -p "$dir/$(dirname "$p")"
    printf '#!/bin/sh\n' >"$dir/$p"
    chmod +x "$dir/$p"
  done
  printf '%s\n' "$key" >"$dir/.afkit-testbed-rootfs"
}

@test "--help lists every subcommand and exits 0" {
  run "$TB" --help
  assert_success
  for sub in build up run shell status down key; do
    assert_output --partial "  $sub"
  done
}

@test "no arguments: usage error, exit 2" {
  run "$TB"
  assert_failure 2
  assert_output --partial "Usage: scripts/testbed"
}

@test "unknown subcommand: exit 2 naming it" {
  run "$TB" frobnicate
  assert_failure 2
  assert_output --partial "unknown command 'frobnicate'"
}

@test "build: an unknown option is exit 2 naming it" {
  run "$TB" build --fast
  assert_failure 2
  assert_output --partial "unknown option '--fast'"
}

@test "up: an unexpected argument is exit 2 naming it" {
  run "$TB" up now
  assert_failure 2
  assert_output --partial "unexpected 'now'"
}

@test "down: an unknown option is exit 2" {
  run "$TB" down --all
  assert_failure 2
}

@test "run --user: a user name that is not one is exit 2" {
  run "$TB" run --user 'x;y' -- true
  assert_failure 2
  assert_output --partial "invalid user name"
}

@test "run without a command: exit 2" {
  run "$TB" run --
  assert_failure 2
  assert_output --partial "no command given"
}

@test "run when the testbed is not up: exit 3 telling to run 'scripts/testbed up'" {
  run "$TB" run -- true
  assert_failure 3
  assert_output --partial "the testbed is not up"
  assert_output --partial "scripts/testbed up"
}

@test "run with a stale pid file of a dead or foreign process: still 'not up'" {
  mkdir -p "$AFKIT_TESTBED_STATE"
  echo $$ >"$AFKIT_TESTBED_STATE/holder.pid"
  echo 'mnt:[1]' >"$AFKIT_TESTBED_STATE/holder.ns"
  run "$TB" run -- true
  assert_failure 3
}

@test "down when nothing runs: exit 0" {
  run "$TB" down
  assert_success
  assert_output --partial "not running"
  assert [ ! -e "$AFKIT_TESTBED_STATE" ]
}

@test "status when nothing is built or running" {
  run "$TB" status
  assert_success
  assert_output --partial "not built"
  assert_output --partial "testbed  down"
}

@test "the cache key is 16 hex digits" {
  run "$TB" key
  assert_success
  assert_output --regexp '^[0-9a-f]{16}$'
}

@test "the cache key does not change with the package list's comments" {
  local before
  before=$("$TB" key)
  printf '# only a comment\n\n' >>"$AFKIT_TESTBED_PACKAGES"
  run "$TB" key
  assert_success
  assert_output "$before"
}

@test "the cache key changes with the package list" {
  local before
  before=$("$TB" key)
  printf 'hello\n' >>"$AFKIT_TESTBED_PACKAGES"
  run "$TB" key
  assert_success
  refute_output "$before"
}

@test "the venv key follows the rootfs key" {
  run "$TB" venv-key
  local before=$output
  printf 'hello\n' >>"$AFKIT_TESTBED_PACKAGES"
  run "$TB" venv-key
  assert_output --regexp '^[0-9a-f]{16}$'
  refute_output "$before"
}

@test "a missing package list: exit 5 naming it" {
  AFKIT_TESTBED_PACKAGES=$BATS_TEST_TMPDIR/nope.txt run "$TB" key
  assert_failure 5
  assert_output --partial "nope.txt"
}

@test "a complete rootfs is recognised" {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" "$key"
  run "$TB" status
  assert_success
  assert_output --regexp "rootfs   $key  .*rootfs-$key"
  refute_output --partial "not built"
}

# half_built_rootfs : the current key's rootfs without its completion marker.
half_built_rootfs() {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" "$key"
  rm "$AFKIT_TESTBED_CACHE/rootfs-$key/.afkit-testbed-rootfs"
}

@test "status: a half-built rootfs (no completion marker) is not built" {
  half_built_rootfs
  run "$TB" status
  assert_output --partial "not built"
}

@test "up: a half-built rootfs (no completion marker) is not used (3)" {
  half_built_rootfs
  run "$TB" up
  assert_failure 3
  assert_output --partial "not built"
  assert_output --partial "scripts/testbed build"
  assert [ ! -e "$AFKIT_TESTBED_STATE/holder.pid" ]
}

@test "up: a damaged rootfs (key program missing) is not used (3)" {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" "$key"
  rm "$AFKIT_TESTBED_CACHE/rootfs-$key/usr/sbin/slurmctld"
  run "$TB" up
  assert_failure 3
}

@test "up: a rootfs marked with another key is not used (3)" {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" 0123456789abcdef
  run "$TB" up
  assert_failure 3
}

@test "a partial build directory is never taken for the rootfs" {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key.partial.123" "$key"
  run "$TB" status
  assert_output --partial "not built"
}

@test "up refuses a non-empty state directory that afkit did not make (exit 4)" {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" "$key"
  mkdir -p "$AFKIT_TESTBED_STATE"
  echo precious >"$AFKIT_TESTBED_STATE/precious.txt"
  run "$TB" up
  assert_failure 4
  assert_output --partial "was not made by afkit"
  assert_equal "$(cat "$AFKIT_TESTBED_STATE/precious.txt")" precious
  assert_equal "$(ls -A "$AFKIT_TESTBED_STATE")" precious.txt
}

# host_ns_holder : a `sleep 300` in the host's own mount namespace, registered as the holder of
# the state directory; sets BYSTANDER.
host_ns_holder() {
  sleep 300 3>&- &
  BYSTANDER=$!
  mkdir -p "$AFKIT_TESTBED_STATE"
  touch "$AFKIT_TESTBED_STATE/.afkit-testbed-state"
  echo "$BYSTANDER" >"$AFKIT_TESTBED_STATE/holder.pid"
  readlink "/proc/$BYSTANDER/ns/mnt" >"$AFKIT_TESTBED_STATE/holder.ns"
}

@test "down: a holder in the host's own mount namespace is never taken for a testbed (it kills nothing)" {
  host_ns_holder
  run "$TB" down
  assert_success
  assert_output --partial "not running"
  assert kill -0 "$BYSTANDER"
}

@test "run: a holder in the host's own mount namespace is never taken for a testbed (3)" {
  host_ns_holder
  run "$TB" run -- true
  assert_failure 3
}

@test "build refuses to rebuild a rootfs that a running testbed uses (exit 4)" {
  local key holder
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" "$key"
  rm "$AFKIT_TESTBED_CACHE/rootfs-$key/usr/bin/xrootd"
  # A stand-in holder in a mount namespace of its own, registered as a user of the rootfs.
  own_ns_sleeper
  holder=$SLEEPER
  HOLDER=$holder
  local other=$BATS_TEST_TMPDIR/other-state
  mkdir -p "$other" "$AFKIT_TESTBED_CACHE/users"
  echo "$holder" >"$other/holder.pid"
  readlink "/proc/$holder/ns/mnt" >"$other/holder.ns"
  printf 'state=%s\nrootfs=%s\nvenv=%s\n' "$other" "$AFKIT_TESTBED_CACHE/rootfs-$key" /nonexistent \
    >"$AFKIT_TESTBED_CACHE/users/other"
  # Should the refusal ever break, a dead mirror makes the build fail fast instead of running.
  AFKIT_TESTBED_MIRROR=http://127.0.0.1:9/debian run "$TB" build
  kill "$holder"
  assert_failure 4
  assert_output --partial "in use by a running testbed"
  assert [ -d "$AFKIT_TESTBED_CACHE/rootfs-$key" ]
}

@test "run refuses a testbed whose 'up' did not finish (no ready marker): exit 3" {
  own_ns_sleeper
  local holder=$SLEEPER
  HOLDER=$holder
  mkdir -p "$AFKIT_TESTBED_STATE"
  touch "$AFKIT_TESTBED_STATE/.afkit-testbed-state"
  echo "$holder" >"$AFKIT_TESTBED_STATE/holder.pid"
  readlink "/proc/$holder/ns/mnt" >"$AFKIT_TESTBED_STATE/holder.ns"
  run "$TB" run -- true
  kill "$holder"
  assert_failure 3
  assert_output --partial "did not finish starting"
}

# fake_testbed : a stand-in testbed without daemons: a holder process in a mount namespace of
# its own (a copy of the host's), registered in the state directory as up and ready, with
# $WORKDIR (mode 0755, reachable by other users) as the only bound directory. Sets HOLDER.
fake_testbed() {
  own_ns_sleeper
  HOLDER=$SLEEPER
  WORKDIR=$(mktemp -d /tmp/afkit-testbed-bats.XXXXXX)
  chmod 0755 "$WORKDIR"
  mkdir -p "$AFKIT_TESTBED_STATE" "$WORKDIR/sub"
  touch "$AFKIT_TESTBED_STATE/.afkit-testbed-state" "$AFKIT_TESTBED_STATE/ready"
  echo "$HOLDER" >"$AFKIT_TESTBED_STATE/holder.pid"
  readlink "/proc/$HOLDER/ns/mnt" >"$AFKIT_TESTBED_STATE/holder.ns"
  echo "$WORKDIR" >"$AFKIT_TESTBED_STATE/bound"
}

# gone PID : the process has exited (a zombie that its parent did not reap yet counts as gone).
gone() { [[ ! -e /proc/$1 || $(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) == Z ]]; }

teardown() {
  local p
  for p in ${HOLDER:-} ${BYSTANDER:-}; do kill "$p" 2>/dev/null || true; done
  [[ -z ${WORKDIR:-} ]] || rm -rf -- "$WORKDIR"
}

@test "run passes the exit code through" {
  fake_testbed
  cd "$WORKDIR/sub"
  run "$TB" run -- sh -c 'exit 42'
  assert_failure 42
}

@test "run passes stdin and stdout through" {
  fake_testbed
  cd "$WORKDIR/sub"
  run bash -c "printf 'line one\\nline two\\n' | '$TB' run -- cat"
  assert_success
  assert_output "$(printf 'line one\nline two')"
}

@test "run keeps the caller's directory" {
  fake_testbed
  cd "$WORKDIR/sub"
  run "$TB" run -- pwd
  assert_success
  assert_output "$WORKDIR/sub"
}

@test "run gives a clean environment with the testbed's variables, AFKIT_* passed through" {
  fake_testbed
  cd "$WORKDIR"
  SECRET_HOST_VAR=leak AFKIT_FOO=bar run "$TB" run -- env
  assert_success
  assert_output --partial "PATH=/opt/afkit/venv/bin:"
  assert_output --partial "AFKIT_TESTBED=1"
  assert_output --partial "AFKIT_XROOTD_URL=root://127.0.0.1:1094"
  assert_output --partial "AFKIT_XROOTD_DATA=/srv/xrootd/data"
  assert_output --partial "XRD_CONNECTIONRETRY=1"
  assert_output --partial "HOME=/root"
  assert_output --partial "AFKIT_FOO=bar"
  refute_output --partial "SECRET_HOST_VAR"
  refute_output --partial "AFKIT_TESTBED_STATE"
}

# shellcheck disable=SC2016  # $HOME is expanded by the inner sh
@test "run --user runs as that user with its HOME" {
  fake_testbed
  cd "$WORKDIR"
  run "$TB" run --user nobody -- sh -c 'id -un; echo "$HOME"'
  assert_success
  assert_output "$(printf 'nobody\n%s' "$(getent passwd nobody | cut -d: -f6)")"
}

@test "run --user: a user the testbed does not have is exit 3" {
  fake_testbed
  cd "$WORKDIR"
  run "$TB" run --user no-such-user -- true
  assert_failure 3
  assert_output --partial "no user 'no-such-user'"
}

@test "run from a directory that is not bound into the testbed: exit 3 naming the bound ones" {
  fake_testbed
  cd "$BATS_TEST_TMPDIR"
  run "$TB" run -- true
  assert_failure 3
  assert_output --partial "is not visible inside the testbed"
  assert_output --partial "$WORKDIR"
}

@test "down stops the testbed's processes (by namespace and descent), not the host's" {
  fake_testbed
  sleep 300 3>&- &
  BYSTANDER=$!
  # A process started inside the testbed, in its own session like a daemon.
  cd "$WORKDIR"
  "$TB" run -- setsid sleep 301 </dev/null >/dev/null 2>&1 3>&- &
  local inside
  assert wait_until 30 running_cmd 'sleep 301'
  inside=$(pgrep -x -f 'sleep 301')
  assert_equal "$(readlink "/proc/$inside/ns/mnt")" "$(cat "$AFKIT_TESTBED_STATE/holder.ns")"
  run "$TB" down
  assert_success
  assert_output --partial "the testbed is down"
  assert gone "$HOLDER"
  assert gone "$inside"
  refute gone "$BYSTANDER"
  assert [ ! -e "$AFKIT_TESTBED_STATE/holder.pid" ]
  assert [ ! -e "$AFKIT_TESTBED_STATE/ready" ]
}
