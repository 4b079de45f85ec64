#!/usr/bin/env bats
# Interface and bad input of scripts/singularity_alice.sh (host; no Apptainer needed: every bad
# input is detected before it would be).

setup_file() {
  REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  export REPO
  # The alice.cern.ch fixture (cached in ~/.cache/afkit/cvmfs; generated once, ~7 s).
  "$REPO/tests/fixtures/mkcvmfs" --repos alice.cern.ch -q
  FIXTURE=${AFKIT_CVMFS_FIXTURE:-${XDG_CACHE_HOME:-$HOME/.cache}/afkit/cvmfs}
  export FIXTURE
}

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  unset AFKIT_VENV # the tests choose the venv the script finds
  SCRIPT="$REPO/scripts/singularity_alice.sh"
  export AFKIT_CVMFS_ROOT=$FIXTURE
  WORK="$BATS_TEST_TMPDIR/work"
  # A PATH without apptainer/singularity (they exist only in the testbed).
  NOAPP="$BATS_TEST_TMPDIR/bin"
  mkdir -p "$NOAPP"
  local tool
  for tool in bash sh env dirname basename cat python3 tclsh; do
    if command -v "$tool" >/dev/null; then ln -sf "$(command -v "$tool")" "$NOAPP/$tool"; fi
  done
  ln -sf /usr/bin/modulecmd "$NOAPP/modulecmd"
}

@test "--help documents the options and exit codes" {
  run "$SCRIPT" --help
  assert_success
  assert_output --partial "-t, --tag"
  assert_output --partial "-o, --output"
  assert_output --partial "-y, --yes"
  assert_output --partial "Exit codes"
}

@test "missing -t is a usage error (2)" {
  run "$SCRIPT" -o "$WORK"
  assert_failure 2
  assert_output --partial "missing -t/--tag"
  assert [ ! -e "$WORK" ]
}

@test "an option without its value is a usage error (2)" {
  run "$SCRIPT" -t
  assert_failure 2
  assert_output --partial "-t needs a value"
}

@test "an unknown option is a usage error (2)" {
  run "$SCRIPT" -t AliPhysics/vAN-20201018_ROOT6-1 --frobnicate
  assert_failure 2
  assert_output --partial "unknown option '--frobnicate'"
}

@test "path-like and shell-like tags are refused (2) before anything is written" {
  local tag
  # shellcheck disable=SC2016  # the $( ) and backticks are the point: they must not run
  # (every form is covered by tests/unit/image/test_tags.py; here: the script passes them intact)
  for tag in '../AliPhysics/x' 'AliPhysics/vAN 1;id' 'AliPhysics/$(id)`id`'; do
    echo "# tag <$tag>"
    run "$SCRIPT" -t "$tag" -o "$WORK" -y
    assert_failure 2
    assert_output --partial "error: "
    assert_output --partial "hint: "
  done
  assert [ ! -e "$WORK" ]
}

@test "-o / , \$HOME and system directories are refused (4), with or without -y" {
  local dir
  for dir in / "$HOME" /usr/share; do
    echo "# -o $dir"
    run "$SCRIPT" -t AliPhysics/vAN-20201018_ROOT6-1 -o "$dir" -y
    assert_failure 4
    assert_output --partial "refusing"
  done
}

@test "a non-empty directory afkit did not create is refused (4) and left alone" {
  mkdir -p "$WORK"
  echo precious >"$WORK/data.txt"
  run "$SCRIPT" -t AliPhysics/vAN-20201018_ROOT6-1 -o "$WORK" -y
  assert_failure 4
  assert_output --partial "not created by afkit"
  assert_equal "$(cat "$WORK/data.txt")" precious
  run "$SCRIPT" -t AliPhysics/vAN-20201018_ROOT6-1 -o "$WORK"
  assert_failure 4
}

@test "CVMFS repository not mounted is a missing prerequisite (3)" {
  mkdir -p "$BATS_TEST_TMPDIR/empty"
  AFKIT_CVMFS_ROOT="$BATS_TEST_TMPDIR/empty" run "$SCRIPT" -t AliPhysics/vAN-20201018_ROOT6-1 -o "$WORK"
  assert_failure 3
  assert_output --partial "alice.cern.ch is not mounted"
}

