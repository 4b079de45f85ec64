#!/usr/bin/env bash
# CI functional job: test a published image with the functional campaign, against its baseline.
set -euo pipefail
AFKIT_PROG=ci/functional.sh
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"
# shellcheck source=ci/lib/ci.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ci.sh"
# shellcheck source=ci/lib/registry.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/registry.sh"

usage() {
  cat <<USAGE
Usage: ci/functional.sh --profile P --tag TAG --baseline NAME --out DIR [--published IMAGE.published]
                        [--campaign C.yaml] [--store DIR] [--fingerprint FP] [--key PUB.asc]
                        [--registry-image R] [--tolerance T]

The functional test of one image, as the scheduled pipeline runs it after the publish job:
  1. pull: the reference in IMAGE.published (written by ci/publish.sh: reference, digest, signer)
     or, without it, the tag's reference under R (\$AFKIT_REGISTRY_IMAGE, else \$CI_REGISTRY_IMAGE),
     with the job's registry credentials (as ci/publish.sh); with IMAGE.published the pulled file's
     sha256 must be the digest the publish job pushed (exit 6 otherwise: the tag moved).
  2. verify: the image must carry a valid signature by FP (--fingerprint, \$AFKIT_VERIFY_FINGERPRINT,
     else the signer recorded in IMAGE.published) with the public key PUB.asc (--key,
     \$AFKIT_VERIFY_KEY, else the runner's apptainer keyring). Unsigned, modified after signing or
     signed by another key: refused, exit 6; no job runs and the baseline is not touched.
  3. run: the campaign C.yaml (--campaign, \$AFKIT_FUNCTIONAL_CAMPAIGN, default
     workflows/config/functional.yaml) with its image replaced by the verified one
     ('afkit campaign run' in DIR); every job must succeed (exit 1 otherwise, naming them).
  4. compare: with the baseline STORE/<campaign name>/NAME/baseline (STORE: --store, else
     \$AFKIT_FUNCTIONAL_STORE: a directory on the runner host; NAME: --baseline, e.g.
     alice/aliphysics: every version of a package shares it) by
     'afkit campaign compare BASELINE RESULTS --tolerance T' (default 0.10): a cell worse or lost
     fails the job (exit 1) and the cells are named; an inconclusive cell (fewer than 3
     repetitions on a side, or noise wider than the tolerance) does not, functional.json lists it.
     No baseline yet: this run becomes it.
  5. store: a run that passed becomes the new baseline (STORE/<campaign>/NAME/runs/<time>-<pipeline>,
     the link 'baseline' moved atomically, under a lock); a failed run never does.
Results: DIR/results/<campaign>-<hash>/ (records, tables, report with the comparison section),
DIR/compare.txt, DIR/functional.json (the verdict, the image, the baseline used).

Exit codes: 0 passed (or first baseline), 1 a job failed or a cell regressed, 2 usage,
3 prerequisite missing (no store, registry unreachable or credentials refused, apptainer),
4 refused (the job token for another registry, an unsafe baseline name), 5 not found (campaign
file, record, the tag in the registry), 6 refused image (signature, digest) or invalid campaign.
USAGE
}

WORK=''
cleanup() { [[ -z $WORK ]] || rm -rf -- "$WORK"; }

# record_field FILE KEY : the value of 'KEY value' in an IMAGE.published record.
record_field() { sed -n "s/^$2 \\([^ ]*\\)\$/\\1/p" "$1" | head -n1; }

# pull_image REF DEST : pull REF with the job's credentials (ci/lib/registry.sh) into DEST.
pull_image() {
  local ref=$1 dest=$2 repo=${1%:*}
  registry_credentials "$repo"
  reg_target "$ref"
  REG_BODY=$WORK/body REG_HEADERS=$WORK/headers
  reg_check_access
  local rc=0
  reg_sif_digest "$ref" >/dev/null || rc=$?
  case $rc in
    0) ;;
    5) die "$AFKIT_EX_NOT_FOUND" "the registry has no image $ref" "did the publish job of this tag pass?" ;;
    *) die "$AFKIT_EX_PREREQ" "cannot read $ref from $REG_HOST (HTTP $REG_CODE)" ;;
  esac
  reg_apptainer_login "$WORK/auth.json"
  log "pulling $ref"
  apptainer pull "${REG_APPTAINER_ARGS[@]}" "$dest" "$ref" >/dev/null ||
    die "$AFKIT_EX_FAILURE" "could not pull $ref"
}

