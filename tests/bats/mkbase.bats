#!/usr/bin/env bats
# scripts/mkbase: interface and cache keys (the real build runs in the integration suite).

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
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

@test "mkbase rejects an unknown flavour" {
  run "$REPO/scripts/mkbase" fat
  assert_failure 2
  assert_output --partial "unknown flavour 'fat'"
}

@test "mkbase rejects an unknown option" {
  run "$REPO/scripts/mkbase" --fast minimal
  assert_failure 2
  assert_output --partial "unknown option '--fast'"
}

@test "mkbase cache keys are stable" {
  run "$REPO/scripts/mkbase" --key minimal
  assert_success
  local k1=$output
  run "$REPO/scripts/mkbase" --key minimal
  assert_success
  assert_output "$k1"
}

@test "mkbase cache keys differ per flavour" {
  run "$REPO/scripts/mkbase" --key minimal
  assert_success
  local k1=$output
  run "$REPO/scripts/mkbase" --key bench
  assert_success
  refute_output "$k1"
}

@test "mkbase cache keys differ per suite" {
  run "$REPO/scripts/mkbase" --key minimal
  assert_success
  local k1=$output
  AFKIT_BASE_SUITE=sid run "$REPO/scripts/mkbase" --key minimal
  assert_success
  refute_output "$k1"
}

# cached_minimal : a cached minimal SIF and sandbox under the current key, and an older key's SIF;
# prints the key.
cached_minimal() {
  local key
  key=$("$REPO/scripts/mkbase" --key minimal)
  mkdir -p "$AFKIT_BASE_DIR/minimal-$key.sandbox/etc"
  echo cached >"$AFKIT_BASE_DIR/minimal-$key.sandbox/etc/afkit-base"
  echo cached >"$AFKIT_BASE_DIR/minimal-$key.sif"
  echo old >"$AFKIT_BASE_DIR/minimal-0123456789abcdef.sif"
  printf '%s\n' "$key"
}

@test "mkbase returns a cached image without building" {
  key=$(cached_minimal)
  PATH=/usr/bin:/bin run "$REPO/scripts/mkbase" minimal
  assert_success
  assert_output "$AFKIT_BASE_DIR/minimal-$key.sif"
}

@test "mkbase --sandbox returns a cached sandbox without building" {
  key=$(cached_minimal)
  PATH=/usr/bin:/bin run "$REPO/scripts/mkbase" --sandbox minimal
  assert_success
  assert_output "$AFKIT_BASE_DIR/minimal-$key.sandbox"
}

@test "mkbase prunes an older key's image" {
  cached_minimal >/dev/null
  PATH=/usr/bin:/bin run "$REPO/scripts/mkbase" minimal
  assert_success
  assert [ ! -e "$AFKIT_BASE_DIR/minimal-0123456789abcdef.sif" ]
}

@test "mkbase: a quote in AFKIT_BASE_DIR is a file name, not code run at exit; the half-built directory goes" {
  local bin="$BATS_TEST_TMPDIR/bin"
  mkdir -p "$bin"
  printf '#!/bin/sh\nexit 1\n' >"$bin/mmdebstrap" # the build fails: the EXIT trap cleans up
  chmod +x "$bin/mmdebstrap"
  export AFKIT_BASE_DIR="$BATS_TEST_TMPDIR/x';touch $BATS_TEST_TMPDIR/pwned;'"
  PATH="$bin:/usr/bin:/bin" run "$REPO/scripts/mkbase" --sandbox minimal
  assert_failure
  assert [ ! -e "$BATS_TEST_TMPDIR/pwned" ]
  assert [ -d "$AFKIT_BASE_DIR" ]
  assert_equal "$(ls -A "$AFKIT_BASE_DIR")" ""
}
