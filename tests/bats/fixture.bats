#!/usr/bin/env bats
# tests/fixtures/mkcvmfs: the generated CVMFS fixture repositories (alice.cern.ch, sft.cern.ch).

bats_require_minimum_version 1.5.0

MKCVMFS="$BATS_TEST_DIRNAME/../fixtures/mkcvmfs"

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
}

setup_file() {
  export FIX="$BATS_FILE_TMPDIR/cvmfs"
  "$MKCVMFS" --out "$FIX" --quiet
}

# modcmd ARGS... : run Environment Modules' modulecmd (the host has environment-modules).
modcmd() {
  if [[ -f /usr/lib/x86_64-linux-gnu/modulecmd.tcl ]]; then
    tclsh /usr/lib/x86_64-linux-gnu/modulecmd.tcl "$@"
  else
    modulecmd "$@"
  fi
}

# load_code ARCH MODULE : the shell code that loads MODULE from the fixture's ARCH tree.
load_code() {
  MODULEPATH="$FIX/alice.cern.ch/$1/Modules/modulefiles" modcmd bash load "$2"
}

inode() { stat -c %i "$1"; }

# matches VALUE PATTERN : VALUE matches the glob PATTERN (for `assert matches ...`).
# shellcheck disable=SC2053  # the pattern is a glob on purpose
matches() { [[ $1 == $2 ]]; }

@test "mkcvmfs --help documents the options and exit codes" {
  run "$MKCVMFS" --help
  assert_success
  assert_output --partial --out
  assert_output --partial --repos
  assert_output --partial --size-mb
  assert_output --partial --force
  assert_output --partial "Exit codes"
}

@test "mkcvmfs: a bad option is a usage error (exit 2)" {
  run "$MKCVMFS" --no-such-option
  assert_failure 2
}

@test "mkcvmfs: an unknown repository is a usage error (exit 2) and nothing is written" {
  run "$MKCVMFS" --out "$BATS_TEST_TMPDIR/x" --repos cms.cern.ch
  assert_failure 2
  assert_output --partial "unknown repository cms.cern.ch"
  assert [ ! -e "$BATS_TEST_TMPDIR/x" ]
}

@test "mkcvmfs: the real ROOT that cannot be fetched is a missing prerequisite (exit 3), nothing written" {
  # an empty download cache and a pip that may use no index: the first run cannot fetch the wheel
  AFKIT_UPSTREAM_CACHE="$BATS_TEST_TMPDIR/up" PIP_NO_INDEX=1 run "$MKCVMFS" --out "$BATS_TEST_TMPDIR/x" \
    --repos alice.cern.ch
  assert_failure 3
  assert_output --partial "pip download root==0.1a12"
  assert_output --partial "hint: the first run needs pip and apt-get with network access"
  refute compgen -G "$BATS_TEST_TMPDIR/x/alice.cern.ch"
}

@test "alice.cern.ch: the real ROOT's modulefile has alidist root.sh's shape, XRootD loaded first" {
  local mf="$FIX/alice.cern.ch/el9-x86_64/Modules/modulefiles/ROOT/v6-40-00-alice1-1"
  run grep -n -E 'module load|ROOT_RELEASE|ROOT_BASEDIR|ROOTSYS|PYTHONPATH|ROOT_DYN_PATH|LD_LIBRARY_PATH' "$mf"
  assert_success
  assert_line --index 0 --partial "module load BASE/1.0"
  assert_line --index 1 --partial 'module load XRootD/v5.9.2-1'
  assert_line --index 2 --partial 'module load GCC-Toolchain/v12.2.0-alice1-2'
  # shellcheck disable=SC2016  # Tcl's $, literally
  assert_output --partial 'setenv ROOTSYS $::env(ROOT_BASEDIR)/$::env(ROOT_RELEASE)'
  # shellcheck disable=SC2016
  assert_output --partial 'prepend-path ROOT_DYN_PATH $PKG_ROOT/lib'
}

@test "alice.cern.ch: XRootD's libraries are XRootD's package's, not ROOT's" {
  local pkgs="$FIX/alice.cern.ch/el9-x86_64/Packages"
  assert [ -f "$pkgs/ROOT/v6-40-00-alice1-1/lib/libNetxNG.so" ]
  refute compgen -G "$pkgs/ROOT/v6-40-00-alice1-1/lib/libXrd*"
  assert_equal "$(readlink "$pkgs/XRootD/v5.9.2-1/lib/libXrdCl.so.3")" "libXrdCl.so.3.0.0"
  assert [ -f "$pkgs/ROOT/v6-40-00-alice1-1/LICENSE" ]
}