@test "an unknown tag is not found (5) and the nearest tags are listed" {
  run "$SCRIPT" -t AliPhysics/vAN-20250403_ROOT6-1 -o "$WORK"
  assert_failure 5
  assert_output --partial "unknown tag"
  assert_output --partial "nearest: AliPhysics/vAN-2025040"
  assert [ ! -e "$WORK" ]
}

@test "--plan prints the closure and writes a shrinkwrap spec (no apptainer needed)" {
  PATH="$NOAPP" run "$SCRIPT" -t VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1 -o "$WORK" --plan
  assert_success
  assert_output --partial "ROOT/v6-20-08-alice1-1"
  assert_output --partial "GCC-Toolchain/v13.2.0-alice1-1"
  local spec="$WORK/AliPhysics_vAN-20201018_ROOT6-1.spec"
  assert grep -qx '/el9-x86_64/Packages/ROOT/v6-20-08-alice1-1/\*' "$spec"
  assert grep -qx '/el9-x86_64/Packages/GCC-Toolchain/v13.2.0-alice1-1/\*' "$spec"
  refute grep -q Geant4 "$spec"
  assert [ -f "$WORK/.afkit-workdir" ]
}

@test "no apptainer or singularity on PATH is a missing prerequisite (3)" {
  PATH="$NOAPP" run "$SCRIPT" -t AliPhysics/vAN-20201018_ROOT6-1 -o "$WORK" -y
  assert_failure 3
  assert_output --partial "neither 'apptainer' nor 'singularity'"
  assert [ ! -e "$WORK/rootfs" ]
}

@test "an earlier build is not cleaned without -y when there is no terminal (4)" {
  PATH="$NOAPP" run "$SCRIPT" -t AliPhysics/vAN-20201018_ROOT6-1 -o "$WORK" --plan
  assert_success
  PATH="$NOAPP" run "$SCRIPT" -t AliPhysics/vAN-20201018_ROOT6-1 -o "$WORK" </dev/null
  assert_failure 4
  assert_output --partial "no terminal to ask"
  assert_output --partial "-y"
  assert [ -f "$WORK/AliPhysics_vAN-20201018_ROOT6-1.spec" ]
}

@test "the script forwards to 'afkit image build --profile alice' (afkit found on PATH)" {
  local fake="$BATS_TEST_TMPDIR/repo"
  mkdir -p "$fake/scripts/lib" "$BATS_TEST_TMPDIR/fakebin"
  cp "$REPO/scripts/singularity_alice.sh" "$fake/scripts/"
  cp "$REPO/scripts/lib/common.sh" "$fake/scripts/lib/"
  printf '#!/bin/sh\nprintf "%%s|" "$@"\n' >"$BATS_TEST_TMPDIR/fakebin/afkit"
  chmod +x "$BATS_TEST_TMPDIR/fakebin/afkit"
  PATH="$BATS_TEST_TMPDIR/fakebin:$PATH" run "$fake/scripts/singularity_alice.sh" \
    -t O2Physics/daily-20250401-0000-1 -o /scratch/x -y --compression zstd --base docker://almalinux:9
  assert_success
  assert_output "image|build|--profile|alice|--tag|O2Physics/daily-20250401-0000-1|--output|/scratch/x|--compression|zstd|--base|docker://almalinux:9|--yes|"
}

@test "--layers, --narrow and --narrow-command reach 'afkit image build' unchanged" {
  local fake="$BATS_TEST_TMPDIR/repo"
  fake_checkout "$fake"
  mkdir -p "$BATS_TEST_TMPDIR/fakebin"
  printf '#!/bin/sh\nprintf "%%s|" "$@"\n' >"$BATS_TEST_TMPDIR/fakebin/afkit"
  chmod +x "$BATS_TEST_TMPDIR/fakebin/afkit"
  PATH="$BATS_TEST_TMPDIR/fakebin:$PATH" run "$fake/scripts/singularity_alice.sh" \
    -t AliPhysics/vAN-20201018_ROOT6-1 -o /scratch/x --layers --narrow \
    --narrow-command 'root -b -q macro.C' --narrow-command=aliroot
  assert_success
  assert_output "image|build|--profile|alice|--tag|AliPhysics/vAN-20201018_ROOT6-1|--output|/scratch/x|--layers|--narrow|--narrow-command|root -b -q macro.C|--narrow-command=aliroot|"
}

