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
