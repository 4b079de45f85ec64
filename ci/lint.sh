#!/usr/bin/env bash
# CI lint jobs: code linters, the Snakemake workflow, the image profiles and tag lists.
set -euo pipefail
AFKIT_PROG=ci/lint.sh
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"
# shellcheck source=ci/lib/ci.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ci.sh"

usage() {
  cat <<USAGE
Usage: ci/lint.sh CHECK...

Checks (each one CI job of the lint stage; run them by hand from the checkout):
  code       shellcheck on every shell script, ruff, mypy and lint-imports (the import contracts) on
             the Python code (scripts/run-tests lint; JUnit reports in \$AFKIT_REPORTS, default
             build/test-reports)
  snakemake  'snakefmt --check' on workflows/Snakefile and workflows/rules/*.smk; 'snakemake --lint'
             from workflows/ with no campaign (the default config/config.yaml, as the Snakemake
             workflow catalog runs it) and with every campaign in workflows/config/
             (says so and passes when the repository has no workflows/Snakefile)
  config     images/*/profile.yaml against the builder's schema (src/afkit/image/profile.schema.json),
             images/*/tags.yaml against ci/schema/tags.schema.json and the profile's tag pattern;
             .gitlab-ci.yml and the child pipeline of every profile with a tags.yaml against
             GitLab's CI schema (ci/schema/gitlab-ci.json) and its resource_group key rule
  all        the three above

Exit codes: 0 clean, 1 a linter found problems, 2 usage, 3 a linter is missing, 6 invalid config.
USAGE
}

lint_code() {
  local repo
  repo=$(afkit_repo_root)
  "$repo/scripts/run-tests" lint
}

# venv_cmd NAME EXTRA : NAME on PATH, else the venv's (EXTRA: the pyproject extra that installs it).
venv_cmd() {
  local name=$1 extra=$2 venv
  venv=$(afkit_venv)
  if command -v "$name" >/dev/null 2>&1; then
    command -v "$name"
  elif [[ -x $venv/bin/$name ]]; then
    printf '%s\n' "$venv/bin/$name"
  else
    die "$AFKIT_EX_PREREQ" "$name not found" "install the project with the [$extra] extra, or set AFKIT_VENV"
  fi
}

lint_snakemake() {
  local repo snakefile
  repo=$(afkit_repo_root)
  snakefile=$repo/workflows/Snakefile
  if [[ ! -f $snakefile ]]; then
    log "snakemake: there is no workflows/Snakefile: nothing to lint"
    return 0
  fi
  local smk fmt cfg failed=0 n=0 dir
  smk=$(venv_cmd snakemake workflow)
  fmt=$(venv_cmd snakefmt dev)
  log "snakefmt --check"
  "$fmt" --check "$snakefile" "$repo"/workflows/rules/*.smk || die "$AFKIT_EX_FAILURE" \
    "snakefmt would reformat the workflow (above)" "run snakefmt on workflows/Snakefile workflows/rules/*.smk"
  dir=$(mktemp -d "${TMPDIR:-/tmp}/afkit-lint.XXXXXX")
  log "snakemake --lint with the default campaign (no --configfile)"
  if ! (cd "$repo/workflows" && "$smk" --lint --directory "$dir"); then
    warn "snakemake --lint failed with the default campaign"
    failed=1
  fi
  for cfg in "$repo"/workflows/config/*.yaml; do
    [[ -f $cfg ]] || continue
    n=$((n + 1))
    log "snakemake --lint with $(basename "$cfg")"
    if ! (cd "$dir" && "$smk" --lint -s "$snakefile" --configfile "$cfg" --directory "$dir"); then
      warn "snakemake --lint failed with $cfg"
      failed=1
    fi
  done
  rm -rf -- "$dir"
  ((n > 0)) || die "$AFKIT_EX_FAILURE" "workflows/Snakefile exists but workflows/config/ has no campaign to lint it with"
  ((failed == 0)) || die "$AFKIT_EX_FAILURE" "snakemake --lint found problems (above)"
  log "snakemake: $n campaign(s) lint clean"
}

lint_config() {
  local repo schema
  repo=$(afkit_repo_root)
  schema=$repo/src/afkit/image/profile.schema.json
  [[ -f $schema ]] || die "$AFKIT_EX_PREREQ" "no profile schema $schema" "the image builder ships it"
  ci_cfg check --images "$repo/images" --profile-schema "$schema"
  log "config: profiles and tag lists are valid"
  local dir tags profile
  dir=$(mktemp -d "${TMPDIR:-/tmp}/afkit-lint.XXXXXX")
  local -a files=("$repo/.gitlab-ci.yml")
  for tags in "$repo"/images/*/tags.yaml; do
    [[ -f $tags ]] || continue
    profile=$(basename "$(dirname "$tags")")
    ci_cfg child --images "$repo/images" --profile "$profile" --output "$dir/$profile.yml" >/dev/null
    files+=("$dir/$profile.yml")
  done
  local rc=0
  ci_cfg pipeline "${files[@]}" || rc=$?
  rm -rf -- "$dir"
  ((rc == 0)) || die "$rc" "a pipeline does not pass GitLab's schema or rules (above)"
  log "config: .gitlab-ci.yml and $((${#files[@]} - 1)) child pipeline(s) are valid GitLab CI"
}

main() {
  (($#)) || die "$AFKIT_EX_USAGE" "no check given" "see 'ci/lint.sh --help'"
  local -a checks=()
  while (($#)); do
    case $1 in
      -h | --help) usage; return 0 ;;
      code | snakemake | config) checks+=("$1") ;;
      all) checks+=(code snakemake config) ;;
      *) die "$AFKIT_EX_USAGE" "unknown check '$1'" "checks: code snakemake config all" ;;
    esac
    shift
  done
  local check
  for check in "${checks[@]}"; do "lint_$check"; done
}

main "$@"