@test "alice.cern.ch: the real ROOT has PyROOT where ROOT installs it, \$ROOTSYS/lib (on the module's PYTHONPATH)" {
  local lib="$FIX/alice.cern.ch/el9-x86_64/Packages/ROOT/v6-40-00-alice1-1/lib"
  assert [ -f "$lib/ROOT/__init__.py" ]
  assert [ -f "$lib/ROOT/libROOTPythonizations.so" ]
  assert [ -f "$lib/ROOT/_pythonization/__init__.py" ]
  assert [ -f "$lib/cppyy/__init__.py" ]
  assert [ -f "$lib/cppyy/libcppyy.so" ]
  refute compgen -G "$lib/ROOT/__pycache__"
  # shellcheck disable=SC2016  # Tcl's $, literally
  run grep -F 'prepend-path PYTHONPATH $PKG_ROOT/lib' "$FIX/alice.cern.ch/el9-x86_64/Modules/modulefiles/ROOT/v6-40-00-alice1-1"
  assert_success
}

@test "alice.cern.ch: the real toolchain's c++ finds its own C++ headers" {
  local tc="$FIX/alice.cern.ch/el9-x86_64/Packages/GCC-Toolchain/v12.2.0-alice1-2"
  run env LD_LIBRARY_PATH="$tc/lib64" "$tc/bin/c++" -xc++ -E -v /dev/null
  assert_success
  assert_output --partial "$tc/include/c++/12"
}

@test "mkcvmfs: a negative size is a usage error (exit 2)" {
  run "$MKCVMFS" --size-mb -3
  assert_failure 2
}

@test "alice.cern.ch: every architecture has Modules, Packages and the toolchain area" {
  local a=$FIX/alice.cern.ch arch
  for arch in el9-x86_64 el7-x86_64; do
    assert [ -f "$a/$arch/Modules/modulefiles/BASE/1.0" ]
    assert [ -f "$a/$arch/Modules/modulefiles/AliPhysics/vAN-20201018_ROOT6-1" ]
    assert [ -x "$a/$arch/Packages/AliPhysics/vAN-20201018_ROOT6-1/bin/aliphysics-check" ]
    assert [ -f "$a/$arch/Packages/AliPhysics/vAN-20201018_ROOT6-1/etc/modulefiles/AliPhysics" ]
    assert [ -L "$a/$arch/Modules/modulefiles/grid-base-packages/default" ]
    assert [ -f "$a/$arch/Modules/modulefiles/grid-base-packages/default" ] # the link resolves
  done
  assert [ -f "$a/el8-x86_64/Modules/modulefiles/AliPhysics/vAN-20230301_ROOT6-1" ]
  assert [ -d "$a/x86_64-2.6-gnu-4.1.2/Modules" ] # alienv refuses to run without it
  assert [ -L "$a/etc/toolchain/modulefiles/el9-x86_64/Toolchain/GCC-v13.2.0" ]
  assert [ -f "$a/etc/toolchain/modulefiles/el9-x86_64/Toolchain/GCC-v13.2.0" ]
  assert [ -f "$a/el9-x86_64/Modules/modulefiles/O2Physics/daily-20250401-0000-1" ]
  assert [ -f "$a/el9-x86_64/Modules/modulefiles/AliPhysics/vAN-20250401_ROOT6-1" ]
  assert [ -f "$a/el9-x86_64/Modules/modulefiles/AliPhysics/vAN-20250402_ROOT6-1" ]
  assert [ -x "$a/bin/alienv" ]
}

@test "alice.cern.ch: an old tag is published for el7 only" {
  local a=$FIX/alice.cern.ch
  assert [ -f "$a/el7-x86_64/Modules/modulefiles/AliPhysics/vAN-20190101_ROOT6-1" ]
  assert [ ! -e "$a/el9-x86_64/Modules/modulefiles/AliPhysics/vAN-20190101_ROOT6-1" ]
}

@test "alice.cern.ch: programs and libraries are ELF with DT_NEEDED across packages and no rpath" {
  local p=$FIX/alice.cern.ch/el9-x86_64/Packages
  run readelf -d "$p/AliPhysics/vAN-20201018_ROOT6-1/bin/aliphysics-check"
  assert_success
  assert_output --partial "[libPWGPP.so]"
  assert_output --partial "[libSTEERBase.so]"
  assert_output --partial "[libCore.so]"
  assert_output --partial "[libgcctoolchain.so]"
  refute_output --partial RPATH
  refute_output --partial RUNPATH
  run readelf -d "$p/AliRoot/v5-09-59-1/lib/libSTEERBase.so"
  assert_success
  assert_output --partial "[libCore.so]"
  refute_output --partial RPATH
  refute_output --partial RUNPATH
}

