#!/usr/bin/env bats
# Inside the testbed: the CVMFS fixture mounted at /cvmfs works with the real environment-modules,
# as it does on a site with /cvmfs/alice.cern.ch (module load of a tag, then its program).

bats_require_minimum_version 1.5.0

setup() {
  load "$BATS_TEST_DIRNAME/../bats/assertions"
  # MODULEPATH as alienv sets it on an el9 host: the platform's toolchain modules first.
  MODULEPATH_EL9=/cvmfs/alice.cern.ch/etc/toolchain/modulefiles/el9-x86_64:/cvmfs/alice.cern.ch/el9-x86_64/Modules/modulefiles
  [[ -d /cvmfs/alice.cern.ch/el9-x86_64/Modules/modulefiles ]] || fail "the CVMFS fixture is not mounted at /cvmfs (tests/fixtures/mkcvmfs, then scripts/testbed up)"
}

# in_modules CMD : run CMD in a clean bash where the 'module' function is defined
in_modules() {
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$BATS_TEST_TMPDIR" \
    bash -c 'source /usr/share/modules/init/bash && '"$1"
}

@test "the fixture is mounted read-only at /cvmfs" {
  run touch /cvmfs/alice.cern.ch/afkit-write-test
  assert_failure
  assert_output --partial "Read-only file system"
}

@test "module load AliPhysics/vAN-20201018_ROOT6-1 sets the tag's environment and its program runs" {
  run in_modules "module use $MODULEPATH_EL9 && module load AliPhysics/vAN-20201018_ROOT6-1 &&
    echo ALICE_PHYSICS=\$ALICE_PHYSICS && echo ROOTSYS=\$ROOTSYS && aliphysics-check"
  assert_success
  assert_output --partial "ALICE_PHYSICS=/cvmfs/alice.cern.ch/el9-x86_64/Packages/AliPhysics/vAN-20201018_ROOT6-1"
  assert_output --regexp "ROOTSYS=/cvmfs/alice.cern.ch/el9-x86_64/Packages/ROOT/"
  assert_output --partial "aliphysics-check: OK AliPhysics vAN-20201018_ROOT6-1, all 7 libraries answered"
}

@test "loaded from /cvmfs, GCC-Toolchain defers to Toolchain/GCC-v13.2.0, which brings grid-base-packages" {
  run in_modules "module use $MODULEPATH_EL9 && module load AliPhysics/vAN-20201018_ROOT6-1 &&
    echo LOADED=\$LOADEDMODULES && jq"
  assert_success
  assert_output --partial "Toolchain/GCC-v13.2.0"
  assert_output --partial "grid-base-packages/default"
  assert_output --partial "jq: OK jq v1.6-3"
}

@test "without the toolchain directory on MODULEPATH the tag does not load (the reported failure)" {
  run in_modules "module use /cvmfs/alice.cern.ch/el9-x86_64/Modules/modulefiles && module load AliPhysics/vAN-20251120_O2-1"
  assert_failure
  assert_output --partial "Unable to locate a modulefile for 'Toolchain/GCC-v13.2.0'"
}

@test "without the tag's modules the program does not load its libraries" {
  # the dynamic loader's own exit code: 127
  run -127 in_modules "$(printf '%q' /cvmfs/alice.cern.ch/el9-x86_64/Packages/AliPhysics/vAN-20201018_ROOT6-1/bin/aliphysics-check)"
  assert_output --partial "error while loading shared libraries"
}

@test "module load O2Physics/daily-20251120-0000-1 runs the O2 analysis program" {
  run in_modules "module use $MODULEPATH_EL9 && module load O2Physics/daily-20251120-0000-1 && o2-analysis-check"
  assert_success
  assert_output --partial "o2-analysis-check: OK O2Physics daily-20251120-0000-1, all 6 libraries answered"
}

@test "the alienv front end resolves the VO_ALICE@ syntax (el9 platform, as on an el9 host)" {
  run env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$BATS_TEST_TMPDIR" ALIENV_OVERRIDE_PLATFORM=el9 \
    /cvmfs/alice.cern.ch/bin/alienv setenv VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1 -c aliphysics-check
  assert_success
  assert_output --partial "aliphysics-check: OK AliPhysics vAN-20201018_ROOT6-1"
}

@test "at /cvmfs the LCG view's setup.sh sources its compiler and sets ROOTSYS by readlink; programs run" {
  local view=/cvmfs/sft.cern.ch/lcg/views/LCG_105/x86_64-el9-gcc13-opt
  # shellcheck disable=SC2016 # expanded by the inner bash
  run env -i HOME="$BATS_TEST_TMPDIR" PATH=/usr/bin:/bin bash -c \
    'source "$1" && echo "ROOTSYS=$ROOTSYS" && root.exe && hepfixture-analysis && root-config --version' _ "$view/setup.sh"
  assert_success
  assert_output --partial "ROOTSYS=/cvmfs/sft.cern.ch/lcg/releases/ROOT/6.30.02-"
  assert_output --partial "root.exe: OK ROOT 6.30.02, all 7 libraries answered"
  assert_output --partial "libgcctoolchain.so: gcc/13.1.0"
  assert_output --partial "hepfixture-analysis: OK hepfixture 1.2.0"
  assert_output --partial "6.30/02"
}

@test "the alienv commands of docs/cvmfs-fixture.md run as written" {
  # the console block of its "### alienv" section, line by line, in a clean environment
  # shellcheck disable=SC2016 # expanded by the inner bash
  run env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$BATS_TEST_TMPDIR" bash -euo pipefail -c '
export ALIENV_OVERRIDE_PLATFORM=el9
/cvmfs/alice.cern.ch/bin/alienv setenv VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1 -c aliphysics-check
eval "$(/cvmfs/alice.cern.ch/bin/alienv printenv VO_ALICE@AliPhysics::vAN-20251120_O2-1)"
echo "ALIPHYSICS_VERSION=$ALIPHYSICS_VERSION"
/cvmfs/alice.cern.ch/bin/alienv q
'
  assert_success
  assert_output --partial "aliphysics-check: OK AliPhysics vAN-20201018_ROOT6-1"
  assert_output --partial "ALIPHYSICS_VERSION=vAN-20251120_O2-1"
  assert_output --partial "VO_ALICE@AliPhysics::vAN-20251120_O2-1"
}
