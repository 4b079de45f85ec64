#!/usr/bin/env bats
# tests/bats/waiting.bash: wait_until, how bats tests wait for a condition instead of a fixed time.

bats_require_minimum_version 1.5.0

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  load "$BATS_TEST_DIRNAME/waiting"
}

@test "wait_until returns as soon as the command succeeds" {
  # the condition comes true later, made by another process (its sleep stands for work it does)
  (sleep 0.3 && touch "$BATS_TEST_TMPDIR/ready") &
  run wait_until 30 test -e "$BATS_TEST_TMPDIR/ready"
  assert_success
  assert [ -e "$BATS_TEST_TMPDIR/ready" ]
}

@test "wait_until fails after the timeout naming what it waited for" {
  run --separate-stderr wait_until 0.3 test -e "$BATS_TEST_TMPDIR/never"
  assert_failure 1
  # shellcheck disable=SC2154  # set by bats run --separate-stderr
  assert_regex "$stderr" "timed out after 0.3 s waiting for: test -e $BATS_TEST_TMPDIR/never \\([0-9]+ s of wall time, load [0-9.]+ on [0-9]+ cores\\)\$"
}

@test "wait_until takes a whole number of seconds" {
  run --separate-stderr wait_until 1 false
  assert_failure 1
  # shellcheck disable=SC2154  # set by bats run --separate-stderr
  assert_regex "$stderr" "timed out after 1 s waiting for: false"
}

@test "wait_until counts its timeout in the CPU time the load leaves" {
  # a load of 8 on 2 cores: a second of wall time is a quarter of an idle one
  nproc() { echo 2; }
  cpu_share_ppm() { echo 250000; }
  local start=${EPOCHREALTIME//[!0-9]/}
  run --separate-stderr wait_until 0.3 false
  assert_failure 1
  local took=$((${EPOCHREALTIME//[!0-9]/} - start))
  assert [ "$took" -ge 1200000 ]
}
