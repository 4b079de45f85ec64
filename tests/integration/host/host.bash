# shellcheck shell=bash
# The set-up of every host bats file (docs_commands*.bats, testbed_lifecycle.bats): the assertions,
# the checkout as REPO and the working directory, the venv first on PATH as a reader has it after
# `. .venv/bin/activate` (README). In each file: setup() { load host; }

load "$BATS_TEST_DIRNAME/../../bats/assertions"
REPO="$(cd "$BATS_TEST_DIRNAME/../../.." && pwd)"
PATH="${AFKIT_VENV:-$REPO/.venv}/bin:$PATH"
cd "$REPO" || return
