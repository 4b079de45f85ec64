#!/usr/bin/env bash
# Build a self-contained Apptainer image of an ALICE software tag published on /cvmfs/alice.cern.ch.
# A thin front for 'afkit image build --profile alice': every decision is made there.
set -euo pipefail
# A CDPATH from the caller would make the relative 'cd' in afkit_repo_root land elsewhere
# (and print): the checkout's afkit must be the one run.
unset CDPATH
AFKIT_PROG=singularity_alice.sh
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() {
  cat <<'USAGE'
Usage: singularity_alice.sh -t TAG [-o WORKDIR] [-y] [options]

Fetch just the files TAG needs from /cvmfs/alice.cern.ch, build an Apptainer image with them
inside and the tag's environment set (no alienv or CVMFS needed where the image runs).

  -t, --tag TAG        AliPhysics/vAN-20201018_ROOT6-1, VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1,
                       several comma-separated (as alienv takes them), O2Physics daily tags
  -o, --output DIR     working directory (default: the current directory); created if missing.
                       The image is DIR/<name>.sif, its manifest DIR/<name>.json
  -y, --yes            clean an earlier build in DIR without asking (only a directory afkit made)
  -h, --help           this help
  Passed on to afkit image build: --base B (docker://IMG | localimage:PATH | debootstrap:SUITE),
  --compression gzip|zstd|lz4|xz, --plan (print the closure, write the shrinkwrap spec; no build),
  --no-validate, --name NAME, --layers (each big package its own squashfs partition, reused by
  the next daily built in DIR), --narrow and --narrow-command CMD (repeatable: also build
  NAME.narrow.sif with only the files the proof commands and CMD open, checked by rerunning them).

Run as root (sudo) or as a user for whom 'apptainer build --fakeroot' works; the tool says which.
Environment: AFKIT_BASE_IMAGE (default base), AFKIT_CVMFS_ROOT (default /cvmfs), AFKIT_VENV
(the virtualenv with afkit, default the checkout's .venv).
Exit codes: 0 ok, 1 build failed, 2 usage, 3 prerequisite missing (CVMFS, apptainer, privilege,
free space), 4 refused (unsafe or foreign directory), 5 unknown tag, 6 validation failed,
130 interrupted. Docs: docs/image-builder.md
USAGE
}

# find_afkit : print the command that runs the afkit CLI, one word per line.
find_afkit() {
  local repo venv
  repo=$(afkit_repo_root)
  venv=$(afkit_venv)
  # That venv, if its interpreter runs here (a venv made on another system may not).
  if [[ -x $venv/bin/afkit ]] && "$venv/bin/python" -c 'import afkit' >/dev/null 2>&1; then
    printf '%s\n' "$venv/bin/afkit"
  elif command -v afkit >/dev/null 2>&1; then
    command -v afkit
  elif command -v python3 >/dev/null 2>&1 && python3 -c 'import jinja2, yaml, jsonschema' >/dev/null 2>&1; then
    printf '%s\n' env "PYTHONPATH=$repo/src${PYTHONPATH:+:$PYTHONPATH}" python3 -m afkit
  else
    die "$AFKIT_EX_PREREQ" "cannot find the afkit CLI: no working $venv, no afkit on PATH, no python3 with afkit's dependencies (jinja2, PyYAML, jsonschema)" \
      "run 'make venv' in $repo (under sudo, PATH is reset: the venv is found by its path, or set AFKIT_VENV and keep it through sudo)"
  fi
}

main() {
  local tag="" output="." yes=0
  local -a extra=()
  while (($#)); do
    case $1 in
      -h | --help) usage; return 0 ;;
      -t | --tag | -o | --output | --base | --compression | --name | --narrow-command)
        (($# >= 2)) || die "$AFKIT_EX_USAGE" "$1 needs a value" "see --help"
        case $1 in
          -t | --tag) tag=$2 ;;
          -o | --output) output=$2 ;;
          *) extra+=("$1" "$2") ;;
        esac
        shift 2
        continue
        ;;
      --tag=*) tag=${1#*=} ;;
      --output=*) output=${1#*=} ;;
      --base=* | --compression=* | --name=* | --narrow-command=*) extra+=("$1") ;;
      -y | --yes) yes=1 ;;
      --plan | --no-validate | --layers | --narrow) extra+=("$1") ;;
      *) die "$AFKIT_EX_USAGE" "unknown option '$1'" "see --help" ;;
    esac
    shift
  done
  [[ -n $tag ]] || die "$AFKIT_EX_USAGE" "missing -t/--tag" "e.g. -t AliPhysics/vAN-20201018_ROOT6-1"
  [[ -n $output ]] || die "$AFKIT_EX_USAGE" "empty -o/--output" "give a working directory"
  ((yes)) && extra+=(--yes)
  local -a afkit
  mapfile -t afkit < <(find_afkit)
  ((${#afkit[@]})) || exit "$AFKIT_EX_PREREQ"
  exec "${afkit[@]}" image build --profile alice --tag "$tag" --output "$output" "${extra[@]}"
}

main "$@"
