#!/usr/bin/env bats
# Host tests of scripts/testbed (no daemons): argument handling, exit codes, the cache key, the
# refusal of half-built caches. Every test uses its own cache/state directories, never the real
# testbed.

setup() {
  REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd -P)
  TB="$REPO/scripts/testbed"
  export AFKIT_TESTBED_CACHE="$BATS_TEST_TMPDIR/cache"
  export AFKIT_TESTBED_STATE="$BATS_TEST_TMPDIR/state"
  export AFKIT_CVMFS_FIXTURE="$BATS_TEST_TMPDIR/cvmfs"
  cp "$REPO/scripts/testbed.d/packages.txt" "$BATS_TEST_TMPDIR/packages.txt"
  export AFKIT_TESTBED_PACKAGES="$BATS_TEST_TMPDIR/packages.txt"
}

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
  [ "$status" -eq 0 ]
  for sub in build up run shell status down key; do
    [[ $output == *"  $sub"* ]] || { echo "missing $sub"; false; }
  done
}

@test "no arguments: usage error, exit 2" {
  run "$TB"
  [ "$status" -eq 2 ]
  [[ $output == *"Usage: scripts/testbed"* ]]
}

@test "unknown subcommand: exit 2 naming it" {
  run "$TB" frobnicate
  [ "$status" -eq 2 ]
  [[ $output == *"unknown command 'frobnicate'"* ]]
}

@test "unknown options: exit 2 naming them" {
  run "$TB" build --fast
  [ "$status" -eq 2 ]
  [[ $output == *"unknown option '--fast'"* ]]
  run "$TB" up now
  [ "$status" -eq 2 ]
  [[ $output == *"unexpected 'now'"* ]]
  run "$TB" down --all
  [ "$status" -eq 2 ]
  run "$TB" run --user 'x;y' -- true
  [ "$status" -eq 2 ]
  [[ $output == *"invalid user name"* ]]
}

@test "run without a command: exit 2" {
  run "$TB" run --
  [ "$status" -eq 2 ]
  [[ $output == *"no command given"* ]]
}

@test "run when the testbed is not up: exit 3 telling to run 'scripts/testbed up'" {
  run "$TB" run -- true
  [ "$status" -eq 3 ]
  [[ $output == *"the testbed is not up"* ]]
  [[ $output == *"scripts/testbed up"* ]]
}

@test "run with a stale pid file of a dead or foreign process: still 'not up'" {
  mkdir -p "$AFKIT_TESTBED_STATE"
  echo $$ >"$AFKIT_TESTBED_STATE/holder.pid"
  echo 'mnt:[1]' >"$AFKIT_TESTBED_STATE/holder.ns"
  run "$TB" run -- true
  [ "$status" -eq 3 ]
}

@test "down when nothing runs: exit 0" {
  run "$TB" down
  [ "$status" -eq 0 ]
  [[ $output == *"not running"* ]]
  [ ! -e "$AFKIT_TESTBED_STATE" ]
}

@test "status when nothing is built or running" {
  run "$TB" status
  [ "$status" -eq 0 ]
  [[ $output == *"not built"* ]]
  [[ $output == *"testbed  down"* ]]
}

@test "the cache key changes with the package list, not with its comments" {
  run "$TB" key
  [ "$status" -eq 0 ]
  [[ $output =~ ^[0-9a-f]{16}$ ]]
  local before=$output
  printf '# only a comment\n\n' >>"$AFKIT_TESTBED_PACKAGES"
  run "$TB" key
  [ "$output" = "$before" ]
  printf 'hello\n' >>"$AFKIT_TESTBED_PACKAGES"
  run "$TB" key
  [ "$status" -eq 0 ]
  [ "$output" != "$before" ]
}

@test "the venv key follows the rootfs key" {
  run "$TB" venv-key
  local before=$output
  printf 'hello\n' >>"$AFKIT_TESTBED_PACKAGES"
  run "$TB" venv-key
  [[ $output =~ ^[0-9a-f]{16}$ ]]
  [ "$output" != "$before" ]
}

@test "a missing package list: exit 5 naming it" {
  AFKIT_TESTBED_PACKAGES=$BATS_TEST_TMPDIR/nope.txt run "$TB" key
  [ "$status" -eq 5 ]
  [[ $output == *"nope.txt"* ]]
}

@test "a complete rootfs is recognised" {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" "$key"
  run "$TB" status
  [ "$status" -eq 0 ]
  [[ $output == *"rootfs   $key  "*"rootfs-$key"* ]]
  [[ $output != *"not built"* ]]
}