@test "module load AliPhysics sets the ALICE environment" {
  local code
  code=$(load_code el9-x86_64 AliPhysics/vAN-20201018_ROOT6-1)
  refute_regex "$code" "test 0 = 1"
  eval "$code"
  local p=$FIX/alice.cern.ch/el9-x86_64/Packages
  assert_equal "$ALICE_PHYSICS" "$p/AliPhysics/vAN-20201018_ROOT6-1"
  assert_equal "$ALICE_ROOT" "$p/AliRoot/v5-09-59-1"
  assert_equal "$ROOTSYS" "$p/ROOT/v6-20-08-alice1-1"
  assert_equal "$BASEDIR" "$p"
  assert_equal "$ALIPHYSICS_VERSION" vAN-20201018_ROOT6-1
  # off /cvmfs GCC-Toolchain's modulefile falls back on its own revision (alidist gcc-toolchain.sh)
  assert matches ":$LD_LIBRARY_PATH:" "*:$p/GCC-Toolchain/v13.2.0-alice1-1/lib64:*"
  assert matches ":$ROOT_INCLUDE_PATH:" "*:$p/AliPhysics/vAN-20201018_ROOT6-1/include:*"
  assert_equal "$(command -v aliphysics-check)" "$p/AliPhysics/vAN-20201018_ROOT6-1/bin/aliphysics-check"
}

@test "module load AliPhysics: aliphysics-check, root-config and aliroot run" {
  eval "$(load_code el9-x86_64 AliPhysics/vAN-20201018_ROOT6-1)"
  run aliphysics-check
  assert_success
  assert_output --partial "aliphysics-check: OK AliPhysics vAN-20201018_ROOT6-1, all 7 libraries answered"
  assert_output --partial "libSTEERBase.so: AliRoot/v5-09-59-1"
  assert_output --partial "libgcctoolchain.so: GCC-Toolchain/v13.2.0-alice1-1"
  run root-config --version
  assert_success
  assert_output "6.20/08"
  run aliroot
  assert_success
  assert_output --partial "aliroot: OK AliRoot v5-09-59-1"
}

@test "the user's way: module use + module load through the modules shell init" {
  local init=/usr/share/modules/init/bash
  assert [ -f "$init" ]
  # shellcheck disable=SC2016 # expanded by the inner bash
  run env -i HOME="$BATS_TEST_TMPDIR" PATH=/usr/bin:/bin bash --norc -c '
    source "$1" && module use "$2" && module load AliPhysics/vAN-20201018_ROOT6-1 &&
      echo "PHYS=$ALICE_PHYSICS" && aliphysics-check' _ "$init" "$FIX/alice.cern.ch/el9-x86_64/Modules/modulefiles"
  assert_success
  assert_output --partial "PHYS=$FIX/alice.cern.ch/el9-x86_64/Packages/AliPhysics/vAN-20201018_ROOT6-1"
  assert_output --partial "aliphysics-check: OK AliPhysics vAN-20201018_ROOT6-1, all 7 libraries answered"
}

@test "aliphysics-check fails to load without AliRoot's lib directory on LD_LIBRARY_PATH" {
  eval "$(load_code el9-x86_64 AliPhysics/vAN-20201018_ROOT6-1)"
  local drop=$FIX/alice.cern.ch/el9-x86_64/Packages/AliRoot/v5-09-59-1/lib
  local kept
  kept=$(tr : '\n' <<<"$LD_LIBRARY_PATH" | grep -vxF "$drop" | paste -sd:)
  assert_not_equal "$kept" "$LD_LIBRARY_PATH"
  LD_LIBRARY_PATH=$kept run -127 aliphysics-check
  assert_output --partial "error while loading shared libraries: libSTEERBase.so"
}

@test "off /cvmfs the toolchain indirection is not taken: no Toolchain/ module, no grid-base-packages" {
  local mp="$FIX/alice.cern.ch/etc/toolchain/modulefiles/el9-x86_64:$FIX/alice.cern.ch/el9-x86_64/Modules/modulefiles"
  MODULEPATH=$mp run modcmd bash load AliPhysics/vAN-20201018_ROOT6-1
  refute_output --partial "test 0 = 1"
  assert_output --partial GCC-Toolchain/v13.2.0-alice1-1
  refute_output --partial Toolchain/GCC-v13.2.0
  refute_output --partial grid-base-packages
}

