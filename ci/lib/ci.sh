# shellcheck shell=bash
# Helpers shared by the ci/*.sh scripts (sourced after scripts/lib/common.sh). Source it; do not run it.

# ci_cfg ARGS... : run ci/cicfg.py (tag lists, schema checks, the child pipeline).
ci_cfg() {
  local py
  py=$(afkit_python)
  "$py" "$(afkit_repo_root)/ci/cicfg.py" "$@"
}

# ci_check_profile NAME : die (usage) unless NAME is a plain profile name.
ci_check_profile() {
  [[ $1 =~ ^[a-z0-9][a-z0-9_-]*$ ]] ||
    die "$AFKIT_EX_USAGE" "bad profile name '$1'" "a profile is a directory name under images/, e.g. alice"
}

# ci_image PROFILE TAG [OPTION...] : 'afkit image name --profile PROFILE [OPTION...] TAG' of this
# checkout, run with afkit_python: the tag grammar, the image name, the OCI reference and the resource
# group live once, in afkit.image.tags. Dies 2 on a bad tag, 5 on an unknown profile.
ci_image() {
  local profile=$1 tag=$2 py rc=0
  shift 2
  py=$(afkit_python)
  PYTHONPATH="$(afkit_repo_root)/src${PYTHONPATH:+:$PYTHONPATH}" "$py" -m afkit image name --profile "$profile" "$@" -- "$tag" ||
    rc=$?
  case $rc in
    0) ;;
    2) die "$rc" "bad tag '$tag'" "a tag is Package/version (AliPhysics/vAN-20201018_ROOT6-1) or a word (LCG_105)" ;;
    *) die "$rc" "cannot name the image of '$tag' (profile '$profile'): afkit image name exited $rc" ;;
  esac
}

# ci_image_name PROFILE TAG : the name of TAG's image, without .sif (AliPhysics_vAN-20201018_ROOT6-1,
# LCG_105): the builder's default name.
ci_image_name() { ci_image "$1" "$2"; }

# ci_image_ref REGISTRY_IMAGE PROFILE TAG : oras://registry_image/profile/package:version
# (lower-case repository, '+' as '_', a version of at most 128 characters).
ci_image_ref() { ci_image "$2" "$3" --ref "$1"; }

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
  local venv
  venv=$(afkit_venv)
  if command -v afkit >/dev/null 2>&1; then
    command -v afkit
  elif [[ -x $venv/bin/afkit ]]; then
    printf '%s\n' "$venv/bin/afkit"
  else
    die "$AFKIT_EX_PREREQ" "the afkit command is not on PATH" "install the project (pip install -e .) or set AFKIT_VENV"
  fi
}
