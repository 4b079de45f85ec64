#!/usr/bin/env bash
# The analysis payloads side by side with rootreadspeed, one thread, page cache and root:// (in the testbed).
set -euo pipefail
AFKIT_PROG=bench/analysis
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"

ALICE=/cvmfs/alice.cern.ch/el9-x86_64/Packages

usage() {
  cat <<USAGE
Usage: bench/analysis.sh [--size SIZE] [--files N] [--rounds N] [--branch B ...] [--out FILE]
                         [--input DIR --tree PATTERN --branch B ...]

For the same files and branches, with one thread, from the page cache (local path) and over
root:// (the testbed's XRootD origin), medians of N rounds (the tools alternate):
  rootreadspeed   ROOT's own tool, --threads 1 (the anchor); its verdict I/O- / decompression-bound
  afkit root      afkit bench analysis --engine root (when this afkit has it)
  afkit uproot    afkit bench analysis
  bare uproot     a bare uproot.iterate loop (the reference of the uproot payload)
and prints events/s, Mbit/s, the verdicts (afkit's: afkit.campaign.bottleneck) and the ratios
against the goals: afkit root >= 0.95 x rootreadspeed, afkit uproot >= 0.97 x bare uproot.

Runs inside the testbed: scripts/testbed run -- bench/analysis.sh
ROOT is the CVMFS fixture's tag's (ROOT 6.40.00 with its XRootD and GCC toolchain, as its
modulefiles set them); override with \$AFKIT_BENCH_ROOTSYS and \$AFKIT_BENCH_TOOLCHAIN.

Options:
  --size SIZE    size of each AOD-like input file (default 300MB)
  --files N      number of input files (default 2)
  --rounds N     rounds per tool and location (default 3)
  --branch B     branch to read (repeatable; default Track_pt Track_eta Track_phi)
  --out FILE     also write the JSON lines to FILE
  --input DIR    measure the *.root files of DIR instead (copied into the origin's data directory),
                 e.g. AO2D written by 'afkit bench gen ao2d'; needs --branch
  --tree PATTERN tree name or pattern (default Events), e.g. 'DF_*/O2track': every matching tree
                 (rootreadspeed gets one --files/--trees entry per tree)
Exit codes: 0 ok (ratios are reported, not enforced), 2 usage, 3 prerequisite missing.
USAGE
}

main() {
  local size=300MB nfiles=2 rounds=3 out="" input="" tree=Events
  local -a branches=()
  while (($#)); do
    case $1 in
      -h | --help) usage; return 0 ;;
      --size) size=${2:?--size needs a value}; shift ;;
      --files) nfiles=${2:?--files needs a value}; shift ;;
      --rounds) rounds=${2:?--rounds needs a value}; shift ;;
      --branch) branches+=("${2:?--branch needs a value}"); shift ;;
      --out) out=${2:?--out needs a value}; shift ;;
      --input) input=${2:?--input needs a directory}; shift ;;
      --tree) tree=${2:?--tree needs a name or pattern}; shift ;;
      *) die "$AFKIT_EX_USAGE" "unknown option '$1'" "see --help" ;;
    esac
    shift
  done
  [[ $rounds =~ ^[1-9][0-9]*$ ]] || die "$AFKIT_EX_USAGE" "--rounds must be a positive integer, got '$rounds'"
  [[ $nfiles =~ ^[1-9][0-9]*$ ]] || die "$AFKIT_EX_USAGE" "--files must be a positive integer, got '$nfiles'"
  if [[ -n $input ]]; then
    [[ -d $input ]] || die "$AFKIT_EX_NOT_FOUND" "--input: no directory '$input'"
    ((${#branches[@]})) || die "$AFKIT_EX_USAGE" "--input needs the branches to read (--branch B ...)"
  fi
  ((${#branches[@]})) || branches=(Track_pt Track_eta Track_phi)
  local url=${AFKIT_XROOTD_URL:-} data=${AFKIT_XROOTD_DATA:-}
  [[ -n $url && -d $data ]] ||
    die "$AFKIT_EX_PREREQ" "AFKIT_XROOTD_URL / AFKIT_XROOTD_DATA not set or missing" \
      "run it in the testbed: scripts/testbed run -- bench/analysis.sh"
  local rootsys=${AFKIT_BENCH_ROOTSYS:-$ALICE/ROOT/v6-40-00-alice1-1}
  local toolchain=${AFKIT_BENCH_TOOLCHAIN:-$ALICE/GCC-Toolchain/v12.2.0-alice1-2}
  [[ -x $rootsys/bin/rootreadspeed && -x $toolchain/bin/c++ ]] ||
    die "$AFKIT_EX_PREREQ" "no rootreadspeed in $rootsys/bin or no c++ in $toolchain/bin" \
      "run it in the testbed (the CVMFS fixture at /cvmfs: tests/fixtures/mkcvmfs) or set AFKIT_BENCH_ROOTSYS / AFKIT_BENCH_TOOLCHAIN"
  # What the tag's modulefiles set (ROOT, XRootD, GCC-Toolchain): Cling needs the compiler's headers.
  export ROOTSYS=$rootsys PATH=$rootsys/bin:$toolchain/bin:$PATH
  export LD_LIBRARY_PATH=$rootsys/lib:$ALICE/XRootD/v5.9.2-1/lib:$toolchain/lib:$toolchain/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

  local name work
  name="afkit-bench-analysis-$$"
  work="$data/$name"
  mkdir "$work"
  # shellcheck disable=SC2064  # expand now: remove exactly the directory made above
  trap "rm -rf -- '$work'" EXIT
  local total
  if [[ -n $input ]]; then
    log "copying the ROOT files of $input into $work"
    cp -- "$input"/*.root "$work"/
  else
    total=$(python3 -c "import sys; from afkit.bench.units import parse_size; print(parse_size(sys.argv[1]) * int(sys.argv[2]))" "$size" "$nfiles")
    log "generating $nfiles AOD-like ROOT file(s) of $size in $work"
    python3 -m afkit bench gen aod --size "$total" --files "$nfiles" --outdir "$work" >/dev/null
  fi
  local -a files=("$work"/*.root) args
  args=(--files "${files[@]}" --data "$data" --url "$url" --tree "$tree" --rounds "$rounds")
  local b
  for b in "${branches[@]}"; do args+=(--branch "$b"); done
  log "measuring ($rounds rounds per tool and location; ROOT $(root-config --version))"
  if [[ -n $out ]]; then
    python3 "$(dirname "${BASH_SOURCE[0]}")/analysis_measure.py" "${args[@]}" | tee "$out"
  else
    python3 "$(dirname "${BASH_SOURCE[0]}")/analysis_measure.py" "${args[@]}"
  fi
}

main "$@"
