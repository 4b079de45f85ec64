#!/usr/bin/env bash
# Print the path of a virtualenv with afkit installed (for the CI jobs' before_script).
set -euo pipefail
AFKIT_PROG=ci/venv.sh
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"
# shellcheck source=ci/lib/ci.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ci.sh"

usage() {
  cat <<USAGE
Usage: ci/venv.sh

Prints the path of a Python virtualenv that has afkit installed with its [dev,workflow] extras:
  - \$AFKIT_VENV when it is set (a runner-provided venv; it must have bin/python and afkit);
  - else .venv in the checkout, created with 'python3 -m venv' and scripts/venv-install (uv's
    'pip install -e .[dev,workflow] -e testbed': the testbed's package, afkit federation) when it is missing, was made for another
    pyproject.toml or testbed/pyproject.toml (by content) or at another path (a
    venv's scripts hold its absolute path): then it is made anew (--clear). The CI jobs cache
    pip's and uv's caches (\$PIP_CACHE_DIR, \$UV_CACHE_DIR), never the venv.
The jobs put it first on PATH and set PYTHONPATH to the checkout's src/, so the code under test is
always the checkout's.

Exit codes: 0 ok, 1 the venv could not be created, 2 usage, 3 \$AFKIT_VENV is not a usable venv.
USAGE
}

main() {
  case ${1:-} in
    '') ;;
    -h | --help) usage; return 0 ;;
    *) die "$AFKIT_EX_USAGE" "unknown argument '$1'" "see 'ci/venv.sh --help'" ;;
  esac
  local repo venv
  repo=$(afkit_repo_root)
  if [[ -n ${AFKIT_VENV:-} ]]; then
    venv=$AFKIT_VENV
    [[ -x $venv/bin/python ]] || die "$AFKIT_EX_PREREQ" "AFKIT_VENV=$venv has no bin/python" "unset it or point it at a virtualenv"
    "$venv/bin/python" -c 'import yaml, jsonschema' ||
      die "$AFKIT_EX_PREREQ" "the venv $venv lacks PyYAML/jsonschema" "pip install -e '.[dev,workflow]' into it"
    printf '%s\n' "$venv"
    return 0
  fi
  venv=$repo/.venv
  local stamp=$venv/.afkit-ci-stamp want
  want="$venv $(ci_sha256 "$repo/pyproject.toml") $(ci_sha256 "$repo/testbed/pyproject.toml")"
  if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    need_cmd python3
    log "creating $venv"
    rm -f -- "$stamp"
    python3 -m venv --clear "$venv" >&2 || die "$AFKIT_EX_FAILURE" "python3 -m venv $venv failed" "install python3-venv"
    "$repo/scripts/venv-install" "$venv" >&2
    write_atomic "$stamp" printf '%s\n' "$want"
  fi
  printf '%s\n' "$venv"
}

main "$@"