@test "--narrow-command without its command is a usage error (2)" {
  run "$SCRIPT" -t AliPhysics/vAN-20201018_ROOT6-1 -o "$WORK" --narrow-command
  assert_failure 2
  assert_output --partial "--narrow-command needs a value"
  assert [ ! -e "$WORK" ]
}

@test "CDPATH cannot redirect the script to another checkout's afkit" {
  local fake="$BATS_TEST_TMPDIR/repo" evil="$BATS_TEST_TMPDIR/evil" d
  mkdir -p "$fake/scripts/lib" "$evil/scripts/lib"
  cp "$REPO/scripts/singularity_alice.sh" "$fake/scripts/"
  cp "$REPO/scripts/lib/common.sh" "$fake/scripts/lib/"
  for d in "$fake" "$evil"; do
    mkdir -p "$d/.venv/bin"
    printf '#!/bin/sh\nexit 0\n' >"$d/.venv/bin/python"
    printf '#!/bin/sh\nprintf "%%s|" "%s" "$@"\n' "${d##*/}" >"$d/.venv/bin/afkit"
    chmod +x "$d/.venv/bin/python" "$d/.venv/bin/afkit"
  done
  cd "$fake"
  CDPATH="$evil" PATH="$NOAPP" run scripts/singularity_alice.sh -t AliPhysics/vAN-20201018_ROOT6-1 -o "$WORK"
  assert_success
  assert_output "repo|image|build|--profile|alice|--tag|AliPhysics/vAN-20201018_ROOT6-1|--output|$WORK|"
}

# fake_checkout DIR : a copy of the script and its library, without a .venv
fake_checkout() {
  mkdir -p "$1/scripts/lib"
  cp "$REPO/scripts/singularity_alice.sh" "$1/scripts/"
  cp "$REPO/scripts/lib/common.sh" "$1/scripts/lib/"
}

@test "AFKIT_VENV names the virtualenv whose afkit the script runs" {
  local fake="$BATS_TEST_TMPDIR/repo" venv="$BATS_TEST_TMPDIR/site-venv"
  fake_checkout "$fake"
  mkdir -p "$venv/bin"
  printf '#!/bin/sh\nexit 0\n' >"$venv/bin/python"
  printf '#!/bin/sh\nprintf "%%s|" site-venv "$@"\n' >"$venv/bin/afkit"
  chmod +x "$venv/bin/python" "$venv/bin/afkit"
  AFKIT_VENV=$venv PATH="$NOAPP" run "$fake/scripts/singularity_alice.sh" -t AliPhysics/vAN-20201018_ROOT6-1 -o "$WORK"
  assert_success
  assert_output "site-venv|image|build|--profile|alice|--tag|AliPhysics/vAN-20201018_ROOT6-1|--output|$WORK|"
}

@test "no venv, no afkit and a python3 without afkit's dependencies: exit 3 saying to run make venv" {
  local fake="$BATS_TEST_TMPDIR/repo" bin="$BATS_TEST_TMPDIR/nodeps"
  fake_checkout "$fake"
  mkdir -p "$bin"
  cp -P "$NOAPP"/* "$bin/"
  rm -f "$bin/python3" # a link to the host's: replaced by one that imports nothing (no jinja2)
  printf '#!/bin/sh\nexit 1\n' >"$bin/python3"
  chmod +x "$bin/python3"
  PATH="$bin" run "$fake/scripts/singularity_alice.sh" -t AliPhysics/vAN-20201018_ROOT6-1 -o "$WORK"
  assert_failure 3
  assert_output --regexp "cannot find the afkit CLI.*jinja2"
  assert_output --partial "run 'make venv' in $fake"
  refute_output --partial Traceback
}
