#!/usr/bin/env bash
# Print the tags CI builds for a profile, one per line.
set -euo pipefail
AFKIT_PROG=ci/tags.sh
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"
# shellcheck source=ci/lib/ci.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ci.sh"

usage() {
  cat <<USAGE
Usage: ci/tags.sh [--profile P] [--images DIR]

Prints the tags GitLab CI builds for profile P (default: \$AFKIT_PROFILE, else alice), one per line:
the list in DIR/P/tags.yaml (DIR default: the repository's images/), or, when the CI variable
AFKIT_TAGS is set and not empty, the tags in it (separated by blanks, commas or newlines).

Exit codes: 0 ok, 2 usage, 5 no tag list for the profile, 6 the list or a tag is invalid.
USAGE
}

main() {
  local profile=${AFKIT_PROFILE:-alice} images
  images="$(afkit_repo_root)/images"
  while (($#)); do
    case $1 in
      --profile) (($# > 1)) || die "$AFKIT_EX_USAGE" "--profile needs a value"; profile=$2; shift ;;
      --images) (($# > 1)) || die "$AFKIT_EX_USAGE" "--images needs a value"; images=$2; shift ;;
      -h | --help) usage; return 0 ;;
      *) die "$AFKIT_EX_USAGE" "unknown argument '$1'" "see 'ci/tags.sh --help'" ;;
    esac
    shift
  done
  ci_check_profile "$profile"
  local -a override=()
  [[ -z ${AFKIT_TAGS:-} ]] || override=(--override "$AFKIT_TAGS")
  ci_cfg tags --images "$images" --profile "$profile" "${override[@]}"
}

main "$@"
