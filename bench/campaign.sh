#!/usr/bin/env bash
# Campaign benchmarks: planning time of a 10,000-job campaign and per-job executor overhead.
set -euo pipefail
AFKIT_PROG=bench/campaign
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"

REPO=$(afkit_repo_root)

usage() {
  cat <<USAGE
Usage: bench/campaign.sh [--jobs N] [--planning-only] [--sif SIF]

1. planning: 'snakemake -n' of an afkit campaign with N jobs (default 10000) against a bare
   one-rule Snakefile and the same jobs written by hand, same machine, same run, the median of 5
   interleaved rounds (goals: at most 1.4x the one-rule file, 1.1x the same jobs by hand);
2. executor overhead (in the testbed): per executor (local, htcondor, slurm), a campaign of 5
   identical small jobs run one at a time: wall time per job against the job wrapper's and the
   payload's own time.
Prints JSON lines. The image for 2. is \$AFKIT_BENCH_SIF or 'scripts/mkbase bench'.
Exit codes: 0 ok (numbers are reported, not enforced), 1 a run failed, 2 usage, 3 testbed missing.
USAGE
}

main() {
  local jobs=10000 planning_only=0 sif=${AFKIT_BENCH_SIF:-}
  while (($#)); do
    case $1 in
      -h | --help) usage; return 0 ;;
      --jobs) jobs=${2:?--jobs needs a value}; shift ;;
      --planning-only) planning_only=1 ;;
      --sif) sif=${2:?--sif needs a value}; shift ;;
      *) die "$AFKIT_EX_USAGE" "unknown option '$1'" "see --help" ;;
    esac
    shift
  done
  log "planning: $jobs jobs"
  "$(afkit_python)" "$REPO/bench/campaign_planning.py" --jobs "$jobs" 2>/dev/null
  ((planning_only)) && return 0
  [[ -n $sif ]] || sif=$("$REPO/scripts/mkbase" bench | tail -n1)
  log "executor overhead (testbed), image $sif"
  "$REPO/scripts/testbed" up >&2
  "$REPO/scripts/testbed" run -- python3 "$REPO/bench/campaign_overhead.py" --sif "$sif"
}

main "$@"
