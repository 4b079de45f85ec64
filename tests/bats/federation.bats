#!/usr/bin/env bats
# Host tests of the federation's shell entry points (no namespaces are made): help, usage errors,
# the cached toxiproxy build.

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd -P)
  export AFKIT_TESTBED_CACHE="$BATS_TEST_TMPDIR/cache"
  export AFKIT_TESTBED_STATE="$BATS_TEST_TMPDIR/state"
}

@test "testbed federation: an unknown action is a usage error (exit 2)" {
  run "$REPO/scripts/testbed" federation sideways
  assert_failure 2
  assert_output --partial "expected up, down or status"
}

@test "testbed federation status: refused with exit 3 when the testbed is not up" {
  run "$REPO/scripts/testbed" federation status
  assert_failure 3
  assert_output --partial "the testbed is not up"
}

@test "toxiproxy-install --print-path: exit 5 and the cache path when nothing is built" {
  XDG_CACHE_HOME="$BATS_TEST_TMPDIR/xdg" run "$REPO/scripts/toxiproxy-install" --print-path
  assert_failure 5
  assert_output "$BATS_TEST_TMPDIR/xdg/afkit/toxiproxy/v2.5.0/toxiproxy-server"
}

@test "toxiproxy-install: a cached binary is reused without Go or network" {
  local bin="$BATS_TEST_TMPDIR/xdg/afkit/toxiproxy/v2.5.0/toxiproxy-server"
  mkdir -p "$(dirname "$bin")"
  printf '#!/bin/sh\nexit 0\n' >"$bin"
  chmod +x "$bin"
  XDG_CACHE_HOME="$BATS_TEST_TMPDIR/xdg" PATH=/usr/bin:/bin run "$REPO/scripts/toxiproxy-install"
  assert_success
  assert_output "$bin"
}

@test "demo-federation has --help" {
  run "$REPO/scripts/demo-federation" --help
  assert_success
  assert_output --partial "afkit federation measure"
}

@test "toxiproxy-install has --help" {
  run "$REPO/scripts/toxiproxy-install" --help
  assert_success
  assert_output --partial "go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0"
}
