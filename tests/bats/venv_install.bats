#!/usr/bin/env bats
# scripts/venv-install: the one way afkit's virtualenvs are made (make venv, ci/venv.sh, the
# testbed's venv). The install itself runs in make venv and the testbed's first up; here its
# arguments, which fail before anything is created.

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd -P)"
  GIT_BEFORE=$(git -C "$REPO" status --porcelain --untracked-files=all)
}

@test "--help says what it installs and how" {
  run "$REPO/scripts/venv-install" --help
  assert_success
  assert_output --partial "Usage: scripts/venv-install [--system-site-packages] VENV"
  assert_output --partial "done by uv"
}

@test "no VENV is a usage error (2) and creates nothing" {
  cd "$REPO" || return
  run scripts/venv-install
  assert_failure 2
  assert_output --partial "venv-install: error: no VENV given"
  assert_equal "$(git status --porcelain --untracked-files=all)" "$GIT_BEFORE"
}

@test "an unknown option is a usage error (2) naming it, before any venv is made" {
  run "$REPO/scripts/venv-install" --system "$BATS_TEST_TMPDIR/v"
  assert_failure 2
  assert_output --partial "unknown option '--system'"
  assert [ ! -e "$BATS_TEST_TMPDIR/v" ]
}

@test "two VENVs are a usage error (2)" {
  run "$REPO/scripts/venv-install" "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
  assert_failure 2
  assert_output --partial "one VENV"
  assert [ ! -e "$BATS_TEST_TMPDIR/a" ]
}