@test "a half-built rootfs (no completion marker) is not used" {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" "$key"
  rm "$AFKIT_TESTBED_CACHE/rootfs-$key/.afkit-testbed-rootfs"
  run "$TB" status
  [[ $output == *"not built"* ]]
  run "$TB" up
  [ "$status" -eq 3 ]
  [[ $output == *"not built"* && $output == *"scripts/testbed build"* ]]
  [ ! -e "$AFKIT_TESTBED_STATE/holder.pid" ]
}

@test "a damaged rootfs (key program missing) or one of another key is not used" {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" "$key"
  rm "$AFKIT_TESTBED_CACHE/rootfs-$key/usr/sbin/slurmctld"
  run "$TB" up
  [ "$status" -eq 3 ]
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" 0123456789abcdef
  run "$TB" up
  [ "$status" -eq 3 ]
}

@test "a partial build directory is never taken for the rootfs" {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key.partial.123" "$key"
  run "$TB" status
  [[ $output == *"not built"* ]]
}

@test "up refuses a non-empty state directory that afkit did not make (exit 4)" {
  local key
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" "$key"
  mkdir -p "$AFKIT_TESTBED_STATE"
  echo precious >"$AFKIT_TESTBED_STATE/precious.txt"
  run "$TB" up
  [ "$status" -eq 4 ]
  [[ $output == *"was not made by afkit"* ]]
  [ "$(cat "$AFKIT_TESTBED_STATE/precious.txt")" = precious ]
  [ "$(ls -A "$AFKIT_TESTBED_STATE")" = precious.txt ]
}

@test "a holder in the host's own mount namespace is never taken for a testbed (down kills nothing)" {
  sleep 300 &
  local victim=$!
  mkdir -p "$AFKIT_TESTBED_STATE"
  touch "$AFKIT_TESTBED_STATE/.afkit-testbed-state"
  echo "$victim" >"$AFKIT_TESTBED_STATE/holder.pid"
  readlink "/proc/$victim/ns/mnt" >"$AFKIT_TESTBED_STATE/holder.ns"
  run "$TB" down
  [ "$status" -eq 0 ]
  [[ $output == *"not running"* ]]
  kill -0 "$victim"
  run "$TB" run -- true
  [ "$status" -eq 3 ]
  kill "$victim"
}

@test "build refuses to rebuild a rootfs that a running testbed uses (exit 4)" {
  local key holder
  key=$("$TB" key)
  fake_rootfs "$AFKIT_TESTBED_CACHE/rootfs-$key" "$key"
  rm "$AFKIT_TESTBED_CACHE/rootfs-$key/usr/bin/xrootd"
  # A stand-in holder in a mount namespace of its own, registered as a user of the rootfs.
  unshare --mount --propagation private sleep 300 &
  holder=$!
  local other=$BATS_TEST_TMPDIR/other-state i
  mkdir -p "$other" "$AFKIT_TESTBED_CACHE/users"
  for ((i = 0; i < 50; i++)); do
    [[ $(readlink "/proc/$holder/ns/mnt") != "$(readlink /proc/self/ns/mnt)" ]] && break
    sleep 0.1
  done
  echo "$holder" >"$other/holder.pid"
  readlink "/proc/$holder/ns/mnt" >"$other/holder.ns"
  printf 'state=%s\nrootfs=%s\nvenv=%s\n' "$other" "$AFKIT_TESTBED_CACHE/rootfs-$key" /nonexistent \
    >"$AFKIT_TESTBED_CACHE/users/other"
  run "$TB" build
  kill "$holder"
  [ "$status" -eq 4 ]
  [[ $output == *"in use by a running testbed"* ]]
  [ -d "$AFKIT_TESTBED_CACHE/rootfs-$key" ]
}

@test "run refuses a testbed whose 'up' did not finish (no ready marker): exit 3" {
  unshare --mount --propagation private sleep 300 &
  local holder=$! i
  for ((i = 0; i < 50; i++)); do
    [[ $(readlink "/proc/$holder/ns/mnt") != "$(readlink /proc/self/ns/mnt)" ]] && break
    sleep 0.1
  done
  mkdir -p "$AFKIT_TESTBED_STATE"
  touch "$AFKIT_TESTBED_STATE/.afkit-testbed-state"
  echo "$holder" >"$AFKIT_TESTBED_STATE/holder.pid"
  readlink "/proc/$holder/ns/mnt" >"$AFKIT_TESTBED_STATE/holder.ns"
  run "$TB" run -- true
  kill "$holder"
  [ "$status" -eq 3 ]
  [[ $output == *"did not finish starting"* ]]
}
