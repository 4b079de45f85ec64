#!/usr/bin/env bash
# Benchmark of the image builder's staging: closure size, staging vs cp -a, incremental builds.
set -euo pipefail
AFKIT_PROG=bench/image.sh
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"

REPO=$(afkit_repo_root)

usage() {
  cat <<'USAGE'
Usage: bench/image.sh [--size-mb N] [--runs N] [--json FILE] [--workdir DIR] [--build]
       bench/image.sh --scale GIB [--runs N] [--json FILE]
       bench/image.sh --real-root [--runs N] [--json FILE]

Generates an alice.cern.ch fixture padded to about N MiB (default 256) with
tests/fixtures/mkcvmfs, then measures on this host (no Apptainer needed), median of --runs (default 5, the cases interleaved):
  1. closure bytes of AliPhysics/vAN-20250401_ROOT6-1 / bytes of the whole el9 Packages tree
  2. afkit staging (copy + sha256 into the store + hard links) / cp -a of the same closure
  3. staging the adjacent daily vAN-20250402 with the store of vAN-20250401 / without it
Prints the ratios (and writes them as JSON with --json). Both tools read from the page cache (the
fixture was just written), so the comparison is CPU and metadata cost, not disk speed.
--build: also time whole 'apptainer build's inside the testbed (scripts/testbed up first): the
adjacent daily built in a fresh directory vs after the previous daily (one build each; the
squashfs step is not incremental). The fixture then goes under <repo>/build (visible inside).
--workdir DIR: where the padded fixture and the scratch copies go (default: a temporary
directory under ${TMPDIR:-/tmp}, or under <repo>/build with --build; removed at the end).
--scale GIB: the image build at real scale (what 'make bench image' runs, GIB 4.5): generates the
scale fixture (tests/fixtures/mkcvmfs --closure-gib GIB, cached in ~/.cache/afkit/cvmfs-scale),
then inside the testbed, with that fixture bound at /cvmfs, median of --runs (default 3) rounds of:
cp -a of the closure of AliPhysics/vAN-20250402_ROOT6-1, mksquashfs of that copy (Apptainer's
options), afkit staging, afkit image build --layers (staging + image), and the adjacent daily
vAN-20250403 (AliPhysics and AliRoot changed) built after it. Prints the scale and the ratios
staging / cp -a, whole build / (cp -a + mksquashfs), incremental / cold. Scratch in
<repo>/build/bench-image-scale (removed at the end). On ext4 without a journal no case creates
files within 370 s of removing a tree (the inode allocator scans past recently deleted inodes
there): a round removes the round before's trees before its mksquashfs, and the next round waits
out the rest.
--real-root: the image of the fixture's tag with the real ROOT (AliPhysics/vAN-20251126_ROOT6-1,
~750 MiB of closure) inside the testbed (the fixture it mounts at /cvmfs), median of --runs
(default 3) rounds of cp -a of the closure, mksquashfs of that copy and afkit image build;
prints build / (cp -a + mksquashfs) (goal <= 2). Scratch in <repo>/build/bench-image-realroot.
Exit codes: 0 ok, 1 a build failed, 2 usage, 3 prerequisite missing (gcc for the fixture, the
.venv, the testbed for --build).
USAGE
}

# scale_bench GIB RUNS JSON : the real-scale image build benchmark, inside the testbed.
scale_bench() {
  local gib=$1 runs=$2 json=$3 fixture work
  fixture=${AFKIT_CVMFS_SCALE:-$(afkit_cache_dir)/cvmfs-scale}
  log "scale fixture: about $gib GiB of closure in $fixture (generated once, then cached)"
  "$REPO/tests/fixtures/mkcvmfs" --closure-gib "$gib" --out "$fixture" -q
  if ! (cd "$REPO" && "$REPO/scripts/testbed" run -- test -d "$fixture/alice.cern.ch") >/dev/null 2>&1; then
    die "$AFKIT_EX_PREREQ" "the testbed does not see $fixture" "scripts/testbed down && scripts/testbed up"
  fi
  work=$REPO/build/bench-image-scale
  rm -rf -- "$work"
  mkdir -p "$work"
  # shellcheck disable=SC2064  # expand now
  trap "rm -rf -- '$work'" EXIT
  local -a extra=()
  # written inside the testbed (which sees the checkout, not every host path), copied out after
  [[ -z $json ]] || extra=(--json "$work/result.json")
  # A private mount namespace with the scale fixture at /cvmfs: the closure is the one a build
  # host with the repository mounted at /cvmfs resolves (the toolchain's /cvmfs branch).
  # shellcheck disable=SC2016  # expanded by the inner sh
  (cd "$REPO" && "$REPO/scripts/testbed" run -- unshare --mount -- sh -c \
    'mount --bind "$1" /cvmfs && shift && exec "$@"' sh "$fixture" \
    python3 bench/image_scale.py --work "$work" --runs "$runs" "${extra[@]}")
  [[ -z $json ]] || cp -- "$work/result.json" "$json"
}

