# afkit — the documented entry points. `make help` lists them.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON  ?= python3
# the virtualenv with afkit: AFKIT_VENV, as the scripts find it (scripts/lib/common.sh afkit_venv)
VENV    ?= $(or $(AFKIT_VENV),.venv)
TESTBED ?= bubblewrap
export TESTBED
AFKIT_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/afkit

.PHONY: help deps venv lint unit bats fixture testbed testbed-down integration check test demo bench ci-local demo-federation clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

deps: ## install the host's Debian packages (idempotent)
	@scripts/install-deps

venv: deps $(VENV)/.afkit-stamp ## the project virtualenv in .venv (afkit, and the testbed's package from testbed/)

$(VENV)/.afkit-stamp: pyproject.toml testbed/pyproject.toml
	@PYTHON=$(PYTHON) scripts/venv-install $(VENV)
	@touch $@

lint: venv ## shellcheck, ruff, mypy and the import contracts (lint-imports)
	@scripts/run-tests lint

unit: venv ## pytest unit tests
	@scripts/run-tests unit

bats: venv ## bats tests of the shell scripts
	@scripts/run-tests bats

fixture: deps ## generate the CVMFS fixture repositories (alice.cern.ch, sft.cern.ch) in ~/.cache/afkit/cvmfs
	@tests/fixtures/mkcvmfs

testbed: deps fixture ## build (cached) and start the site-in-a-box testbed
	@scripts/testbed build
	@scripts/testbed up

testbed-down: ## stop the testbed
	@scripts/testbed down

integration: venv ## integration tests inside the testbed (TESTBED=native: on this host)
	@scripts/run-tests integration

check: venv ## the fast tier for every commit: lint, unit, bats and one small local campaign in the testbed
	@scripts/run-tests check

test: venv ## everything: lint, unit, bats, integration; ends with the counts
	@scripts/run-tests

demo: venv ## the main job on the embedded default
	@scripts/demo

demo-federation: venv ## the testbed federation: remote vs same-site reads, cold vs warm caches (docs/federation.md)
	@scripts/demo-federation

BENCH_AREAS := image clients analysis campaign
bench: venv ## benchmarks (ratios against the reference tools, same run); 'make bench image' runs one area
	@scripts/bench $(filter $(BENCH_AREAS),$(MAKECMDGOALS))

# 'make bench image': the area names are arguments of bench, not targets of their own.
ifneq ($(filter bench,$(MAKECMDGOALS)),)
.PHONY: $(BENCH_AREAS)
$(BENCH_AREAS):
	@:
endif

ci-local: venv testbed ## run .gitlab-ci.yml with gitlab-ci-local in the testbed, against a local OCI registry
	@scripts/ci-local --prepare
	@scripts/ci-local $(CI_LOCAL_ARGS)

clean: ## remove build outputs (not the caches in ~/.cache/afkit)
	rm -rf build .pytest_cache .ruff_cache .mypy_cache
