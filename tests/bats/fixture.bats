#!/usr/bin/env bats
# tests/fixtures/mkcvmfs: the generated CVMFS fixture repositories (alice.cern.ch, sft.cern.ch).

bats_require_minimum_version 1.5.0

MKCVMFS="$BATS_TEST_DIRNAME/../fixtures/mkcvmfs"

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

@test "mkcvmfs --help documents the options and exit codes" {
  run "$MKCVMFS" --help
  [ "$status" -eq 0 ]
  [[ $output == *--out* && $output == *--repos* && $output == *--size-mb* && $output == *--force* ]]
  [[ $output == *"Exit codes"* ]]
}

@test "mkcvmfs: a bad option or repository is a usage error (exit 2)" {
  run "$MKCVMFS" --no-such-option
  [ "$status" -eq 2 ]
  run "$MKCVMFS" --out "$BATS_TEST_TMPDIR/x" --repos cms.cern.ch
  [ "$status" -eq 2 ]
  [[ $output == *"unknown repository cms.cern.ch"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/x" ]
  run "$MKCVMFS" --size-mb -3
  [ "$status" -eq 2 ]
}

@test "alice.cern.ch: every architecture has Modules, Packages and the toolchain area" {
  local a=$FIX/alice.cern.ch arch
  for arch in el9-x86_64 el7-x86_64; do
    [ -f "$a/$arch/Modules/modulefiles/BASE/1.0" ]
    [ -f "$a/$arch/Modules/modulefiles/AliPhysics/vAN-20201018_ROOT6-1" ]
    [ -x "$a/$arch/Packages/AliPhysics/vAN-20201018_ROOT6-1/bin/aliphysics-check" ]
    [ -f "$a/$arch/Packages/AliPhysics/vAN-20201018_ROOT6-1/etc/modulefiles/AliPhysics" ]
    [ -L "$a/$arch/Modules/modulefiles/grid-base-packages/default" ]
    [ -f "$a/$arch/Modules/modulefiles/grid-base-packages/default" ] # the link resolves
  done
  [ -f "$a/el8-x86_64/Modules/modulefiles/AliPhysics/vAN-20230301_ROOT6-1" ]
  [ -d "$a/x86_64-2.6-gnu-4.1.2/Modules" ] # alienv refuses to run without it
  [ -L "$a/etc/toolchain/modulefiles/el9-x86_64/Toolchain/GCC-v13.2.0" ]
  [ -f "$a/etc/toolchain/modulefiles/el9-x86_64/Toolchain/GCC-v13.2.0" ]
  [ -f "$a/el9-x86_64/Modules/modulefiles/O2Physics/daily-20250401-0000-1" ]
  [ -f "$a/el9-x86_64/Modules/modulefiles/AliPhysics/vAN-20250401_ROOT6-1" ]
  [ -f "$a/el9-x86_64/Modules/modulefiles/AliPhysics/vAN-20250402_ROOT6-1" ]
  # an old tag published for el7 only
  [ -f "$a/el7-x86_64/Modules/modulefiles/AliPhysics/vAN-20190101_ROOT6-1" ]
  [ ! -e "$a/el9-x86_64/Modules/modulefiles/AliPhysics/vAN-20190101_ROOT6-1" ]
  [ -x "$a/bin/alienv" ]
}

@test "alice.cern.ch: programs and libraries are ELF with DT_NEEDED across packages and no rpath" {
  local p=$FIX/alice.cern.ch/el9-x86_64/Packages
  run readelf -d "$p/AliPhysics/vAN-20201018_ROOT6-1/bin/aliphysics-check"
  [ "$status" -eq 0 ]
  [[ $output == *"[libPWGPP.so]"* && $output == *"[libSTEERBase.so]"* ]]
  [[ $output == *"[libCore.so]"* && $output == *"[libgcctoolchain.so]"* ]]
  [[ $output != *RPATH* && $output != *RUNPATH* ]]
  run readelf -d "$p/AliRoot/v5-09-59-1/lib/libSTEERBase.so"
  [[ $output == *"[libCore.so]"* ]]
  [[ $output != *RPATH* && $output != *RUNPATH* ]]
}

@test "module load AliPhysics sets the ALICE environment and aliphysics-check runs" {
  local code
  code=$(load_code el9-x86_64 AliPhysics/vAN-20201018_ROOT6-1)
  [[ $code != *"test 0 = 1"* ]]
  eval "$code"
  local p=$FIX/alice.cern.ch/el9-x86_64/Packages
  [ "$ALICE_PHYSICS" = "$p/AliPhysics/vAN-20201018_ROOT6-1" ]
  [ "$ALICE_ROOT" = "$p/AliRoot/v5-09-59-1" ]
  [ "$ROOTSYS" = "$p/ROOT/v6-20-08-alice1-1" ]
  [ "$BASEDIR" = "$p" ]
  [ "$ALIPHYSICS_VERSION" = vAN-20201018_ROOT6-1 ]
  # off /cvmfs GCC-Toolchain's modulefile falls back on its own revision (alidist gcc-toolchain.sh)
  [[ :$LD_LIBRARY_PATH: == *":$p/GCC-Toolchain/v13.2.0-alice1-1/lib64:"* ]]
  [[ :$ROOT_INCLUDE_PATH: == *":$p/AliPhysics/vAN-20201018_ROOT6-1/include:"* ]]
  [ "$(command -v aliphysics-check)" = "$p/AliPhysics/vAN-20201018_ROOT6-1/bin/aliphysics-check" ]
  run aliphysics-check
  [ "$status" -eq 0 ]
  [[ $output == *"aliphysics-check: OK AliPhysics vAN-20201018_ROOT6-1, all 7 libraries answered"* ]]
  [[ $output == *"libSTEERBase.so: AliRoot/v5-09-59-1"* ]]
  [[ $output == *"libgcctoolchain.so: GCC-Toolchain/v13.2.0-alice1-1"* ]]
  run root-config --version
  [ "$status" -eq 0 ]
  [ "$output" = "6.20/08" ]
  run aliroot
  [ "$status" -eq 0 ]
  [[ $output == *"aliroot: OK AliRoot v5-09-59-1"* ]]
}

@test "the user's way: module use + module load through the modules shell init" {
  local init=/usr/share/modules/init/bash
  [ -f "$init" ]
  # shellcheck disable=SC2016 # expanded by the inner bash
  run env -i HOME="$BATS_TEST_TMPDIR" PATH=/usr/bin:/bin bash --norc -c '
    source "$1" && module use "$2" && module load AliPhysics/vAN-20201018_ROOT6-1 &&
      echo "PHYS=$ALICE_PHYSICS" && aliphysics-check' _ "$init" "$FIX/alice.cern.ch/el9-x86_64/Modules/modulefiles"
  [ "$status" -eq 0 ]
  [[ $output == *"PHYS=$FIX/alice.cern.ch/el9-x86_64/Packages/AliPhysics/vAN-20201018_ROOT6-1"* ]]
  [[ $output == *"aliphysics-check: OK AliPhysics vAN-20201018_ROOT6-1, all 7 libraries answered"* ]]
}

@test "aliphysics-check fails to load without AliRoot's lib directory on LD_LIBRARY_PATH" {
  eval "$(load_code el9-x86_64 AliPhysics/vAN-20201018_ROOT6-1)"
  local drop=$FIX/alice.cern.ch/el9-x86_64/Packages/AliRoot/v5-09-59-1/lib
  local kept
  kept=$(tr : '\n' <<<"$LD_LIBRARY_PATH" | grep -vxF "$drop" | paste -sd:)
  [ "$kept" != "$LD_LIBRARY_PATH" ]
  LD_LIBRARY_PATH=$kept run -127 aliphysics-check
  [[ $output == *"error while loading shared libraries: libSTEERBase.so"* ]]
}

@test "off /cvmfs the toolchain indirection is not taken: no Toolchain/ module, no grid-base-packages" {
  local mp="$FIX/alice.cern.ch/etc/toolchain/modulefiles/el9-x86_64:$FIX/alice.cern.ch/el9-x86_64/Modules/modulefiles"
  MODULEPATH=$mp run modcmd bash load AliPhysics/vAN-20201018_ROOT6-1
  [[ $output != *"test 0 = 1"* ]]
  [[ $output == *GCC-Toolchain/v13.2.0-alice1-1* ]]
  [[ $output != *Toolchain/GCC-v13.2.0* && $output != *grid-base-packages* ]]
}

@test "the toolchain link points at the newest GCC-Toolchain modulefile, as link_latest_gcc.sh makes it" {
  run readlink "$FIX/alice.cern.ch/etc/toolchain/modulefiles/el9-x86_64/Toolchain/GCC-v13.2.0"
  [ "$output" = "../../../../../el9-x86_64/Modules/modulefiles/GCC-Toolchain/v13.2.0-alice1-2" ]
  run readlink "$FIX/alice.cern.ch/el9-x86_64/Modules/modulefiles/grid-base-packages/default"
  [ "$output" = "v1-1" ]
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
  [ "$status" -eq 0 ]
  [[ $output == ok* ]]
  eval "$(load_code el9-x86_64 O2Physics/daily-20250401-0000-1)"
  run o2-analysis-check
  [ "$status" -eq 0 ]
  [[ $output == *"o2-analysis-check: OK O2Physics daily-20250401-0000-1, all 6 libraries answered"* ]]
}

@test "alienv printenv and setenv load VO_ALICE@ tags; el7-only tags fall back to el7" {
  local alienv=$FIX/alice.cern.ch/bin/alienv
  run "$alienv" printenv VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1
  [ "$status" -eq 0 ]
  [[ $output == *"ALICE_PHYSICS=$FIX/alice.cern.ch/el9-x86_64/Packages/AliPhysics/vAN-20201018_ROOT6-1;"* ]]
  run "$alienv" setenv VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1 -c aliphysics-check
  [ "$status" -eq 0 ]
  [[ $output == *"aliphysics-check: OK AliPhysics vAN-20201018_ROOT6-1"* ]]
  run "$alienv" setenv VO_ALICE@AliPhysics::vAN-20190101_ROOT6-1 -c aliphysics-check
  [ "$status" -eq 0 ]
  [[ $output == *"OK AliPhysics vAN-20190101_ROOT6-1"* ]]
  [[ $output == *"libgcctoolchain.so: GCC-Toolchain/v7.3.0-alice2-1"* ]]
  run "$alienv" printenv VO_ALICE@AliPhysics::vNOPE-1
  [ "$status" -eq 1 ]
  [[ $output == *"cannot load AliPhysics/vNOPE-1 on any platform"* ]]
  run "$alienv" frobnicate
  [ "$status" -eq 2 ]
  # alienv enter: an interactive shell (here fed from stdin) with the tag loaded
  # shellcheck disable=SC2016 # expanded by the entered shell
  run env -i HOME="$BATS_TEST_TMPDIR" PATH=/usr/bin:/bin SHELL=/bin/bash \
    "$alienv" enter VO_ALICE@O2Physics::daily-20250401-0000-1 <<<'echo "O2P=$O2PHYSICS_ROOT"'
  [ "$status" -eq 0 ]
  [[ $output == *"O2P=$FIX/alice.cern.ch/el9-x86_64/Packages/O2Physics/daily-20250401-0000-1"* ]]
}

@test "a second run is a no-op; --force rebuilds; a changed generator rebuilds" {
  local before
  before=$(inode "$FIX/alice.cern.ch")
  run "$MKCVMFS" --out "$FIX"
  [ "$status" -eq 0 ]
  [[ $output == *"alice.cern.ch: up to date"* && $output == *"sft.cern.ch: up to date"* ]]
  [ "$(inode "$FIX/alice.cern.ch")" = "$before" ]
  before=$(inode "$FIX/sft.cern.ch")
  run "$MKCVMFS" --out "$FIX" --repos sft.cern.ch --force
  [ "$status" -eq 0 ]
  [[ $output == *"sft.cern.ch: generated"* ]]
  [ "$(inode "$FIX/sft.cern.ch")" != "$before" ]
  before=$(inode "$FIX/sft.cern.ch")
  # a modified copy of the generator: its stamp no longer matches
  cp -a "$BATS_TEST_DIRNAME/../fixtures" "$BATS_TEST_TMPDIR/gen"
  printf '\n# changed\n' >>"$BATS_TEST_TMPDIR/gen/cvmfsfix/lcg_catalog.py"
  run "$BATS_TEST_TMPDIR/gen/mkcvmfs" --out "$FIX" --repos sft.cern.ch
  [ "$status" -eq 0 ]
  [[ $output == *"sft.cern.ch: generated"* ]]
  [ "$(inode "$FIX/sft.cern.ch")" != "$before" ]
  [ -z "$(compgen -G "$FIX/.sft.cern.ch.mkcvmfs-tmp-*")" ]
  # back to this generator for the other tests
  "$MKCVMFS" --out "$FIX" --repos sft.cern.ch --quiet
}

@test "a failing build leaves the previous tree intact and no temporary directory" {
  local before fake=$BATS_TEST_TMPDIR/bin
  before=$(inode "$FIX/alice.cern.ch")
  mkdir -p "$fake"
  printf '#!/bin/sh\ncase " $* " in *" -shared "*) echo "fake gcc: broken" >&2; exit 1 ;; esac\nexec /usr/bin/gcc "$@"\n' >"$fake/gcc"
  chmod +x "$fake/gcc"
  PATH="$fake:$PATH" run "$MKCVMFS" --out "$FIX" --repos alice.cern.ch --force
  [ "$status" -eq 1 ]
  [[ $output == *"fake gcc: broken"* ]]
  [ "$(inode "$FIX/alice.cern.ch")" = "$before" ]
  [ -x "$FIX/alice.cern.ch/el9-x86_64/Packages/AliPhysics/vAN-20201018_ROOT6-1/bin/aliphysics-check" ]
  [ -z "$(compgen -G "$FIX/.alice.cern.ch.mkcvmfs-tmp-*")" ]
}

@test "mkcvmfs refuses to replace a directory it did not create (exit 4); an empty one is fine" {
  local out=$BATS_TEST_TMPDIR/out
  mkdir -p "$out/sft.cern.ch"
  echo precious >"$out/sft.cern.ch/data"
  run "$MKCVMFS" --out "$out" --repos sft.cern.ch
  [ "$status" -eq 4 ]
  [[ $output == *"did not create it"* ]]
  [ "$(cat "$out/sft.cern.ch/data")" = precious ]
  [ -z "$(compgen -G "$out/.sft.cern.ch.mkcvmfs-tmp-*")" ]
  rm "$out/sft.cern.ch/data"
  # an empty directory (a bind-mount point, say) is replaced
  run "$MKCVMFS" --out "$out" --repos sft.cern.ch --quiet
  [ "$status" -eq 0 ]
  [ -f "$out/sft.cern.ch/.afkit-fixture.json" ]
  # leftovers of an interrupted run (marker inside) are removed; look-alikes without it are not
  mkdir "$out/.sft.cern.ch.mkcvmfs-tmp-stale" "$out/.sft.cern.ch.mkcvmfs-tmp-foreign"
  touch "$out/.sft.cern.ch.mkcvmfs-tmp-stale/.mkcvmfs-partial"
  run "$MKCVMFS" --out "$out" --repos sft.cern.ch --quiet --force
  [ "$status" -eq 0 ]
  [ ! -e "$out/.sft.cern.ch.mkcvmfs-tmp-stale" ]
  [ -d "$out/.sft.cern.ch.mkcvmfs-tmp-foreign" ]
  # a file in the way is refused too
  echo precious >"$out/alice.cern.ch"
  run "$MKCVMFS" --out "$out" --repos alice.cern.ch
  [ "$status" -eq 4 ]
  [ "$(cat "$out/alice.cern.ch")" = precious ]
}

@test "sft.cern.ch: releases, the LCG_105 manifest and a view of absolute links into the hashed installs" {
  local lcg=$FIX/sft.cern.ch/lcg plat=x86_64-el9-gcc13-opt
  local view=$lcg/views/LCG_105/$plat
  compgen -G "$lcg/releases/ROOT/6.30.02-*/$plat/lib/libCore.so"
  compgen -G "$lcg/releases/gcc/13.1.0-*/x86_64-el9/lib64/libgcctoolchain.so"
  [ -L "$view/bin/root.exe" ] && [ ! -L "$view/bin" ] # real directories, per-file links
  local target
  target=$(readlink "$view/lib/libCore.so")
  [[ $target == /cvmfs/sft.cern.ch/lcg/releases/ROOT/6.30.02-*/$plat/lib/libCore.so ]]
  [ -f "$FIX/sft.cern.ch/${target#/cvmfs/sft.cern.ch/}" ]
  [ "$(readlink "$lcg/releases/gcc/13.1.0")" = "$(basename "$(compgen -G "$lcg/releases/gcc/13.1.0-*")")" ]
  target=$(readlink "$view/bin/root.exe")
  run readelf -d "$FIX/sft.cern.ch/${target#/cvmfs/sft.cern.ch/}"
  [[ $output == *"[libCore.so]"* && $output == *"[libXrdCl.so]"* && $output == *"[libgcctoolchain.so]"* ]]
  [[ $output != *RPATH* && $output != *RUNPATH* ]]
  # releases the view does not use
  compgen -G "$lcg/releases/ROOT/6.28.10-*/$plat/lib/libCore.so"
  compgen -G "$lcg/releases/Geant4/11.2.0-*/$plat/lib/libG4run.so"
}

@test "sft.cern.ch: the manifest lists exactly the view's packages, with hashes and paths that resolve" {
  local rel=$FIX/sft.cern.ch/lcg/releases/LCG_105 plat=x86_64-el9-gcc13-opt
  local man=$rel/LCG_externals_$plat.txt view=$FIX/sft.cern.ch/lcg/views/LCG_105/$plat
  [ "$(sed -n 1p "$man")" = "PLATFORM: $plat" ]
  [ "$(sed -n 2p "$man")" = "VERSION: 105" ]
  [ "$(sed -n 3p "$man")" = "COMPILER: gcc;13.1.0" ]
  local listed linked name hash version dir
  listed=$(tail -n +4 "$man" | awk -F'; ' '{print $1 "-" $2}' | sort)
  linked=$(find "$view/bin" "$view/lib" "$view/include" -type l -exec readlink {} + |
    sed -E 's|^/cvmfs/sft.cern.ch/lcg/releases/([^/]+)/[^/]+-([0-9a-f]{5})/.*|\1-\2|' | sort -u)
  [ -n "$listed" ]
  [ "$listed" = "$linked" ]
  while IFS=' ' read -r name hash version dir _; do
    [ -d "$rel/$dir" ]
    [[ $(readlink "$rel/$dir") == */$name/$version-$hash/$plat ]]
  done < <(tail -n +4 "$man" | sed 's/; /;/g' | tr ';' ' ')
  run grep -c '^ROOT; ' "$man"
  [ "$output" = 1 ]
  run grep '6.28.10' "$man"
  [ "$status" -eq 1 ]
}

@test "sft.cern.ch: off /cvmfs the view's setup.sh finds itself (BASH_ARGV) but not its absolute links" {
  local view=$FIX/sft.cern.ch/lcg/views/LCG_105/x86_64-el9-gcc13-opt
  # shellcheck disable=SC2016 # expanded by the inner bash
  run env -i HOME="$HOME" PATH=/usr/bin:/bin bash -c \
    'source "$1" && echo "V=$LCG_VERSION P=${PATH%%:*} R=${ROOTSYS:-unset}"' _ "$view/setup.sh"
  [ "$status" -eq 0 ]
  [ "$output" = "V=105 P=$view/bin R=unset" ] # as on a host without /cvmfs/sft.cern.ch
  # without the gcc release (sourced by setup.sh, not part of the view) nothing loads
  local rootexe
  rootexe=$(compgen -G "$FIX/sft.cern.ch/lcg/releases/ROOT/6.30.02-*/x86_64-el9-gcc13-opt/bin/root.exe")
  run -127 env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="${rootexe%/bin/root.exe}/lib" "$rootexe"
  [[ $output == *"error while loading shared libraries:"* ]]
}

@test "--size-mb pads the fixture to about the requested size with incompressible data" {
  local out=$BATS_TEST_TMPDIR/big bytes pad
  run "$MKCVMFS" --out "$out" --repos sft.cern.ch --size-mb 24
  [ "$status" -eq 0 ]
  bytes=$(find "$out/sft.cern.ch" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
  ((bytes >= 24 * 1024 * 1024 * 95 / 100 && bytes <= 24 * 1024 * 1024 * 105 / 100))
  pad=$(find "$out/sft.cern.ch" -path '*afkit-fixture-padding*' -type f | head -n 1)
  [ -n "$pad" ]
  (($(gzip -1 -c "$pad" | wc -c) >= $(stat -c %s "$pad") * 99 / 100))
  # the programs are unaffected
  local libs
  libs=$(find "$out/sft.cern.ch/lcg/releases" -mindepth 4 -maxdepth 4 -name 'lib*' -type d | paste -sd:)
  LD_LIBRARY_PATH=$libs run "$(compgen -G "$out/sft.cern.ch/lcg/releases/ROOT/6.30.02-*/x86_64-el9-gcc13-opt/bin/root.exe")"
  [ "$status" -eq 0 ]
}

@test "generation is reproducible: another DIR gets byte-identical files" {
  local other=$BATS_TEST_TMPDIR/again
  "$MKCVMFS" --out "$other" --repos sft.cern.ch --quiet
  sums() { (cd "$1" && find . -type f ! -name .afkit-fixture.json -exec sha256sum {} + | sort -k2); }
  run diff <(sums "$FIX/sft.cern.ch") <(sums "$other/sft.cern.ch")
  [ "$status" -eq 0 ]
  [ "$(sums "$other/sft.cern.ch" | grep -c 'lib/lib.*\.so$')" -gt 5 ]
}

@test "--closure-gib grows the adjacent dailies with compressible real bytes and user.hash, in the scale directory" {
  unset AFKIT_CVMFS_SCALE AFKIT_CVMFS_FIXTURE
  export XDG_CACHE_HOME=$BATS_TEST_TMPDIR/cache
  run "$MKCVMFS" --closure-gib 0.04 -q
  [ "$status" -eq 0 ]
  [ ! -e "$XDG_CACHE_HOME/afkit/cvmfs" ] # never the shared default fixture
  local repo=$XDG_CACHE_HOME/afkit/cvmfs-scale/alice.cern.ch pkgs lib size packed
  pkgs=$repo/el9-x86_64/Packages
  lib=$(find "$pkgs/ROOT/v6-32-06-alice1-3/lib" -name '*.pcm' -size +64k | head -n 1)
  [ -n "$lib" ]
  # compresses like binaries: neither random (ratio ~1) nor zeros (ratio ~0)
  size=$(stat -c %s "$lib") packed=$(gzip -c "$lib" | wc -c)
  ((packed < size * 80 / 100 && packed > size * 10 / 100))
  [ "$(python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "user.hash").decode())' "$lib")" = "$(sha1sum <"$lib" | cut -c1-40)" ]
  # the AliRoot rebuild: mostly the same headers (sources), other libraries
  local same=0 all=0 header
  for header in "$pkgs"/AliRoot/v5-09-59l-1/include/*/*.h; do
    all=$((all + 1))
    ! cmp -s "$header" "${header/v5-09-59l-1/v5-09-59l-2}" || same=$((same + 1))
  done
  ((all > 10 && same * 4 > all * 3))
  run ! cmp -s "$pkgs/AliRoot/v5-09-59l-1/lib/libCore0.so" "$pkgs/AliRoot/v5-09-59l-2/lib/libCore0.so"
  [ -n "$(find "$pkgs/GCC-Toolchain/v13.2.0-alice1-1/bin" -links +1 -type f | head -n 1)" ]
  [ -n "$(find "$pkgs/GCC-Toolchain/v13.2.0-alice1-1/lib64" -type l | head -n 1)" ]
  # the new daily loads with the real modulecmd, on the AliRoot rebuild
  MODULEPATH="$repo/el9-x86_64/Modules/modulefiles" run modcmd bash load AliPhysics/vAN-20250403_ROOT6-1
  [ "$status" -eq 0 ]
  [[ $output == *"AliRoot/v5-09-59l-2"* ]]
}