# realroot_bench RUNS JSON : the real-ROOT image build against cp -a + mksquashfs, in the testbed.
realroot_bench() {
  local runs=$1 json=$2 work=$REPO/build/bench-image-realroot
  rm -rf -- "$work"
  mkdir -p "$work"
  # shellcheck disable=SC2064  # expand now
  trap "rm -rf -- '$work'" EXIT
  local -a extra=()
  [[ -z $json ]] || extra=(--json "$work/result.json")
  (cd "$REPO" && "$REPO/scripts/testbed" run -- python3 bench/image_realroot.py --work "$work/run" \
    --runs "$runs" "${extra[@]}")
  [[ -z $json ]] || cp -- "$work/result.json" "$json"
}

main() {
  local size=256 runs=5 json="" workdir="" builds=0 scale="" realroot=0
  while (($#)); do
    case $1 in
      -h | --help) usage; return 0 ;;
      --build) builds=1; shift; continue ;;
      --real-root) realroot=1; shift; continue ;;
      --size-mb | --runs | --json | --workdir | --scale)
        (($# >= 2)) || die "$AFKIT_EX_USAGE" "$1 needs a value" "see --help"
        case $1 in
          --size-mb) size=$2 ;;
          --runs) runs=$2 ;;
          --json) json=$2 ;;
          --workdir) workdir=$2 ;;
          --scale) scale=$2 ;;
        esac
        shift 2
        continue
        ;;
      *) die "$AFKIT_EX_USAGE" "unknown option '$1'" "see --help" ;;
    esac
  done
  [[ $size =~ ^[0-9]+$ && $runs =~ ^[1-9][0-9]*$ ]] ||
    die "$AFKIT_EX_USAGE" "--size-mb and --runs take positive whole numbers" "e.g. --size-mb 256 --runs 3"
  [[ -z $json || -d $(dirname -- "$json") ]] ||
    die "$AFKIT_EX_USAGE" "--json $json: its directory does not exist" "give a path in an existing directory"
  if ((realroot)); then
    [[ $runs != 5 ]] || runs=3 # its default
    realroot_bench "$runs" "$json"
    return
  fi
  if [[ -n $scale ]]; then
    [[ $scale =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "$AFKIT_EX_USAGE" "--scale takes a size in GiB" "e.g. --scale 4.5"
    scale_bench "$scale" "$runs" "$json"
    return
  fi
  local python
  python=$(afkit_python)
  [[ -x $python ]] || die "$AFKIT_EX_PREREQ" "no $python" "run 'make venv'"
  if ((builds)); then
    if ! (cd "$REPO" && "$REPO/scripts/testbed" run -- true) >/dev/null 2>&1; then
      die "$AFKIT_EX_PREREQ" "--build needs the running testbed" "run: scripts/testbed build && scripts/testbed up"
    fi
  fi
  local own=0
  if [[ -z $workdir ]]; then
    local parent=${TMPDIR:-/tmp}
    if ((builds)); then parent=$REPO/build; mkdir -p "$parent"; fi
    workdir=$(mktemp -d "$parent/afkit-bench-image.XXXXXX")
    own=1
    # shellcheck disable=SC2064  # expand now: the directory this run created
    trap "rm -rf -- '$workdir'" EXIT
  fi
  mkdir -p "$workdir/scratch"
  log "generating an alice.cern.ch fixture of about $size MiB in $workdir/cvmfs"
  "$REPO/tests/fixtures/mkcvmfs" --out "$workdir/cvmfs" --repos alice.cern.ch --size-mb "$size" -q
  local -a extra=()
  [[ -z $json ]] || extra=(--json "$json")
  AFKIT_CVMFS_ROOT="$workdir/cvmfs" AFKIT_BENCH_TMP="$workdir/scratch" \
    "$python" "$REPO/bench/image_bench.py" --runs "$runs" "${extra[@]}"
  if ((builds)); then
    (cd "$REPO" && "$REPO/scripts/testbed" run -- env AFKIT_CVMFS_ROOT="$workdir/cvmfs" \
      python3 bench/image_build_bench.py --work "$workdir/builds")
  fi
  ((own)) || log "kept $workdir"
}

main "$@"
