#!/usr/bin/env bash
# CI publish job: push a validated image to an OCI registry with apptainer and verify it.
set -euo pipefail
AFKIT_PROG=ci/publish.sh
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"
# shellcheck source=ci/lib/ci.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ci.sh"
# shellcheck source=ci/lib/registry.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/registry.sh"

usage() {
  cat <<USAGE
Usage: ci/publish.sh --profile P --tag TAG [--registry-image R] [--dry-run] IMAGE.sif

Publishes IMAGE.sif as oras://R/P/package:version ('afkit image name --ref R TAG'; R defaults to
\$AFKIT_REGISTRY_IMAGE, else \$CI_REGISTRY_IMAGE), then checks the registry's digest of the image
and pulls it back and compares the sha256 with the local file.
  - IMAGE.validated (written by ci/validate.sh) must exist and hold IMAGE's sha256: no publish of
    an image that did not pass validation (exit 6).
  - The tag already holds an image with the same digest: nothing is pushed (exit 0).
  - The registry is unreachable or refuses the credentials: exit 3 before anything is pushed.
  - The pulled-back image differs: the new manifest is deleted again (when the registry allows it)
    and the job fails (exit 1).
  --dry-run   check the stamp, the registry and the credentials, print what would be pushed.

Signing: with \$AFKIT_SIGNING_KEY (a GitLab file variable: the path of an armored PGP private key,
'apptainer key export --secret --armor') a copy of IMAGE is signed ('afkit image sign', the key's
passphrase from \$AFKIT_SIGNING_PASSPHRASE on stdin, never on a command line) and the signed copy is
pushed; the image pulled back must carry that signature ('afkit image verify'), and IMAGE.published
records the fingerprint. A signature carries its time, so a signed re-publish pushes again.
Without the key the image is published unsigned, with a warning.

Credentials: \$AFKIT_REGISTRY_USER and \$AFKIT_REGISTRY_PASSWORD when set; else GitLab's
\$CI_REGISTRY_USER and \$CI_JOB_TOKEN, but only for the project's own registry (R is
\$CI_REGISTRY_IMAGE or below it, on host \$CI_REGISTRY): the job token is never sent to another
registry (exit 4). They go to 'apptainer registry login --password-stdin' and to curl on stdin,
into a private temporary auth file removed at exit; never on a command line, never printed.
No credentials at all: anonymous access.
AFKIT_REGISTRY_INSECURE=1: plain HTTP (apptainer --no-https), for a test registry on localhost only.
Prints the reference and digest on stdout; writes IMAGE.published (reference, digest,
signer fingerprint when signed).

Exit codes: 0 published or already there, 1 push or verification failed, 2 usage,
3 registry unreachable / credentials refused / apptainer missing, 4 refused (the job token for
another registry), 5 no such image or signing key, 6 not validated, or the signature could not be
made or checked.
USAGE
}

WORK=''
cleanup() { [[ -z $WORK ]] || rm -rf -- "$WORK"; }

# check_validated IMAGE SHA : die 6 unless IMAGE.validated holds SHA.
check_validated() {
  local image=$1 sha=$2 stamp=${1%.sif}.validated want
  [[ -f $stamp ]] ||
    die "$AFKIT_EX_INVALID" "$image has no validation stamp ($stamp)" "only images that passed ci/validate.sh are published"
  want=$(sed -n 's/^sha256 \([0-9a-f]\{64\}\)$/\1/p' "$stamp" | head -n1)
  [[ $want == "$sha" ]] ||
    die "$AFKIT_EX_INVALID" "$image is not the image that was validated (sha256 $sha, stamp ${want:-none})" \
      "re-run the validate job on this image"
}

# remote_digest REF : print the SIF digest under REF (empty when the tag does not exist).
remote_digest() {
  local rc=0 digest
  digest=$(reg_sif_digest "$1") || rc=$?
  case $rc in
    0) printf '%s\n' "$digest" ;;
    5) ;;
    3) die "$AFKIT_EX_PREREQ" "the registry $REG_HOST refused access to $1 (HTTP $REG_CODE)" "check the credentials and the project's registry permissions" ;;
    *) die "$AFKIT_EX_FAILURE" "cannot read $1 from $REG_HOST (HTTP $REG_CODE)" ;;
  esac
}

# undo_push REF : remove the tag just pushed (best effort) after a failed verification.
undo_push() {
  if reg_sif_digest "$1" >/dev/null && reg_delete "$1"; then
    warn "deleted the unverified manifest of $1"
  else
    warn "could not delete $1 from the registry (HTTP $REG_CODE): delete it by hand"
  fi
}

