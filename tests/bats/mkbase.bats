#!/usr/bin/env bats
# scripts/mkbase: interface and cache keys (the real build runs in the integration suite).

setup() {
  load '/usr/lib/bats/bats-support/load'
  load '/usr/lib/bats/bats-assert/load'
  REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  export AFKIT_BASE_DIR="$BATS_TEST_TMPDIR/base"
}

@test "mkbase --help names the flavours and the exit codes" {
  run "$REPO/scripts/mkbase" --help
  assert_success
  assert_output --partial "minimal"
  assert_output --partial "bench"
  assert_output --partial "Exit codes"
}

@test "mkbase without a flavour is a usage error" {
  run "$REPO/scripts/mkbase"
  assert_failure 2
  assert_output --partial "missing FLAVOUR"
}

@test "mkbase rejects an unknown flavour and option" {
  run "$REPO/scripts/mkbase" fat
  assert_failure 2
  assert_output --partial "unknown flavour 'fat'"
  run "$REPO/scripts/mkbase" --fast minimal
  assert_failure 2
  assert_output --partial "unknown option '--fast'"
}

@test "mkbase cache keys are stable and differ per flavour and suite" {
  run "$REPO/scripts/mkbase" --key minimal
  assert_success
  local k1=$output
  run "$REPO/scripts/mkbase" --key minimal
  assert_output "$k1"
  run "$REPO/scripts/mkbase" --key bench
  refute_output "$k1"
  AFKIT_BASE_SUITE=sid run "$REPO/scripts/mkbase" --key minimal
  refute_output "$k1"
}

@test "mkbase returns a cached image without building" {
  mkdir -p "$AFKIT_BASE_DIR"
  key=$("$REPO/scripts/mkbase" --key minimal)
  mkdir -p "$AFKIT_BASE_DIR/minimal-$key.sandbox/etc"
  echo cached >"$AFKIT_BASE_DIR/minimal-$key.sandbox/etc/afkit-base"
  echo cached >"$AFKIT_BASE_DIR/minimal-$key.sif"
  echo old >"$AFKIT_BASE_DIR/minimal-0123456789abcdef.sif"
  PATH=/usr/bin:/bin run "$REPO/scripts/mkbase" minimal
  assert_success
  assert_output "$AFKIT_BASE_DIR/minimal-$key.sif"
  PATH=/usr/bin:/bin run "$REPO/scripts/mkbase" --sandbox minimal
  assert_success
  assert_output "$AFKIT_BASE_DIR/minimal-$key.sandbox"
  # an older key's image is pruned
  [ ! -e "$AFKIT_BASE_DIR/minimal-0123456789abcdef.sif" ]
}

@test "mkbase: a quote in AFKIT_BASE_DIR is a file name, not code run at exit; the half-built directory goes" {
  local bin="$BATS_TEST_TMPDIR/bin"
  mkdir -p "$bin"
  printf '#!/bin/sh\nexit 1\n' >"$bin/mmdebstrap" # the build fails: the EXIT trap cleans up
  chmod +x "$bin/mmdebstrap"
  export AFKIT_BASE_DIR="$BATS_TEST_TMPDIR/x';touch $BATS_TEST_TMPDIR/pwned;'"
  PATH="$bin:/usr/bin:/bin" run "$REPO/scripts/mkbase" --sandbox minimal
  assert_failure
  [ ! -e "$BATS_TEST_TMPDIR/pwned" ]
  [ -d "$AFKIT_BASE_DIR" ]
  [ -z "$(ls -A "$AFKIT_BASE_DIR")" ]
}