@test "the toolchain link points at the newest GCC-Toolchain modulefile, as link_latest_gcc.sh makes it" {
  run readlink "$FIX/alice.cern.ch/etc/toolchain/modulefiles/el9-x86_64/Toolchain/GCC-v13.2.0"
  assert_output "../../../../../el9-x86_64/Modules/modulefiles/GCC-Toolchain/v13.2.0-alice1-2"
}

@test "grid-base-packages/default links to its version" {
  run readlink "$FIX/alice.cern.ch/el9-x86_64/Modules/modulefiles/grid-base-packages/default"
  assert_output "v1-1"
}

@test "the daily AliPhysics tags share everything but AliPhysics; O2Physics has its own chain" {
  local j=$FIX/alice.cern.ch/.afkit-fixture.json
  run python3 - "$j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["arches"]["el9-x86_64"]
a = set(d["tags"]["VO_ALICE@AliPhysics::vAN-20250401_ROOT6-1"]["closure"])
b = set(d["tags"]["VO_ALICE@AliPhysics::vAN-20250402_ROOT6-1"]["closure"])
o2 = set(d["tags"]["VO_ALICE@O2Physics::daily-20250401-0000-1"]["closure"])
assert a ^ b == {"AliPhysics/vAN-20250401_ROOT6-1", "AliPhysics/vAN-20250402_ROOT6-1"}, a ^ b
assert {"O2/daily-20250401-0000-1", "FairRoot/v18.4.9-alice3-5", "boost/v1.83.0-alice2-3"} <= o2
used = set().union(*(set(t["closure"]) for t in d["tags"].values()))
assert set(d["packages"]) - used, "every package is in some tag's closure"
print("ok", len(a), len(o2), len(d["packages"]))
PY
  assert_success
  assert_output --regexp '^ok'
}

@test "module load O2Physics runs the O2 analysis program" {
  eval "$(load_code el9-x86_64 O2Physics/daily-20250401-0000-1)"
  run o2-analysis-check
  assert_success
  assert_output --partial "o2-analysis-check: OK O2Physics daily-20250401-0000-1, all 6 libraries answered"
}

@test "alienv printenv gives a VO_ALICE@ tag's environment" {
  run "$FIX/alice.cern.ch/bin/alienv" printenv VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1
  assert_success
  assert_output --partial "ALICE_PHYSICS=$FIX/alice.cern.ch/el9-x86_64/Packages/AliPhysics/vAN-20201018_ROOT6-1;"
}

@test "alienv setenv -c runs a command with a VO_ALICE@ tag loaded" {
  run "$FIX/alice.cern.ch/bin/alienv" setenv VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1 -c aliphysics-check
  assert_success
  assert_output --partial "aliphysics-check: OK AliPhysics vAN-20201018_ROOT6-1"
}

@test "alienv setenv exports MODULEPATH (as it loaded the tag) and ALIEN_ORGANISATION, as upstream's" {
  run env ALIENV_OVERRIDE_PLATFORM=el9 ALIEN_ORGANISATION=alice "$FIX/alice.cern.ch/bin/alienv" \
    setenv VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1 -c printenv MODULEPATH ALIEN_ORGANISATION
  assert_success
  local root
  root=$(cd "$FIX/alice.cern.ch" && pwd -P)
  assert_line --index 0 "$root/etc/toolchain/modulefiles/el9-x86_64:$root/el9-x86_64/Modules/modulefiles"
  assert_line --index 1 ALICE
}

@test "alienv: an el7-only tag falls back to el7" {
  run "$FIX/alice.cern.ch/bin/alienv" setenv VO_ALICE@AliPhysics::vAN-20190101_ROOT6-1 -c aliphysics-check
  assert_success
  assert_output --partial "OK AliPhysics vAN-20190101_ROOT6-1"
  assert_output --partial "libgcctoolchain.so: GCC-Toolchain/v7.3.0-alice2-1"
}

@test "alienv: an unknown tag is exit 1 naming it" {
  run "$FIX/alice.cern.ch/bin/alienv" printenv VO_ALICE@AliPhysics::vNOPE-1
  assert_failure 1
  assert_output --partial "cannot load AliPhysics/vNOPE-1 on any platform"
}

@test "alienv: an unknown command is exit 2" {
  run "$FIX/alice.cern.ch/bin/alienv" frobnicate
  assert_failure 2
}

@test "alienv enter: an interactive shell (here fed from stdin) with the tag loaded" {
  # shellcheck disable=SC2016 # expanded by the entered shell
  run env -i HOME="$BATS_TEST_TMPDIR" PATH=/usr/bin:/bin SHELL=/bin/bash \
    "$FIX/alice.cern.ch/bin/alienv" enter VO_ALICE@O2Physics::daily-20250401-0000-1 <<<'echo "O2P=$O2PHYSICS_ROOT"'
  assert_success
  assert_output --partial "O2P=$FIX/alice.cern.ch/el9-x86_64/Packages/O2Physics/daily-20250401-0000-1"
}