main() {
  local profile='' tag='' image='' registry_image=${AFKIT_REGISTRY_IMAGE:-${CI_REGISTRY_IMAGE:-}} dry_run=0
  while (($#)); do
    case $1 in
      --profile | --tag | --registry-image)
        (($# > 1)) || die "$AFKIT_EX_USAGE" "$1 needs a value" "see 'ci/publish.sh --help'"
        case $1 in --profile) profile=$2 ;; --tag) tag=$2 ;; --registry-image) registry_image=$2 ;; esac
        shift
        ;;
      --dry-run) dry_run=1 ;;
      -h | --help) usage; return 0 ;;
      -*) die "$AFKIT_EX_USAGE" "unknown option '$1'" "see 'ci/publish.sh --help'" ;;
      *) [[ -z $image ]] || die "$AFKIT_EX_USAGE" "one image only ('$image' and '$1')"; image=$1 ;;
    esac
    shift
  done
  [[ -n $profile && -n $tag && -n $image ]] ||
    die "$AFKIT_EX_USAGE" "--profile, --tag and IMAGE.sif are required" "see 'ci/publish.sh --help'"
  ci_check_profile "$profile"
  reg_check_registry_image "$registry_image" ci/publish.sh
  local ref sha
  ref=$(ci_image_ref "$registry_image" "$profile" "$tag")
  [[ $image == *.sif ]] || die "$AFKIT_EX_USAGE" "'$image' is not a .sif file"
  [[ -f $image ]] || die "$AFKIT_EX_NOT_FOUND" "no image $image" "did the build job pass its artifacts to this job?"

  registry_credentials "$registry_image"
  reg_target "$ref"

  sha=$(ci_sha256 "$image")
  check_validated "$image" "$sha"
  local record_for=$image
  need_cmd curl
  need_cmd jq
  ((dry_run)) || need_cmd apptainer "the publish job runs on a runner with apptainer (tags: apptainer)"

  WORK=$(mktemp -d "${TMPDIR:-/tmp}/afkit-publish.XXXXXX")
  chmod 700 "$WORK"
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  REG_BODY=$WORK/body REG_HEADERS=$WORK/headers

  reg_check_access

  local fingerprint=''
  if [[ -n ${AFKIT_SIGNING_KEY:-} ]] && ((!dry_run)); then
    sign_copy "$image" "$WORK/signed.sif"
    image=$WORK/signed.sif
    sha=$(ci_sha256 "$image")
  elif [[ -z ${AFKIT_SIGNING_KEY:-} ]]; then
    warn "AFKIT_SIGNING_KEY is not set: publishing $image unsigned"
  fi

  local before
  before=$(remote_digest "$ref")
  if [[ $before == "sha256:$sha" ]]; then
    log "$ref already holds this image (sha256:$sha): nothing to push"
    write_record "$record_for" "$ref" "$sha" "$fingerprint"
    return 0
  fi
  [[ -z $before ]] || log "$ref holds $before; replacing it with sha256:$sha"
  if ((dry_run)); then
    log "dry run: would push $image (sha256:$sha) to $ref"
    return 0
  fi

  reg_apptainer_login "$WORK/auth.json"
  log "pushing $image to $ref"
  apptainer push "${REG_APPTAINER_ARGS[@]}" "$image" "$ref" ||
    die "$AFKIT_EX_FAILURE" "apptainer push to $ref failed" "the tag was not moved: a push only tags the image once all of it is uploaded"

  local after pulled_sha
  after=$(remote_digest "$ref")
  if [[ $after != "sha256:$sha" ]]; then
    undo_push "$ref"
    die "$AFKIT_EX_FAILURE" "the registry reports ${after:-nothing} for $ref, expected sha256:$sha"
  fi
  log "pulling $ref back"
  if ! apptainer pull "${REG_APPTAINER_ARGS[@]}" "$WORK/pulled.sif" "$ref" >/dev/null; then
    undo_push "$ref"
    die "$AFKIT_EX_FAILURE" "could not pull $ref back"
  fi
  pulled_sha=$(ci_sha256 "$WORK/pulled.sif")
  if [[ $pulled_sha != "$sha" ]]; then
    undo_push "$ref"
    die "$AFKIT_EX_FAILURE" "the image pulled back from $ref differs (sha256 $pulled_sha, pushed $sha)"
  fi
  if [[ -n $fingerprint ]]; then
    "$(ci_afkit)" image verify --fingerprint "$fingerprint" --key "$WORK/signer.asc" "$WORK/pulled.sif" >/dev/null || {
      undo_push "$ref"
      die "$AFKIT_EX_INVALID" "the image pulled back from $ref does not carry the signature by $fingerprint"
    }
  fi
  log "published $ref (sha256:$sha${fingerprint:+, signed by $fingerprint}), pulled back and verified"
  write_record "$record_for" "$ref" "$sha" "$fingerprint"
}

# sign_copy IMAGE COPY : copy IMAGE to COPY, sign COPY with $AFKIT_SIGNING_KEY; sets fingerprint and
# exports the signer's public key to $WORK/signer.asc (to verify the image pulled back with).
sign_copy() {
  local src=$1 copy=$2 afkit
  afkit=$(ci_afkit)
  [[ -f $AFKIT_SIGNING_KEY ]] ||
    die "$AFKIT_EX_NOT_FOUND" "AFKIT_SIGNING_KEY=$AFKIT_SIGNING_KEY is not a file" "make AFKIT_SIGNING_KEY a CI variable of type 'File' holding the armored private key"
  cp -- "$src" "$copy"
  log "signing a copy of $src"
  fingerprint=$("$afkit" image sign --key "$AFKIT_SIGNING_KEY" --export-public "$WORK/signer.asc" "$copy") ||
    die "$AFKIT_EX_INVALID" "could not sign $src with AFKIT_SIGNING_KEY" "check the key file and AFKIT_SIGNING_PASSPHRASE"
}

# record_lines REF SHA [FINGERPRINT] : the lines of IMAGE.published.
record_lines() {
  printf 'ref %s\ndigest sha256:%s\n' "$1" "$2"
  [[ -z ${3:-} ]] || printf 'fingerprint %s\n' "$3"
}

# write_record IMAGE REF SHA [FINGERPRINT] : IMAGE.published and the result on stdout.
write_record() {
  local image=$1 ref=$2 sha=$3 fingerprint=${4:-}
  write_atomic "${image%.sif}.published" record_lines "$ref" "$sha" "$fingerprint"
  printf '%s sha256:%s\n' "$ref" "$sha"
}

main "$@"
