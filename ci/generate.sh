#!/usr/bin/env bash
# Write the child pipeline: one build -> validate -> publish chain per tag.
set -euo pipefail
AFKIT_PROG=ci/generate.sh
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"
# shellcheck source=ci/lib/ci.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ci.sh"

usage() {
  cat <<USAGE
Usage: ci/generate.sh [--profile P] [--tags "T1 T2"] [--images DIR] [--jobs all|images|functional]
                      [--scheduled true|false] --output FILE

Writes FILE, the child pipeline of the image jobs: for every tag of profile P (see ci/tags.sh) a
job build:P:Package:version, a job validate:... that needs it, and a job publish:... that needs
both and runs on the default branch and on git tags only, and only when the ref is protected.
The chains are independent: a tag that fails to build does not stop the others.
A scheduled pipeline (--scheduled true) adds to each chain a job functional:... after the publish
job: ci/functional.sh tests the image just published with the functional campaign and compares
it with the baseline. --jobs functional writes only the functional jobs, for the images the
registry serves now (no build).
Prints the tags. FILE is written atomically.
  --profile P    default (also when P is empty): \$AFKIT_PROFILE, else alice
  --tags "T ..." build these tags instead of the profile's tag list (blank-, comma- or
                 newline-separated); empty: \$AFKIT_TAGS, else the list
  --jobs J       the pipeline input 'jobs': 'functional' means only the functional tests
  --scheduled B  'true' in a scheduled pipeline (\$CI_PIPELINE_SOURCE == "schedule"): add the
                 functional tests after the publish jobs
The pipeline passes its inputs 'profile', 'tags' and 'jobs' and whether it is scheduled here
(.gitlab-ci.yml).

Exit codes: 0 ok, 2 usage, 5 no tag list for the profile, 6 the list or a tag is invalid.
USAGE
}

main() {
  local profile='' tags=${AFKIT_TAGS:-} images output='' jobs=all scheduled=false
  images="$(afkit_repo_root)/images"
  while (($#)); do
    case $1 in
      --profile) (($# > 1)) || die "$AFKIT_EX_USAGE" "--profile needs a value"; profile=$2; shift ;;
      --tags) (($# > 1)) || die "$AFKIT_EX_USAGE" "--tags needs a value"; [[ -z $2 ]] || tags=$2; shift ;;
      --images) (($# > 1)) || die "$AFKIT_EX_USAGE" "--images needs a value"; images=$2; shift ;;
      --output) (($# > 1)) || die "$AFKIT_EX_USAGE" "--output needs a value"; output=$2; shift ;;
      --jobs) (($# > 1)) || die "$AFKIT_EX_USAGE" "--jobs needs a value"; jobs=$2; shift ;;
      --scheduled) (($# > 1)) || die "$AFKIT_EX_USAGE" "--scheduled needs a value"; scheduled=$2; shift ;;
      -h | --help) usage; return 0 ;;
      *) die "$AFKIT_EX_USAGE" "unknown argument '$1'" "see 'ci/generate.sh --help'" ;;
    esac
    shift
  done
  [[ -n $output ]] || die "$AFKIT_EX_USAGE" "--output FILE is required" "see 'ci/generate.sh --help'"
  profile=${profile:-${AFKIT_PROFILE:-alice}}
  ci_check_profile "$profile"
  local functional
  case $jobs:$scheduled in
    functional:true | functional:false) functional=only ;;
    all:true | images:true) functional=after-publish ;;
    all:false | images:false) functional=none ;;
    *) die "$AFKIT_EX_USAGE" "bad --jobs '$jobs' or --scheduled '$scheduled'" "--jobs all|images|functional, --scheduled true|false" ;;
  esac
  local -a override=()
  [[ -z $tags ]] || override=(--override "$tags")
  ci_cfg child --images "$images" --profile "$profile" --output "$output" --functional "$functional" "${override[@]}"
  log "wrote $output (functional tests: $functional)"
}

main "$@"