@test "a second run is a no-op" {
  local before
  before=$(inode "$FIX/alice.cern.ch")
  run "$MKCVMFS" --out "$FIX"
  assert_success
  assert_output --partial "alice.cern.ch: up to date"
  assert_output --partial "sft.cern.ch: up to date"
  assert_equal "$(inode "$FIX/alice.cern.ch")" "$before"
}

@test "--force rebuilds" {
  local before
  before=$(inode "$FIX/sft.cern.ch")
  run "$MKCVMFS" --out "$FIX" --repos sft.cern.ch --force
  assert_success
  assert_output --partial "sft.cern.ch: generated"
  assert_not_equal "$(inode "$FIX/sft.cern.ch")" "$before"
}

@test "a changed generator rebuilds" {
  local out=$BATS_TEST_TMPDIR/out before
  mkdir -p "$out"
  cp -al "$FIX/sft.cern.ch" "$out/" # the current tree and its stamp (hard links: a copy in no time)
  before=$(inode "$out/sft.cern.ch")
  # a modified copy of the generator: its stamp no longer matches
  cp -a "$BATS_TEST_DIRNAME/../fixtures" "$BATS_TEST_TMPDIR/gen"
  printf '\n# changed\n' >>"$BATS_TEST_TMPDIR/gen/cvmfsfix/lcg_catalog.py"
  run "$BATS_TEST_TMPDIR/gen/mkcvmfs" --out "$out" --repos sft.cern.ch
  assert_success
  assert_output --partial "sft.cern.ch: generated"
  assert_not_equal "$(inode "$out/sft.cern.ch")" "$before"
  assert_equal "$(compgen -G "$out/.sft.cern.ch.mkcvmfs-tmp-*")" ""
}

@test "a failing build leaves the previous tree intact and no temporary directory" {
  local before fake=$BATS_TEST_TMPDIR/bin
  before=$(inode "$FIX/alice.cern.ch")
  mkdir -p "$fake"
  printf '#!/bin/sh\ncase " $* " in *" -shared "*) echo "fake gcc: broken" >&2; exit 1 ;; esac\nexec /usr/bin/gcc "$@"\n' >"$fake/gcc"
  chmod +x "$fake/gcc"
  PATH="$fake:$PATH" run "$MKCVMFS" --out "$FIX" --repos alice.cern.ch --force
  assert_failure 1
  assert_output --partial "fake gcc: broken"
  assert_equal "$(inode "$FIX/alice.cern.ch")" "$before"
  assert [ -x "$FIX/alice.cern.ch/el9-x86_64/Packages/AliPhysics/vAN-20201018_ROOT6-1/bin/aliphysics-check" ]
  assert_equal "$(compgen -G "$FIX/.alice.cern.ch.mkcvmfs-tmp-*")" ""
}

@test "mkcvmfs refuses to replace a directory it did not create (exit 4)" {
  local out=$BATS_TEST_TMPDIR/out
  mkdir -p "$out/sft.cern.ch"
  echo precious >"$out/sft.cern.ch/data"
  run "$MKCVMFS" --out "$out" --repos sft.cern.ch
  assert_failure 4
  assert_output --partial "did not create it"
  assert_equal "$(cat "$out/sft.cern.ch/data")" precious
  assert_equal "$(compgen -G "$out/.sft.cern.ch.mkcvmfs-tmp-*")" ""
}

@test "mkcvmfs replaces an empty directory (a bind-mount point, say)" {
  local out=$BATS_TEST_TMPDIR/out
  mkdir -p "$out/sft.cern.ch"
  run "$MKCVMFS" --out "$out" --repos sft.cern.ch --quiet
  assert_success
  assert [ -f "$out/sft.cern.ch/.afkit-fixture.json" ]
}

@test "mkcvmfs removes leftovers of an interrupted run (marker inside), not look-alikes without it" {
  local out=$BATS_TEST_TMPDIR/out
  mkdir -p "$out/.sft.cern.ch.mkcvmfs-tmp-stale" "$out/.sft.cern.ch.mkcvmfs-tmp-foreign"
  touch "$out/.sft.cern.ch.mkcvmfs-tmp-stale/.mkcvmfs-partial"
  run "$MKCVMFS" --out "$out" --repos sft.cern.ch --quiet --force
  assert_success
  assert [ ! -e "$out/.sft.cern.ch.mkcvmfs-tmp-stale" ]
  assert [ -d "$out/.sft.cern.ch.mkcvmfs-tmp-foreign" ]
}