# verify_image SIF FP KEY REF : die 6 (refused) unless SIF carries a valid signature by FP.
verify_image() {
  local sif=$1 fp=$2 key=$3 ref=$4 rc=0 out
  local -a cmd=("$(ci_afkit)" image verify --fingerprint "$fp")
  [[ -z $key ]] || cmd+=(--key "$key")
  out=$("${cmd[@]}" "$sif" 2>&1) || rc=$?
  if ((rc != 0)); then
    printf '%s\n' "$out" >&2
    write_verdict refused "the signature by $fp was not verified (afkit image verify exit $rc)"
    die "$AFKIT_EX_INVALID" "refused $ref: its signature by $fp was not verified (exit $rc); no job ran, the baseline is unchanged" \
      "publish images only through ci/publish.sh with AFKIT_SIGNING_KEY; check AFKIT_VERIFY_FINGERPRINT and AFKIT_VERIFY_KEY"
  fi
  log "signature by $fp verified"
}

# failed_jobs JOBS_CSV : the job ids whose status is not ok, one per line, with their error.
failed_jobs() {
  "$(afkit_python)" - "$1" <<'PY'
import csv, sys
with open(sys.argv[1], newline="", encoding="utf-8") as fh:
    for row in csv.DictReader(fh):
        if row.get("status") != "ok":
            print(f"{row.get('bench')}/{row.get('id')}: {row.get('status')} {row.get('error', '')}".rstrip())
PY
}

VERDICT_FILE='' VERDICT_BASE='{}'
# write_verdict STATUS MESSAGE [REGRESSED] : DIR/functional.json (atomically).
write_verdict() {
  [[ -n $VERDICT_FILE ]] || return 0
  jq -n --arg status "$1" --arg message "$2" --arg regressed "${3:-}" --argjson base "$VERDICT_BASE" \
    '$base + {status: $status, message: $message, regressed: ($regressed | split("; ") | map(select(. != "")))}' \
    >"$VERDICT_FILE.tmp.$$"
  mv -f -- "$VERDICT_FILE.tmp.$$" "$VERDICT_FILE"
}

# store_baseline DIR JOBS_CSV : JOBS_CSV becomes DIR's baseline (runs/<id>/, link moved atomically).
store_baseline() {
  local dir=$1 csv=$2 id tmp
  id=$(date -u +%Y%m%dT%H%M%SZ)-${CI_PIPELINE_ID:-local}
  mkdir -p -- "$dir/runs"
  tmp=$(mktemp -d "$dir/runs/.new.XXXXXX")
  cp -- "$csv" "$tmp/jobs.csv"
  printf '%s\n' "$VERDICT_BASE" | jq --arg stored "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '. + {stored: $stored}' >"$tmp/baseline.json"
  chmod 755 "$tmp"
  mv -T -- "$tmp" "$dir/runs/$id"
  ln -sfn -- "runs/$id" "$dir/.baseline.new"
  mv -T -- "$dir/.baseline.new" "$dir/baseline"
  log "stored as the new baseline: $dir/runs/$id"
}

