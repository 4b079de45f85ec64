#!/usr/bin/env bats
# scripts/lib/common.sh: the one way the scripts find afkit's virtualenv and Python.

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd -P)"
  T=$BATS_TEST_TMPDIR
  mkdir -p "$T/venv/bin"
  printf '#!/bin/sh\n' >"$T/venv/bin/python"
  chmod +x "$T/venv/bin/python"
}

common() { bash -c "source '$REPO/scripts/lib/common.sh'; $1"; }

@test "afkit_venv: the checkout's .venv by default" {
  AFKIT_VENV='' run common afkit_venv
  assert_success
  assert_output "$REPO/.venv"
}

@test "afkit_python: AFKIT_PYTHON first" {
  AFKIT_PYTHON=/opt/py/bin/python3 AFKIT_VENV=$T/venv run common afkit_python
  assert_output /opt/py/bin/python3
}

@test "afkit_python: else the python of AFKIT_VENV" {
  AFKIT_PYTHON='' AFKIT_VENV=$T/venv run common afkit_python
  assert_output "$T/venv/bin/python"
}

@test "afkit_python: python3 when the venv has none" {
  AFKIT_PYTHON='' AFKIT_VENV=$T/nothing run common afkit_python
  assert_output python3
}

@test "afkit_venv: the same after a cd elsewhere (a subshell in the work directory)" {
  AFKIT_VENV='' run bash -c "cd '$REPO' && source scripts/lib/common.sh && cd '$T' && afkit_venv"
  assert_success
  assert_output "$REPO/.venv"
}

# tree_is ROOT N : pid_tree ROOT lists N processes
tree_is() { (($(common "pid_tree $1" | wc -l) == $2)); }

@test "pid_tree: the given process and every one below it, not its siblings" {
  load "$BATS_TEST_DIRNAME/waiting"
  # root: a shell with a sleep and a shell below it with its own sleep (4 processes)
  bash -c 'sleep 30 & bash -c "sleep 30 & wait" & wait' &
  local root=$! sibling
  sleep 30 &
  sibling=$!
  wait_until 10 tree_is "$root" 4
  run common "pid_tree $root"
  # shellcheck disable=SC2046  # one pid per word
  kill $(printf '%s\n' "${lines[@]}") "$sibling" 2>/dev/null || true
  assert_success
  assert_equal "${#lines[@]}" 4
  assert_line "$root"
  refute_line "$sibling"
}