@test "mkcvmfs refuses a file in the way (exit 4)" {
  local out=$BATS_TEST_TMPDIR/out
  mkdir -p "$out"
  echo precious >"$out/alice.cern.ch"
  run "$MKCVMFS" --out "$out" --repos alice.cern.ch
  assert_failure 4
  assert_equal "$(cat "$out/alice.cern.ch")" precious
}

@test "sft.cern.ch: releases, the LCG_105 manifest and a view of absolute links into the hashed installs" {
  local lcg=$FIX/sft.cern.ch/lcg plat=x86_64-el9-gcc13-opt
  local view=$lcg/views/LCG_105/$plat
  assert compgen -G "$lcg/releases/ROOT/6.30.02-*/$plat/lib/libCore.so"
  assert compgen -G "$lcg/releases/gcc/13.1.0-*/x86_64-el9/lib64/libgcctoolchain.so"
  assert [ -L "$view/bin/root.exe" ]
  assert [ ! -L "$view/bin" ] # real directories, per-file links
  local target
  target=$(readlink "$view/lib/libCore.so")
  assert matches "$target" "/cvmfs/sft.cern.ch/lcg/releases/ROOT/6.30.02-*/$plat/lib/libCore.so"
  assert [ -f "$FIX/sft.cern.ch/${target#/cvmfs/sft.cern.ch/}" ]
  assert_equal "$(readlink "$lcg/releases/gcc/13.1.0")" "$(basename "$(compgen -G "$lcg/releases/gcc/13.1.0-*")")"
  target=$(readlink "$view/bin/root.exe")
  run readelf -d "$FIX/sft.cern.ch/${target#/cvmfs/sft.cern.ch/}"
  assert_output --partial "[libCore.so]"
  assert_output --partial "[libXrdCl.so]"
  assert_output --partial "[libgcctoolchain.so]"
  refute_output --partial RPATH
  refute_output --partial RUNPATH
  # releases the view does not use
  assert compgen -G "$lcg/releases/ROOT/6.28.10-*/$plat/lib/libCore.so"
  assert compgen -G "$lcg/releases/Geant4/11.2.0-*/$plat/lib/libG4run.so"
}

@test "sft.cern.ch: the manifests list the view's packages and the blacklisted one, with hashes and paths that resolve" {
  local rel=$FIX/sft.cern.ch/lcg/releases/LCG_105 plat=x86_64-el9-gcc13-opt
  local man=$rel/LCG_externals_$plat.txt gen=$rel/LCG_generators_$plat.txt
  local view=$FIX/sft.cern.ch/lcg/views/LCG_105/$plat m
  for m in "$man" "$gen"; do
    assert_equal "$(sed -n 1p "$m")" "PLATFORM: $plat"
    assert_equal "$(sed -n 2p "$m")" "VERSION: 105"
    assert_equal "$(sed -n 3p "$m")" "COMPILER: gcc;13.1.0"
  done
  local listed linked name hash version dir
  listed=$({ tail -n +4 "$man"; tail -n +4 "$gen"; } | awk -F'; ' '{print $1 "-" $2}' | sort)
  linked=$(find "$view/bin" "$view/lib" "$view/include" -type l -exec readlink {} + |
    sed -E 's|^/cvmfs/sft.cern.ch/lcg/releases/(MCGenerators/)?([^/]+)/[^/]+-([0-9a-f]{5})/.*|\2-\3|' | sort -u)
  assert [ -n "$listed" ]
  # all but the blacklisted hepmc3 (create_lcg_view.py -B), which is listed and installed
  assert_equal "$(grep -v '^hepmc3-' <<<"$listed")" "$linked"
  assert_regex "$listed" $'(^|\n)hepmc3-[0-9a-f]{5}($|\n)'
  assert_regex "$(tail -n +4 "$gen")" '^pythia8; [0-9a-f]{5}; 310; ./MCGenerators/pythia8/310/'"$plat"'; $'
  while IFS=' ' read -r name hash version dir _; do
    assert [ -d "$rel/$dir" ]
    assert matches "$(readlink "$rel/$dir")" "*/$name/$version-$hash/$plat"
  done < <({ tail -n +4 "$man"; tail -n +4 "$gen"; } | sed 's/; /;/g' | tr ';' ' ')
  run grep -c '^ROOT; ' "$man"
  assert_output 1
  run grep '6.28.10' "$man"
  assert_failure 1
}

