#!/usr/bin/env bash
# CI validate job: check a built image and record that it passed.
set -euo pipefail
AFKIT_PROG=ci/validate.sh
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"
# shellcheck source=ci/lib/ci.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ci.sh"

usage() {
  cat <<USAGE
Usage: ci/validate.sh [--profile P] [--junit FILE] [--fingerprint FP [--key PUB.asc]] [--read URL]... IMAGE.sif

Runs 'afkit image validate' on IMAGE.sif (the image runs, the tag's environment is set inside,
the profile's proof commands work) and writes its JUnit report to FILE (default IMAGE.junit.xml,
published by GitLab as the job's test report). On success it writes IMAGE.validated, a stamp
holding the image's sha256: ci/publish.sh publishes nothing without a matching stamp.
On failure the stamp is removed, and the report is there even when the validator crashed.
  --fingerprint FP  the image must also carry a valid signature by this PGP key (empty: none) ('afkit image
                    verify'; unsigned, modified or signed by another key: exit 6). Used on images
                    already published and signed by ci/publish.sh (a scheduled pipeline
                    validating what the registry serves). Default: \$AFKIT_VERIFY_FINGERPRINT.
  --key PUB.asc     the signer's armored public key (default: \$AFKIT_VERIFY_KEY, else the
                    runner's apptainer keyring)
  --read URL        also run the profile's reading proofs (ROOT's interpreter and a compiled
                    reader) on URL, e.g. the site's XRootD origin and its XCache
                    ('afkit image validate --read'; repeatable). Default: the words of
                    \$AFKIT_VALIDATE_READ (a project variable).

Exit codes: 0 valid, 2 usage, 3 prerequisite missing, 5 no such image, 6 validation failed.
USAGE
}

# junit_failure FILE NAME MESSAGE : a one-case failing JUnit report (when the validator left none).
junit_failure() {
  local file=$1 name=$2 msg=$3
  msg=${msg//&/&amp;}; msg=${msg//</&lt;}; msg=${msg//>/&gt;}; msg=${msg//\"/&quot;}
  write_atomic "$file" printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="afkit-image-validate" tests="1" failures="1">\n  <testcase classname="%s" name="validator"><failure message="%s"/></testcase>\n</testsuite>\n' \
    "$name" "$msg"
}

main() {
  local profile='' junit='' image='' fingerprint=${AFKIT_VERIFY_FINGERPRINT:-} key=${AFKIT_VERIFY_KEY:-}
  local -a reads=()
  while (($#)); do
    case $1 in
      --profile) (($# > 1)) || die "$AFKIT_EX_USAGE" "--profile needs a value"; profile=$2; shift ;;
      --junit) (($# > 1)) || die "$AFKIT_EX_USAGE" "--junit needs a value"; junit=$2; shift ;;
      --fingerprint) (($# > 1)) || die "$AFKIT_EX_USAGE" "--fingerprint needs a value"; fingerprint=$2; shift ;;
      --key) (($# > 1)) || die "$AFKIT_EX_USAGE" "--key needs a value"; key=$2; shift ;;
      --read) (($# > 1)) || die "$AFKIT_EX_USAGE" "--read needs a URL"; reads+=("$2"); shift ;;
      -h | --help) usage; return 0 ;;
      -*) die "$AFKIT_EX_USAGE" "unknown option '$1'" "see 'ci/validate.sh --help'" ;;
      *) [[ -z $image ]] || die "$AFKIT_EX_USAGE" "one image only ('$image' and '$1')"; image=$1 ;;
    esac
    shift
  done
  [[ -n $image ]] || die "$AFKIT_EX_USAGE" "no image given" "see 'ci/validate.sh --help'"
  [[ $image == *.sif ]] || die "$AFKIT_EX_USAGE" "'$image' is not a .sif file"
  [[ -f $image ]] || die "$AFKIT_EX_NOT_FOUND" "no image $image" "did the build job of this tag pass and pass its artifacts?"
  [[ -z $profile ]] || ci_check_profile "$profile"
  local base=${image%.sif}
  [[ -n $junit ]] || junit=$base.junit.xml
  local stamp=$base.validated
  rm -f -- "$stamp"

  local afkit
  afkit=$(ci_afkit)
  if [[ -n $fingerprint ]]; then
    local -a vcmd=("$afkit" image verify --fingerprint "$fingerprint")
    [[ -z $key ]] || vcmd+=(--key "$key")
    local vrc=0
    "${vcmd[@]}" "$image" >/dev/null || vrc=$?
    if ((vrc != 0)); then
      junit_failure "$junit" "$(basename "$base")" "the signature by $fingerprint was not verified (exit $vrc)"
      die "$vrc" "$image: the signature by $fingerprint was not verified (exit code $vrc)" "it will not be used"
    fi
  fi
  local -a cmd=("$afkit" image validate "$image" --junit "$junit")
  [[ -z $profile ]] || cmd+=(--profile "$profile")
  if ((${#reads[@]} == 0)) && [[ -n ${AFKIT_VALIDATE_READ:-} ]]; then
    read -ra reads <<<"$AFKIT_VALIDATE_READ"
  fi
  local url
  for url in "${reads[@]}"; do cmd+=(--read "$url"); done
  local sha rc=0
  sha=$(ci_sha256 "$image")
  log "validating $image (sha256 $sha)"
  "${cmd[@]}" || rc=$?
  if ((rc != 0)); then
    [[ -s $junit ]] || junit_failure "$junit" "$(basename "$base")" "afkit image validate exited with $rc"
    die "$rc" "$image did not pass validation (exit code $rc); report: $junit" "it will not be published"
  fi
  [[ -s $junit ]] || die "$AFKIT_EX_INVALID" "the validator passed but wrote no JUnit report $junit"
  write_atomic "$stamp" printf 'sha256 %s\nimage %s\nvalidated %s\n' "$sha" "$(basename "$image")" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  log "valid: $image; report $junit"
}

main "$@"
