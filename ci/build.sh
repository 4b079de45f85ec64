#!/usr/bin/env bash
# CI build job: build one tag's image with the afkit image builder.
set -euo pipefail
AFKIT_PROG=ci/build.sh
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"
# shellcheck source=ci/lib/ci.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ci.sh"

usage() {
  cat <<USAGE
Usage: ci/build.sh --profile P --tag TAG --output DIR [--base BASE] [--name NAME]

Builds the image of TAG with 'afkit image build' into DIR/NAME.sif and DIR/NAME.json (the manifest),
the two artifacts of the build job, and prints the SIF path on stdout.
  --base BASE  the base image (default: \$AFKIT_BASE; empty: the profile's default base,
               e.g. docker://almalinux:9; offline runners use localimage:/path/to/base.sif)
  --name NAME  image file name (default: the builder's, 'afkit image name TAG', e.g.
               AliPhysics_vAN-20201018_ROOT6-1)
The squashfs compression is \$AFKIT_IMAGE_COMPRESSION (a project or runner variable: gzip, zstd,
lz4 or xz); unset, the builder's default (Apptainer's gzip).
The image is validated in the validate stage (ci/validate.sh), not here. Run it by hand with the same
arguments to reproduce a CI build. A tag that does not exist fails with the builder's message.

Exit codes: the builder's (0 ok, 1 build failed, 2 usage, 3 prerequisite missing, 4 refused,
5 unknown tag or profile), and 1 when the builder did not leave DIR/NAME.sif and DIR/NAME.json.
USAGE
}

main() {
  local profile='' tag='' output='' base=${AFKIT_BASE:-} name=''
  while (($#)); do
    case $1 in
      --profile | --tag | --output | --base | --name)
        (($# > 1)) || die "$AFKIT_EX_USAGE" "$1 needs a value" "see 'ci/build.sh --help'"
        case $1 in
          --profile) profile=$2 ;; --tag) tag=$2 ;; --output) output=$2 ;; --base) base=$2 ;; --name) name=$2 ;;
        esac
        shift
        ;;
      -h | --help) usage; return 0 ;;
      *) die "$AFKIT_EX_USAGE" "unknown argument '$1'" "see 'ci/build.sh --help'" ;;
    esac
    shift
  done
  [[ -n $profile && -n $tag && -n $output ]] ||
    die "$AFKIT_EX_USAGE" "--profile, --tag and --output are required" "see 'ci/build.sh --help'"
  ci_check_profile "$profile"
  local default_name
  default_name=$(ci_image_name "$profile" "$tag")
  ci_safe_dir "$output"
  name=${name:-$default_name}
  [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]] || die "$AFKIT_EX_USAGE" "bad image name '$name'"

  local afkit
  afkit=$(ci_afkit)
  local -a cmd=("$afkit" image build --profile "$profile" --tag "$tag" --output "$output" --name "$name" -y --no-validate)
  [[ -z $base ]] || cmd+=(--base "$base")
  [[ -z ${AFKIT_IMAGE_COMPRESSION:-} ]] || cmd+=(--compression "$AFKIT_IMAGE_COMPRESSION")
  log "building $tag (profile $profile${base:+, base $base}) into $output/$name.sif"
  local rc=0
  "${cmd[@]}" >/dev/null || rc=$?
  ((rc == 0)) || die "$rc" "the build of $tag failed (afkit exit code $rc; its message is above)"
  local f
  for f in "$output/$name.sif" "$output/$name.json"; do
    [[ -s $f ]] || die "$AFKIT_EX_FAILURE" "the builder did not write $f"
  done
  log "built $output/$name.sif: $(stat -c %s "$output/$name.sif") bytes, sha256 $(ci_sha256 "$output/$name.sif")"
  printf '%s\n' "$output/$name.sif"
}

main "$@"
