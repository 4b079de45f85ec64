#!/usr/bin/env bats
# afkit bench / afkit storage command lines: --help, bad options, exit codes (no daemons).

bats_require_minimum_version 1.5.0

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  AFKIT="${AFKIT_VENV:-$REPO/.venv}/bin/afkit"
  DATA="$REPO/tests/data"
}

@test "bench read --help documents the access options" {
  run "$AFKIT" bench read --help
  assert_success
  assert_output --partial "--stride"
  assert_output --partial "--pattern"
}

@test "storage up --help documents the scenarios" {
  run "$AFKIT" storage up --help
  assert_success
  assert_output --partial "xcache-dca"
}

@test "bench read: unknown option is a usage error (2)" {
  run "$AFKIT" bench read --no-such-option /dev/null
  assert_failure 2
  assert_output --partial "unrecognized arguments"
}

@test "bench read: invalid block size names the value (2)" {
  run "$AFKIT" bench read --block 8XB "$DATA/uproot-Zmumu.root"
  assert_failure 2
  assert_output --partial "invalid block size '8XB'"
}

@test "bench read: a missing file is exit 5" {
  run "$AFKIT" bench read --no-monitor /nonexistent/afkit-file
  assert_failure 5
  assert_output --partial "does not exist"
}

@test "bench read: a local file, JSON lines with an interval and a summary" {
  run --separate-stderr "$AFKIT" bench read --no-monitor --block 64k "$DATA/uproot-Zmumu.root"
  assert_success
  assert_line --index 0 --partial '"type":"interval"'
  assert_line --index -1 --partial '"type":"summary"'
  assert_line --index -1 --partial "\"bytes\":$(stat -c %s "$DATA/uproot-Zmumu.root"),"
}

@test "bench read: a file shorter than one block is read and reported" {
  run --separate-stderr "$AFKIT" bench read --no-monitor "$DATA/uproot-Zmumu.root"
  assert_success
  # shellcheck disable=SC2154  # set by bats run --separate-stderr
  assert_regex "$stderr" "less than one block"
}

@test "bench analysis: a missing branch names it and the available ones (5)" {
  run "$AFKIT" bench analysis --no-monitor -b nope "$DATA/uproot-Zmumu.root"
  assert_failure 5
  assert_output --partial "no branch 'nope'"
  assert_output --partial "px1"
}

@test "bench analysis: a non-ROOT file is invalid (6)" {
  run "$AFKIT" bench analysis --no-monitor -b x "$DATA/LICENSE.scikit-hep-testdata"
  assert_failure 6
  assert_output --partial "not a ROOT file"
}

@test "bench analysis: Zmumu has 2304 events" {
  run --separate-stderr "$AFKIT" bench analysis --no-monitor -b E1 "$DATA/uproot-Zmumu.root"
  assert_success
  assert_line --index -1 --partial '"events":2304,'
}

@test "bench multi: fewer files than clients is a usage error (2)" {
  run "$AFKIT" bench multi -n 2 --outdir "$BATS_TEST_TMPDIR/m" "$DATA/uproot-Zmumu.root"
  assert_failure 2
  assert_output --partial "need at least 2 different files"
}

@test "storage: unknown scenario is a usage error (2)" {
  run "$AFKIT" storage url memcache /x
  assert_failure 2
}

@test "storage url: the client URL of a scenario" {
  run "$AFKIT" storage url xcache /data/f.root
  assert_success
  assert_output "root://127.0.0.1:11095//data/f.root"
}

@test "bench/analysis.sh --help names the four tools and the goals" {
  run "$REPO/bench/analysis.sh" --help
  assert_success
  assert_output --partial "rootreadspeed"
  assert_output --partial "afkit root >= 0.95 x rootreadspeed"
  assert_output --partial "afkit uproot >= 0.97 x bare uproot"
}

@test "bench/analysis.sh: --rounds 0 is a usage error (2)" {
  run "$REPO/bench/analysis.sh" --rounds 0
  assert_failure 2
  assert_output --partial "--rounds must be a positive integer"
}

@test "bench/analysis.sh outside the testbed: prerequisite missing (3), naming where to run it" {
  run env -u AFKIT_XROOTD_URL -u AFKIT_XROOTD_DATA "$REPO/bench/analysis.sh"
  assert_failure 3
  assert_output --partial "scripts/testbed run -- bench/analysis.sh"
}
