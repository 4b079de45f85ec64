#!/usr/bin/env bats
# The documented life cycle of a testbed (make testbed ... scripts/testbed down, the federation's
# up/status/down), typed on the host exactly as written, on a second, independent testbed of this
# checkout (AFKIT_TESTBED_STATE), so the first one stays up for the other integration tests.
# scripts/run-tests runs this file beside the tests of the first testbed (it touches none of its
# state). tests/docs-commands.yaml lists every documented command and the test that runs it.

bats_require_minimum_version 1.5.0

setup() { load host; }

teardown() {
  # the second testbed, whatever the test left running
  if [[ -n ${SECOND_TESTBED:-} ]]; then
    AFKIT_TESTBED_STATE=$SECOND_TESTBED scripts/testbed federation down >/dev/null 2>&1 || true
    AFKIT_TESTBED_STATE=$SECOND_TESTBED scripts/testbed down >/dev/null 2>&1 || true
    rm -f build/docs-links.yaml
  fi
}

@test "docs/testbed.md and docs/federation.md: a second testbed's life cycle, as written" {
  SECOND_TESTBED=$BATS_TEST_TMPDIR/testbed
  export AFKIT_TESTBED_STATE=$SECOND_TESTBED
  # another link file for the federation: alpes's link slowed (a path in the repository)
  sed 's/wan: {rate: 200mbit, latency_ms: 20}/wan: {rate: 100mbit, latency_ms: 20}/' \
    testbed/afkit_testbed/templates/federation/links.yaml >build/docs-links.yaml
  grep -q 'rate: 100mbit' build/docs-links.yaml
  run make testbed
  assert_success
  run scripts/testbed build
  assert_success
  run scripts/testbed up
  assert_success
  assert_output --partial "the testbed is already up"
  run scripts/testbed status
  assert_success
  assert_output --partial "state    $AFKIT_TESTBED_STATE"
  assert_output --regexp "slurmd +pid [0-9]+ +running"
  run scripts/testbed run --user afkit -- condor_q
  assert_success
  assert_output --partial "Schedd:"
  run scripts/testbed run -- whoami
  assert_success
  assert_output "root"
  # shellcheck disable=SC2016 # expanded by the testbed's shell
  run scripts/testbed shell <<<'echo "inside: $AFKIT_TESTBED $(id -un)"'
  assert_success
  assert_output --partial "inside: 1 root"
  run scripts/testbed federation up
  assert_success
  run scripts/testbed federation status
  assert_success
  assert_output --partial '"site": "alpes"'
  run scripts/testbed federation up --links build/docs-links.yaml
  [[ $status -eq 4 ]] || fail "another link file while it is up: exit $status, not 4: $output"
  assert_output --partial "take it down first"
  run scripts/testbed federation down
  assert_success
  run scripts/testbed run -- afkit federation up --links build/docs-links.yaml
  assert_success
  run scripts/testbed federation status
  assert_line --regexp '"site": "alpes".*rate 100Mbit'
  # down while the federation is up: alpes's execute node (a mount namespace of its own) stops too
  alpes_master=$(scripts/testbed run -- cat /srv/federation/alpes/condor/master.pid)
  assert [ -d "/proc/$alpes_master" ]
  run scripts/testbed down
  assert_success
  assert_output --partial "federation: down"
  refute [ -d "/proc/$alpes_master" ]
  run scripts/testbed status
  assert_output --partial "testbed  down (state $AFKIT_TESTBED_STATE)"
}
