#!/usr/bin/env bats
# The documented commands that a reader types on the host to drive the testbed and that nothing else
# in the run reuses (make demo-federation, scripts/mkbase, make bench's smallest form), each exactly
# as written. scripts/run-tests runs this file on the host beside the pytest tests inside the testbed,
# after docs_commands.bats (make demo and the mixed campaign, which those tests reuse): these need
# only the testbed and its federation up, and assert what ran, never a rate.
# tests/docs-commands.yaml lists every documented command and the test that runs it.

bats_require_minimum_version 1.5.0

setup() { load host; }

@test "README: make demo-federation measures remote, cold and warm reads and draws the federation" {
  run make demo-federation
  assert_success
  assert_output --partial "| remote (no cache) | frankfurt |"
  assert_output --partial "| dcotf warm | frankfurt |"
  assert [ -s build/demo-federation/report.md ]
  assert [ -s build/demo-federation/federation.png ]
  # Gbit/s over time per site and cache scenario (tests/unit/federation/test_rates_figure.py: what it draws)
  assert_equal "$(head -c 4 build/demo-federation/rates.png | od -An -c | tr -d ' ')" '211PNG'
  assert_output --partial "rates over time: $REPO/build/demo-federation/rates.png"
}

@test "docs: scripts/mkbase minimal and scripts/mkbase --sandbox bench give the cached base images" {
  run scripts/mkbase minimal
  assert_success
  assert_regex "${lines[${#lines[@]} - 1]}" "^$REPO/build/base-images/minimal-.*\.sif$"
  assert [ -s "${lines[${#lines[@]} - 1]}" ]
  run scripts/mkbase --sandbox bench
  assert_success
  assert [ -x "${lines[${#lines[@]} - 1]}/opt/afkit/bin/python3" ]
}

@test "make bench's measurements run at their smallest size (the closest form of make bench)" {
  run bench/image.sh --size-mb 8 --runs 1 --build
  assert_success
  assert_output --partial "whole build of AliPhysics/vAN-20250402_ROOT6-1"
  run scripts/testbed run -- bench/bench_clients.sh --size 64MiB --repeat 1
  assert_success
  assert_output --partial "vs bare uproot.iterate"
  run scripts/testbed run -- bench/analysis.sh --size 20MB --files 1 --rounds 1
  assert_success
  assert_output --partial "vs rootreadspeed (>= 0.95"
  assert_output --partial "vs bare-uproot (>= 0.97"
  run bench/campaign.sh --jobs 200 --planning-only
  assert_success
  assert_output --partial '"bench": "campaign-planning"'
}