main() {
  local profile='' tag='' name=${AFKIT_BASELINE:-} out='' published='' tolerance=0.10
  local campaign=${AFKIT_FUNCTIONAL_CAMPAIGN:-} store=${AFKIT_FUNCTIONAL_STORE:-}
  local fingerprint=${AFKIT_VERIFY_FINGERPRINT:-} key=${AFKIT_VERIFY_KEY:-}
  local registry_image=${AFKIT_REGISTRY_IMAGE:-${CI_REGISTRY_IMAGE:-}}
  while (($#)); do
    case $1 in
      --profile | --tag | --baseline | --out | --published | --campaign | --store | --fingerprint | --key | --registry-image | --tolerance)
        (($# > 1)) || die "$AFKIT_EX_USAGE" "$1 needs a value" "see 'ci/functional.sh --help'"
        case $1 in
          --profile) profile=$2 ;; --tag) tag=$2 ;; --baseline) name=$2 ;; --out) out=$2 ;;
          --published) published=$2 ;; --campaign) campaign=$2 ;; --store) store=$2 ;;
          --fingerprint) fingerprint=$2 ;; --key) key=$2 ;; --registry-image) registry_image=$2 ;;
          --tolerance) tolerance=$2 ;;
        esac
        shift
        ;;
      -h | --help) usage; return 0 ;;
      *) die "$AFKIT_EX_USAGE" "unknown argument '$1'" "see 'ci/functional.sh --help'" ;;
    esac
    shift
  done
  [[ -n $profile && -n $tag && -n $name && -n $out ]] ||
    die "$AFKIT_EX_USAGE" "--profile, --tag, --baseline and --out are required" "see 'ci/functional.sh --help'"
  ci_check_profile "$profile"
  ci_safe_dir "$out"
  [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$ ]] ||
    die "$AFKIT_EX_UNSAFE" "refusing baseline name '$name'" "letters, digits, '._-' and '/' between parts, e.g. alice/aliphysics"
  [[ $tolerance =~ ^0?\.[0-9]+$ ]] || die "$AFKIT_EX_USAGE" "bad --tolerance '$tolerance'" "a fraction below 1, e.g. 0.10"
  [[ -n $store ]] ||
    die "$AFKIT_EX_PREREQ" "no baseline store: set AFKIT_FUNCTIONAL_STORE (or --store)" \
      "a directory on the runner host that outlives jobs, e.g. environment = [\"AFKIT_FUNCTIONAL_STORE=/var/lib/afkit/functional\"] in the runner's config.toml"
  [[ -n $campaign ]] || campaign=$(afkit_repo_root)/workflows/config/functional.yaml
  [[ -f $campaign ]] || die "$AFKIT_EX_NOT_FOUND" "no functional campaign $campaign" "set AFKIT_FUNCTIONAL_CAMPAIGN to your site's campaign file"

  local ref digest=''
  if [[ -n $published ]]; then
    [[ -f $published ]] || die "$AFKIT_EX_NOT_FOUND" "no publish record $published" "the publish job writes it; did it pass?"
    ref=$(record_field "$published" ref)
    digest=$(record_field "$published" digest)
    [[ -n $fingerprint ]] || fingerprint=$(record_field "$published" fingerprint)
    [[ -n $ref ]] || die "$AFKIT_EX_INVALID" "$published names no image reference"
  else
    reg_check_registry_image "$registry_image" ci/functional.sh
    ref=$(ci_image_ref "$registry_image" "$profile" "$tag")
  fi
  [[ -n $fingerprint ]] ||
    die "$AFKIT_EX_USAGE" "no signer to verify $ref against" "set AFKIT_VERIFY_FINGERPRINT (and AFKIT_VERIFY_KEY): functional tests run only signed images"
  need_cmd apptainer "the functional job runs on a runner with apptainer (tags: apptainer)"
  need_cmd jq
  need_cmd flock

  mkdir -p -- "$out"
  out=$(cd "$out" && pwd -P)
  VERDICT_FILE=$out/functional.json
  VERDICT_BASE=$(jq -n --arg ref "$ref" --arg tag "$tag" --arg profile "$profile" --arg fp "$fingerprint" \
    --arg baseline "$name" --arg pipeline "${CI_PIPELINE_URL:-}" \
    '{image: $ref, tag: $tag, profile: $profile, fingerprint: $fp, baseline_name: $baseline, pipeline: $pipeline}')
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/afkit-functional.XXXXXX")
  chmod 700 "$WORK"
  trap cleanup EXIT
  trap 'exit 130' INT TERM

  # 1-2: the image, exactly what the registry serves, signed by the expected key
  local sif=$WORK/image.sif sha
  pull_image "$ref" "$sif"
  sha=$(ci_sha256 "$sif")
  VERDICT_BASE=$(jq --arg sha "sha256:$sha" '. + {digest: $sha}' <<<"$VERDICT_BASE")
  if [[ -n $digest && $digest != "sha256:$sha" ]]; then
    write_verdict refused "the registry serves sha256:$sha under $ref, the publish job pushed $digest"
    die "$AFKIT_EX_INVALID" "refused $ref: the registry serves sha256:$sha, not the $digest the publish job pushed" "someone moved the tag; find out who before trusting it"
  fi
  verify_image "$sif" "$fingerprint" "$key" "$ref"

  # 3: the campaign with that image
  local cfile=$out/campaign.yaml
  local -a keyarg=()
  [[ -z $key ]] || keyarg=(--key "$key")
  ci_cfg functional-campaign --template "$campaign" --sif "$sif" --fingerprint "$fingerprint" "${keyarg[@]}" --output "$cfile" >/dev/null
  local afkit results cname rc=0
  afkit=$(ci_afkit)
  results=$(cd "$out" && "$afkit" campaign results "$cfile")
  results=$out/$results
  cname=$(basename "$results")
  cname=${cname%-*}
  log "running the functional campaign ($campaign) in $out"
  (cd "$out" && "$afkit" campaign run "$cfile") || rc=$?
  if ((rc != 0)); then
    write_verdict failed "afkit campaign run exited $rc"
    die "$rc" "the functional campaign failed (afkit campaign run exit $rc)" "see the job log and $results"
  fi
  local jobs_csv=$results/aggregate/jobs.csv failed
  [[ -f $jobs_csv ]] || die "$AFKIT_EX_FAILURE" "the campaign left no $jobs_csv"
  failed=$(failed_jobs "$jobs_csv")

  # 4: against the baseline, under the store's lock (one functional test per baseline at a time)
  local bdir=$store/$cname/$name
  mkdir -p -- "$bdir" 2>/dev/null || die "$AFKIT_EX_PREREQ" "cannot create the baseline directory $bdir" "check AFKIT_FUNCTIONAL_STORE"
  exec {lock}>"$bdir/.lock"
  flock "$lock"
  local crc=0 summary
  if [[ -e $bdir/baseline/jobs.csv ]]; then
    VERDICT_BASE=$(jq --arg b "$(readlink -f "$bdir/baseline")" '. + {compared_with: $b}' <<<"$VERDICT_BASE")
    log "comparing with the baseline $(readlink -f "$bdir/baseline") (tolerance $tolerance)"
    "$afkit" campaign compare "$bdir/baseline/jobs.csv" "$results" --tolerance "$tolerance" >"$out/compare.txt" || crc=$?
    cat "$out/compare.txt"
    # cells the comparison cannot judge (too few repetitions, or noise wider than the tolerance)
    # do not fail the job; functional.json lists them
    summary=$(sed -n 's/^[0-9]* cell(s) inconclusive ([^)]*): //p' "$out/compare.txt")
    VERDICT_BASE=$(jq --arg s "$summary" '. + {inconclusive: ($s | split("; ") | map(select(. != "")))}' <<<"$VERDICT_BASE")
    case $crc in
      0) ;;
      1)
        summary=$(sed -n 's/^[0-9]* cell(s) regressed: //p' "$out/compare.txt")
        write_verdict regressed "cells regressed against the baseline" "$summary"
        die "$AFKIT_EX_FAILURE" "regressed against the baseline $(readlink -f "$bdir/baseline"): $summary" \
          "the baseline is unchanged; the report with the comparison is in $results/report/report.html"
        ;;
      *) die "$crc" "afkit campaign compare exited $crc" "a changed campaign has no cell in common with its baseline: remove $bdir/baseline to start a new one" ;;
    esac
  else
    log "no baseline yet in $bdir: this run becomes it if every job succeeded"
  fi
  if [[ -n $failed ]]; then
    write_verdict failed "jobs failed" "$(paste -sd';' <<<"$failed" | sed 's/;/; /g')"
    printf '%s\n' "$failed" >&2
    die "$AFKIT_EX_FAILURE" "$(wc -l <<<"$failed") functional job(s) failed (listed above)" "the baseline is unchanged; see $results"
  fi

  # 5: a passing run is the new baseline
  store_baseline "$bdir" "$jobs_csv"
  write_verdict passed "every job succeeded and no cell regressed"
  log "passed: $ref (signed by $fingerprint) on the functional campaign"
}

main "$@"
