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
  assert_regex "$stderr" "timed out after 0.3 s waiting for: test -e $BATS_TEST_TMPDIR/never\$"
}

@test "wait_until takes a whole number of seconds" {
  run --separate-stderr wait_until 1 false
  assert_failure 1
  # shellcheck disable=SC2154  # set by bats run --separate-stderr
  assert_regex "$stderr" "timed out after 1 s waiting for: false"
}