@test "sft.cern.ch: a generator's <version>-<hash> holds two platforms; the view links its own" {
  local gen=$FIX/sft.cern.ch/lcg/releases/MCGenerators/pythia8
  run ls "$gen"/310-*
  assert_success
  assert_output $'x86_64-el9-gcc13-dbg\nx86_64-el9-gcc13-opt'
  run readlink "$FIX/sft.cern.ch/lcg/views/LCG_105/x86_64-el9-gcc13-opt/lib/libpythia8.so"
  assert_output --regexp '^/cvmfs/sft.cern.ch/lcg/releases/MCGenerators/pythia8/310-[0-9a-f]{5}/x86_64-el9-gcc13-opt/lib/libpythia8.so$'
}

@test "sft.cern.ch: off /cvmfs the view's setup.sh finds itself (BASH_ARGV) but not its absolute links" {
  local view=$FIX/sft.cern.ch/lcg/views/LCG_105/x86_64-el9-gcc13-opt
  # shellcheck disable=SC2016 # expanded by the inner bash
  run env -i HOME="$HOME" PATH=/usr/bin:/bin bash -c \
    'source "$1" && echo "V=$LCG_VERSION P=${PATH%%:*} R=${ROOTSYS:-unset}"' _ "$view/setup.sh"
  assert_success
  assert_output "V=105 P=$view/bin R=unset" # as on a host without /cvmfs/sft.cern.ch
}

@test "sft.cern.ch: without the gcc release (sourced by setup.sh, not part of the view) nothing loads" {
  local rootexe
  rootexe=$(compgen -G "$FIX/sft.cern.ch/lcg/releases/ROOT/6.30.02-*/x86_64-el9-gcc13-opt/bin/root.exe")
  run -127 env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="${rootexe%/bin/root.exe}/lib" "$rootexe"
  assert_output --partial "error while loading shared libraries:"
}

@test "sft.cern.ch: LCG_110's view has the real ROOT on the real gcc 12.2.0, installed per OS as LCG installs compilers" {
  local lcg=$FIX/sft.cern.ch/lcg plat=x86_64-el9-gcc12-opt gcc
  local view=$lcg/views/LCG_110/$plat
  gcc=$(compgen -G "$lcg/releases/gcc/12.2.0-*/x86_64-el9")
  assert_equal "$(readlink "$lcg/releases/gcc/12.2.0")" "$(basename "${gcc%/x86_64-el9}")"
  run "$gcc/bin/c++" -dumpfullversion # Debian's g++-12, not a stand-in
  assert_output 12.2.0
  assert [ -f "$gcc/setup.sh" ]
  assert grep -qF "source /cvmfs/sft.cern.ch/lcg/releases/gcc/12.2.0/x86_64-el9/setup.sh" "$view/setup.sh"
  run readlink "$view/bin/root"
  assert_output --regexp '^/cvmfs/sft.cern.ch/lcg/releases/ROOT/6.40.00-[0-9a-f]{5}/x86_64-el9-gcc12-opt/bin/root$'
  assert [ -f "$FIX/sft.cern.ch/${output#/cvmfs/sft.cern.ch/}" ]
  assert compgen -G "$lcg/releases/ROOT/6.40.00-*/$plat/lib/libCling.so"
  run readlink "$view/lib/libXrdCl.so.3" # XRootD's own package, as ROOT's libNetxNG needs it
  assert_output --regexp '^/cvmfs/sft.cern.ch/lcg/releases/XRootD/5.9.2-[0-9a-f]{5}/x86_64-el9-gcc12-opt/lib/'
  run sed -n 1,3p "$lcg/releases/LCG_110/LCG_externals_$plat.txt"
  assert_output $'PLATFORM: x86_64-el9-gcc12-opt\nVERSION: 110\nCOMPILER: gcc;12.2.0'
}

