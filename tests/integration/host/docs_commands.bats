#!/usr/bin/env bats
# The documented commands that a reader types on the host to drive the testbed (make demo,
# scripts/testbed ..., the mixed campaign's block), each exactly as written. Unlike the other
# integration tests these run on the host, after scripts/run-tests brought the testbed up (and before
# the tests inside it: tests/integration/test_campaign_mixed.py checks the mixed campaign this file
# runs). The testbed's own life cycle (make testbed ... scripts/testbed down) is
# testbed_lifecycle.bats, on a second testbed.
# tests/docs-commands.yaml lists every documented command and the test that runs it.

bats_require_minimum_version 1.5.0

setup() { load host; }

@test "docs/campaigns.md: the mixed HTCondor + SLURM campaign's block runs as written" {
  scripts/testbed run -- rm -rf /tmp/afkit-example # a fresh start, as a newcomer has it
  run ln -sf "$(scripts/mkbase bench)" build/bench.sif
  assert_success
  run scripts/testbed up
  assert_success
  run scripts/testbed run -- install -D -m 0644 tests/data/uproot-HZZ.root /srv/xrootd/data/afkit-example/uproot-HZZ.root
  assert_success
  run scripts/testbed run -- install -d -o afkit -g afkit /tmp/afkit-example
  assert_success
  # shellcheck disable=SC2016 # $0 is the inner bash's
  run --separate-stderr scripts/testbed run --user afkit -- bash -c 'cd /tmp/afkit-example && afkit campaign run "$0"' "$PWD/workflows/config/testbed-mixed.yaml"
  # what the run said, for test_campaign_mixed.py's checks of its results inside the testbed
  # shellcheck disable=SC2154 # stderr: set by run --separate-stderr
  python3 -c 'import json, sys; print(json.dumps(dict(zip(("command", "status", "stdout", "stderr"), [sys.argv[1], int(sys.argv[2]), *sys.argv[3:]]))))' \
    "afkit campaign run" "$status" "$output" "$stderr" |
    scripts/testbed run --user afkit -- tee /tmp/afkit-example/.afkit-doc-run.json >/dev/null
  [[ $status -eq 0 ]] || fail "exit $status: ${stderr: -3000}"
  assert_output "results/testbed-mixed-v1/report/report.html"
  run scripts/testbed run -- test -s "/tmp/afkit-example/$output"
  assert_success
}

@test "README: make demo runs the demo campaign; jq shows a job's software environment (docs/campaigns.md)" {
  run --separate-stderr make demo
  [[ $status -eq 0 ]] || fail "exit $status: ${stderr: -3000}"
  # the report's path, last on the demo's stdout (under make test, make adds its own
  # "Leaving directory" line after it)
  local report
  report=$(grep -E '/report/report\.html$' <<<"$output" | tail -n 1)
  assert_equal "$report" "$REPO/build/demo/results/demo-v1/report/report.html"
  assert [ -s "$report" ]
  assert [ -f "$REPO/build/bench.sif" ] # the SIF docs/federation.md and the example campaigns name
  assert [ -f "$REPO/build/alice-root.sif" ] # the demo's image, which the federation's campaign runs
  # docs/federation.md: the shell in which a newcomer pushes that SIF, as user afkit, in the repository
  # shellcheck disable=SC2016  # expanded by the shell inside the testbed
  run scripts/testbed shell --user afkit <<<'echo "$(id -un) $PWD"; test -r build/alice-root.sif && echo readable'
  assert_success
  assert_output --partial "afkit $REPO"
  assert_output --partial "readable"
  cd build/demo
  run jq -c .software_env results/demo-v1/job/steps/local.hzz.origin.direct.*.json
  assert_success
  assert_output --partial '"tag":"AliPhysics/vAN-20251126_ROOT6-1"'
  assert_output --partial '"missing":[]'
  assert_output --partial '"BASEDIR":"/cvmfs/alice.cern.ch/el9-x86_64/Packages"'
  # the analysis benchmark: the image's ROOT read the AO2D files it wrote, through the XCache too
  run jq -r '[.status, .events > 0, .root_read_calls > 0] | @tsv' results/demo-v1/job/analysis/local.ao2d.xcache.direct.c2.*.json
  assert_success
  assert_output "$(printf 'ok\ttrue\ttrue')"
}
