#!/usr/bin/env bash
# afkit's benchmark clients against reference tools, same machine, same run (run in the testbed).
set -euo pipefail
AFKIT_PROG=bench_clients
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"

usage() {
  cat <<USAGE
Usage: bench/bench_clients.sh [--size SIZE] [--repeat N] [--out FILE]

Compares, on the same file, block size and access pattern (best and median of N alternating runs):
  afkit bench read   vs fio (psync) from the page cache: 8 MiB sequential, 1 MiB random, 1 MiB strided
  afkit bench read   vs fio with the file's pages dropped (posix_fadvise DONTNEED on both sides):
                     8 MiB sequential, 1 MiB random
  afkit bench read   vs a bare XRootD Python-bindings loop over root:// on loopback
  afkit bench read   vs xrdcp to /dev/null (informative: xrdcp pipelines its reads)
  afkit bench analysis vs a bare uproot.iterate loop over the same branch (events/s)
and prints the ratios (goals: >= 0.98 against fio and the bindings loop, >= 0.97 against uproot).

Runs inside the testbed: scripts/testbed run -- bench/bench_clients.sh
Needs: fio, xrdcp, the XRootD Python bindings, the XRootD origin of \$AFKIT_XROOTD_URL serving
\$AFKIT_XROOTD_DATA. The files it makes live in a directory of its own there and are removed.

Options:
  --size SIZE    size of the random test file (default 1GiB)
  --repeat N     runs per tool and comparison (default 7)
  --out FILE     also write the JSON lines of the comparisons to FILE
Exit codes: 0 ok (ratios are reported, not enforced), 2 usage, 3 prerequisite missing.
USAGE
}

main() {
  local size=1GiB repeat=7 out=""
  while (($#)); do
    case $1 in
      -h | --help) usage; return 0 ;;
      --size) size=${2:?--size needs a value}; shift ;;
      --repeat) repeat=${2:?--repeat needs a value}; shift ;;
      --out) out=${2:?--out needs a value}; shift ;;
      *) die "$AFKIT_EX_USAGE" "unknown option '$1'" "see --help" ;;
    esac
    shift
  done
  [[ $repeat =~ ^[1-9][0-9]*$ ]] || die "$AFKIT_EX_USAGE" "--repeat must be a positive integer, got '$repeat'"
  need_cmd fio "run it in the testbed: scripts/testbed run -- bench/bench_clients.sh"
  need_cmd xrdcp "run it in the testbed: scripts/testbed run -- bench/bench_clients.sh"
  local url=${AFKIT_XROOTD_URL:-} data=${AFKIT_XROOTD_DATA:-}
  [[ -n $url && -d $data ]] ||
    die "$AFKIT_EX_PREREQ" "AFKIT_XROOTD_URL / AFKIT_XROOTD_DATA not set or missing" \
      "run it in the testbed: scripts/testbed run -- bench/bench_clients.sh"
  python3 -c 'import XRootD' 2>/dev/null ||
    die "$AFKIT_EX_PREREQ" "the XRootD Python bindings are missing" "apt install python3-xrootd"

  local name work
  name="afkit-bench-clients-$$"
  work="$data/$name"
  mkdir "$work"
  # shellcheck disable=SC2064  # expand now: remove exactly the directory made above
  trap "rm -rf -- '$work'" EXIT
  log "generating a $size random file and a 100 MB AOD-like ROOT file in $work"
  python3 -m afkit bench gen random --size "$size" --outdir "$work" >/dev/null
  python3 -m afkit bench gen aod --size 100MB --outdir "$work" >/dev/null
  log "measuring ($repeat runs each)"
  local -a args=(--file "$work/random-000.bin" --url "$url//$name/random-000.bin"
    --root-file "$work/aod-000.root" --tree Events --branch Track_pt --repeat "$repeat")
  if [[ -n $out ]]; then
    python3 "$(dirname "${BASH_SOURCE[0]}")/bench_clients_measure.py" "${args[@]}" | tee "$out"
  else
    python3 "$(dirname "${BASH_SOURCE[0]}")/bench_clients_measure.py" "${args[@]}"
  fi
}

main "$@"