@test "--size-mb pads the fixture to about the requested size with incompressible data" {
  local out=$BATS_TEST_TMPDIR/big bytes pad
  # above the real ROOT and gcc (about 740 MiB): padding fills the rest
  run "$MKCVMFS" --out "$out" --repos sft.cern.ch --size-mb 800
  assert_success
  bytes=$(find "$out/sft.cern.ch" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
  assert [ "$bytes" -ge $((800 * 1024 * 1024 * 95 / 100)) ]
  assert [ "$bytes" -le $((800 * 1024 * 1024 * 105 / 100)) ]
  pad=$(find "$out/sft.cern.ch" -path '*afkit-fixture-padding*' -type f | head -n 1)
  assert [ -n "$pad" ]
  assert [ "$(gzip -1 -c "$pad" | wc -c)" -ge $(($(stat -c %s "$pad") * 99 / 100)) ]
  # the programs are unaffected
  local libs
  libs=$(find "$out/sft.cern.ch/lcg/releases" -mindepth 4 -maxdepth 4 -name 'lib*' -type d \
    \( -path '*/x86_64-el9-gcc13-opt/*' -o -path '*/gcc/13.1.0-*' \) | paste -sd:)
  LD_LIBRARY_PATH=$libs run "$(compgen -G "$out/sft.cern.ch/lcg/releases/ROOT/6.30.02-*/x86_64-el9-gcc13-opt/bin/root.exe")"
  assert_success
}

@test "generation is reproducible: another DIR gets byte-identical files" {
  local other=$BATS_TEST_TMPDIR/again
  "$MKCVMFS" --out "$other" --repos sft.cern.ch --quiet
  # every file's bytes (diff reads none of two names of one file: the real software, hard-linked
  # from the download cache into both), every link's target, the same names on both sides
  run diff -r --no-dereference -x .afkit-fixture.json "$FIX/sft.cern.ch" "$other/sft.cern.ch"
  assert_success
  assert [ "$(find "$other/sft.cern.ch" -type f -links 1 -path '*/lib/lib*.so' | wc -l)" -gt 5 ]
}

# scale_env : the scale fixture of this file's tests in a private cache (never the shared one);
# the real software from the download cache the other tests use (not downloaded again)
scale_env() {
  unset AFKIT_CVMFS_SCALE AFKIT_CVMFS_FIXTURE
  export AFKIT_UPSTREAM_CACHE=${AFKIT_UPSTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/afkit/upstream}
  export XDG_CACHE_HOME=$BATS_FILE_TMPDIR/scale-cache
  PKGS=$XDG_CACHE_HOME/afkit/cvmfs-scale/alice.cern.ch/el9-x86_64/Packages
}

# scale_fixture : generate it (a no-op when its stamp is current)
scale_fixture() {
  scale_env
  "$MKCVMFS" --closure-gib 0.04 -q
}

@test "--closure-gib grows the adjacent dailies with compressible real bytes and user.hash, in the scale directory" {
  scale_env
  run "$MKCVMFS" --closure-gib 0.04 -q
  assert_success
  assert [ -d "$PKGS/AliPhysics/vAN-20250403_ROOT6-1" ]
  refute [ -e "$XDG_CACHE_HOME/afkit/cvmfs" ] # never the shared default fixture
}

@test "--closure-gib: files compress like binaries and carry CVMFS's user.hash (their SHA-1)" {
  scale_fixture
  local lib size packed
  lib=$(find "$PKGS/ROOT/v6-32-06-alice1-3/lib" -name '*.pcm' -size +64k | head -n 1)
  assert [ -n "$lib" ]
  # compresses like binaries: neither random (ratio ~1) nor zeros (ratio ~0)
  size=$(stat -c %s "$lib") packed=$(gzip -c "$lib" | wc -c)
  assert [ "$packed" -lt $((size * 80 / 100)) ]
  assert [ "$packed" -gt $((size * 10 / 100)) ]
  run python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "user.hash").decode())' "$lib"
  assert_output "$(sha1sum <"$lib" | cut -c1-40)"
}

@test "--closure-gib: the AliRoot rebuild keeps most headers and changes the libraries" {
  scale_fixture
  local same=0 all=0 header
  for header in "$PKGS"/AliRoot/v5-09-59l-1/include/*/*.h; do
    all=$((all + 1))
    ! cmp -s "$header" "${header/v5-09-59l-1/v5-09-59l-2}" || same=$((same + 1))
  done
  assert [ "$all" -gt 10 ]
  assert [ $((same * 4)) -gt $((all * 3)) ]
  run cmp -s "$PKGS/AliRoot/v5-09-59l-1/lib/libCore0.so" "$PKGS/AliRoot/v5-09-59l-2/lib/libCore0.so"
  assert_failure
}

@test "--closure-gib: the toolchain has hard-linked programs and symlinked libraries" {
  scale_fixture
  run find "$PKGS/GCC-Toolchain/v13.2.0-alice1-1/bin" -links +1 -type f
  assert_success
  refute_output ""
  run find "$PKGS/GCC-Toolchain/v13.2.0-alice1-1/lib64" -type l
  assert_success
  refute_output ""
}

@test "--closure-gib: the new daily loads with the real modulecmd, on the AliRoot rebuild" {
  scale_fixture
  MODULEPATH="${PKGS%/Packages}/Modules/modulefiles" run modcmd bash load AliPhysics/vAN-20250403_ROOT6-1
  assert_success
  assert_output --partial "AliRoot/v5-09-59l-2"
}
