#!/usr/bin/env bats
# scripts/run-tests: its deadline (AFKIT_TEST_DEADLINE). The stages themselves are what make test runs.

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  load "$BATS_TEST_DIRNAME/waiting"
  REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  export AFKIT_REPORTS="$BATS_TEST_TMPDIR/reports"
  # never the testbed of the make test running this file: CI=true there, and run-tests stops the
  # testbed at its end in CI when it ran a testbed stage
  export AFKIT_TESTBED_STATE="$BATS_TEST_TMPDIR/testbed-state"
}

# run_lint_with VAR=VALUE... : scripts/run-tests lint, every process of it carrying AFKIT_TEST_MARK
run_lint_with() {
  run env AFKIT_TEST_MARK="$BATS_TEST_TMPDIR" "$@" "$REPO/scripts/run-tests" lint
}

# marked : the processes that still carry this test's AFKIT_TEST_MARK
marked() {
  grep -lsaF "AFKIT_TEST_MARK=$BATS_TEST_TMPDIR" /proc/[0-9]*/environ || true
}

@test "run-tests past AFKIT_TEST_DEADLINE stops what runs, shows its log's end and counts a failed 'deadline'" {
  run_lint_with AFKIT_TEST_DEADLINE=2
  assert_failure 1
  assert_output --partial "the run passed its deadline of 2 s (AFKIT_TEST_DEADLINE): stopping what still runs"
  assert_output --regexp "tests: [0-9]+ passed, [1-9][0-9]* failed"
  assert [ -s "$AFKIT_REPORTS/deadline.xml" ]
  assert_equal "$(marked)" ""
}

@test "run-tests rejects an AFKIT_TEST_DEADLINE that is not whole seconds" {
  run_lint_with AFKIT_TEST_DEADLINE=10m
  assert_failure 2
  assert_output --partial "AFKIT_TEST_DEADLINE must be whole seconds, not '10m'"
  assert_equal "$(marked)" ""
}

@test "run-tests of host stages in CI leaves the testbed alone (only a testbed stage's run stops it)" {
  run_lint_with CI=true AFKIT_TEST_DEADLINE=2
  assert_failure 1
  refute_output --partial "testbed"
}

@test "run-tests stopped by SIGTERM (a cancelled CI job) stops its stages and exits 143" {
  env AFKIT_TEST_MARK="$BATS_TEST_TMPDIR" "$REPO/scripts/run-tests" lint >"$BATS_TEST_TMPDIR/out" 2>&1 &
  local pid=$!
  wait_until 60 test -s "$AFKIT_REPORTS/lint.log" # the stage runs
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  assert_equal "$rc" 143
  run cat "$BATS_TEST_TMPDIR/out"
  assert_output --partial "interrupted: stopping the stages"
  assert_equal "$(marked)" ""
}

@test "run-tests sets the running host stages, every process of theirs, to a CPU priority and back" {
  # shellcheck source=scripts/run-tests
  source "$REPO/scripts/run-tests"
  bash -c 'sleep 300 & sleep 300 & wait' &
  HOST_PIDS=("$!")
  # the bats stage itself runs at nice 19 beside the testbed stages then: its children may wait
  # seconds for a CPU (fresh37: not started within 10 s)
  wait_until 60 [ "$(pid_tree "${HOST_PIDS[@]}" | wc -l)" -eq 3 ]
  host_stages_nice 19
  local nice
  nice=$(ps -o ni= -p "$(pid_tree "${HOST_PIDS[@]}" | paste -sd,)" | sort -u | tr -d ' ')
  host_stages_nice 0
  local back
  back=$(ps -o ni= -p "$(pid_tree "${HOST_PIDS[@]}" | paste -sd,)" | sort -u | tr -d ' ')
  local -a pids
  mapfile -t pids < <(pid_tree "${HOST_PIDS[@]}")
  kill "${pids[@]}"
  assert_equal "$nice" 19
  assert_equal "$back" 0
}
