# shellcheck shell=bash
# Helpers shared by the ci/*.sh scripts (sourced after scripts/lib/common.sh). Source it; do not run it.

# ci_repo : the checkout the ci scripts live in.
ci_repo() { (cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P); }

# ci_python : the Python that has PyYAML and jsonschema (AFKIT_PYTHON, else the venv, else python3).
ci_python() {
  local venv=${AFKIT_VENV:-$(ci_repo)/.venv}
  if [[ -n ${AFKIT_PYTHON:-} ]]; then
    printf '%s\n' "$AFKIT_PYTHON"
  elif [[ -x $venv/bin/python ]]; then
    printf '%s\n' "$venv/bin/python"
  else
    printf '%s\n' python3
  fi
}

# ci_cfg ARGS... : run ci/cicfg.py (tag lists, schema checks, the child pipeline).
ci_cfg() {
  local py
  py=$(ci_python)
  "$py" "$(ci_repo)/ci/cicfg.py" "$@"
}

# ci_check_tag TAG : die (usage) unless TAG looks like Package/version or one word (LCG_105).
ci_check_tag() {
  local tag=$1
  [[ $tag =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*(/[A-Za-z0-9][A-Za-z0-9._+-]*)?$ ]] ||
    die "$AFKIT_EX_USAGE" "bad tag '$tag'" "a tag is Package/version (AliPhysics/vAN-20201018_ROOT6-1) or a word (LCG_105)"
}

# ci_split_tag PROFILE TAG : sets CI_PACKAGE and CI_VERSION (a one-word tag: package = profile).
ci_split_tag() {
  if [[ $2 == */* ]]; then
    CI_PACKAGE=${2%%/*}
    CI_VERSION=${2#*/}
  else
    CI_PACKAGE=$1
    CI_VERSION=$2
  fi
}

# ci_check_profile NAME : die (usage) unless NAME is a plain profile name.
ci_check_profile() {
  [[ $1 =~ ^[a-z0-9][a-z0-9_-]*$ ]] ||
    die "$AFKIT_EX_USAGE" "bad profile name '$1'" "a profile is a directory name under images/, e.g. alice"
}

# ci_image_name PROFILE TAG : the file name (without .sif) of TAG's image: alice-aliphysics-vAN-...,
# lcg-LCG_105 (the same names as ci/cicfg.py's).
ci_image_name() {
  local profile=$1 tag=$2
  if [[ $tag == */* ]]; then
    printf '%s-%s-%s\n' "$profile" "$(tr '[:upper:]' '[:lower:]' <<<"${tag%%/*}")" "${tag#*/}"
  else
    printf '%s-%s\n' "$profile" "$tag"
  fi
}

# ci_image_ref REGISTRY_IMAGE PROFILE TAG : oras://REGISTRY_IMAGE/profile/package:version
# (OCI repository names are lower case; a tag is at most 128 characters of [A-Za-z0-9_.-]).
ci_image_ref() {
  local base=$1 profile=$2 tag=$3 package version
  ci_split_tag "$profile" "$tag"
  package=$CI_PACKAGE
  version=${CI_VERSION//+/_}
  ((${#version} <= 128)) || die "$AFKIT_EX_USAGE" "version '$version' is longer than an OCI tag may be (128)"
  base=${base#oras://}
  base=${base%/}
  printf 'oras://%s/%s/%s:%s\n' "${base,,}" "$profile" "${package,,}" "$version"
}

# ci_sha256 FILE : the hex sha256 of FILE.
ci_sha256() { sha256sum -- "$1" | cut -d' ' -f1; }

# ci_safe_dir DIR : refuse empty, root, or parent-escaping output directories.
ci_safe_dir() {
  local dir=$1
  [[ -n $dir ]] || die "$AFKIT_EX_USAGE" "empty directory name"
  case /$dir/ in
    *'/../'* | '//') die "$AFKIT_EX_UNSAFE" "refusing directory '$dir'" "give a plain path below the job's directory" ;;
  esac
  [[ $dir != / ]] || die "$AFKIT_EX_UNSAFE" "refusing directory '/'"
}

# ci_afkit : the afkit command (on PATH, else the venv's).
ci_afkit() {
  local venv=${AFKIT_VENV:-$(ci_repo)/.venv}
  if command -v afkit >/dev/null 2>&1; then
    command -v afkit
  elif [[ -x $venv/bin/afkit ]]; then
    printf '%s\n' "$venv/bin/afkit"
  else
    die "$AFKIT_EX_PREREQ" "the afkit command is not on PATH" "install the project (pip install -e .) or set AFKIT_VENV"
  fi
}
