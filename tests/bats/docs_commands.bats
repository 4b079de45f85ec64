#!/usr/bin/env bats
# The commands of README.md and docs/*.md that run on the host without the testbed, each exactly
# as written (tests/docs-commands.yaml lists every documented command and the test that runs it;
# docs/CONVENTIONS.md, "Commands in the docs"). As the README says, afkit and snakemake are the
# virtualenv's (. .venv/bin/activate); commands run in the repository unless the doc says otherwise.

bats_require_minimum_version 1.5.0

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  VENV=${AFKIT_VENV:-$REPO/.venv}
  PATH="$VENV/bin:$PATH"
  export PATH XRD_CONNECTIONRETRY=1
  cd "$REPO" || return
}

# doc_output FILE COMMAND : the output a console block of FILE shows under '$ COMMAND'
doc_output() {
  awk -v cmd="\$ $2" '
    /^```/ { on = 0 }
    on && /^\$ / { on = 0 }
    on { print }
    $0 == cmd { on = 1 }' "$REPO/$1"
}

# campaign_dir : a new working directory with C.yaml, a copy of the testbed's example campaign
campaign_dir() {
  cp "$REPO/workflows/config/testbed-mixed.yaml" "$BATS_TEST_TMPDIR/C.yaml"
  cd "$BATS_TEST_TMPDIR" || return
}

@test "README: make venv, then . .venv/bin/activate puts afkit and snakemake on PATH" {
  run make venv
  assert_success
  run env -i HOME="$HOME" PATH=/usr/bin:/bin bash -c '. .venv/bin/activate && command -v afkit snakemake && afkit --version'
  assert_success
  assert_line "$REPO/.venv/bin/afkit"
  assert_line "$REPO/.venv/bin/snakemake"
  assert_output --partial "afkit "
}

@test "docs/testbed.md: make deps finds the host's packages" {
  run make deps
  assert_success
  assert_output --partial "host packages"
}

@test "docs/cvmfs-fixture.md: tests/fixtures/mkcvmfs, then again: nothing to do; make fixture likewise" {
  run tests/fixtures/mkcvmfs
  assert_success
  assert_output --regexp "mkcvmfs: alice.cern.ch: (generated|up to date)"
  run tests/fixtures/mkcvmfs
  assert_success
  assert_output --partial "mkcvmfs: alice.cern.ch: up to date in $HOME/.cache/afkit/cvmfs/alice.cern.ch"
  run make fixture
  assert_success
  assert_output --partial "up to date"
}

@test "docs/campaigns.md: validate, jobs and results of C.yaml agree on the campaign" {
  campaign_dir
  # validate checks the image: here a file with a SIF header beside C.yaml (the reader's is
  # build/bench.sif, linked as C.yaml's comment says)
  sed -i 's|sif: ../../build/bench.sif .*|sif: bench.sif|' C.yaml
  assert grep -qx '  sif: bench.sif' C.yaml
  printf '#!/usr/bin/env run-singularity\n\0SIF_MAGIC\0' >bench.sif
  run afkit campaign validate C.yaml
  assert_success
  assert_output --regexp "^C.yaml: valid; campaign testbed-mixed, hash [0-9a-f]{12}, 8 jobs, results in results/testbed-mixed-v1$"
  local results=${output##* }
  run afkit campaign results C.yaml
  assert_success
  assert_output "$results"
  run afkit campaign jobs C.yaml
  assert_success
  assert_equal "${#lines[@]}" 8
  assert_line "analysis/condor.hzz.origin.direct.c1.w1.r0.i0"
}

@test "docs/campaigns.md: afkit campaign locations C.yaml shows each pair's template and URL" {
  campaign_dir
  run afkit campaign locations C.yaml
  assert_success
  assert_line --regexp "^condor +hzz +origin +wn-endpoint +root://127.0.0.1:1094//afkit-example/uproot-HZZ.root +1$"
  assert_line --regexp "^slurm +hzz +origin +wn-endpoint +root://localhost:1094//afkit-example/uproot-HZZ.root +1$"
}

@test "docs/campaigns.md: aggregate and report of C.yaml before any job ran mark every job missing" {
  campaign_dir
  run afkit campaign aggregate C.yaml
  assert_success
  assert_output --regexp "aggregate/jobs.csv: 8 jobs, 8 failed or missing$"
  run afkit campaign report C.yaml
  assert_success
  assert_output "results/testbed-mixed-v1/report/report.html"
  grep -q 'missing' "$output"
  run afkit campaign report C.yaml --grouping server
  assert_success
  assert [ -s "$output" ]
}

@test "docs/campaigns.md: the locations example prints the documented table" {
  run afkit campaign locations workflows/config/step-matrix.yaml
  assert_success
  assert_output "$(doc_output docs/campaigns.md 'afkit campaign locations workflows/config/step-matrix.yaml')"
}

@test "docs/federation.md: the federation's location matrix has the documented rows" {
  run afkit campaign locations workflows/config/federation.yaml --scenario origin
  assert_success
  local row
  while IFS= read -r row; do
    [[ $row == "..." ]] || assert_line "$row"
  done < <(doc_output docs/federation.md 'afkit campaign locations workflows/config/federation.yaml --scenario origin')
  assert_equal "${#lines[@]}" 10
}

@test "docs/campaigns.md: afkit campaign compare of two runs of one campaign says inconclusive, never worse (exit 0)" {
  cd "$BATS_TEST_TMPDIR"
  local fix=$REPO/tests/unit/campaign/fixtures/compare
  mkdir -p results/cmp-v1/aggregate results-today/cmp-v1/aggregate
  cp "$fix/base.jobs.csv" results/cmp-v1/aggregate/jobs.csv
  cp "$fix/again.jobs.csv" results-today/cmp-v1/aggregate/jobs.csv
  run afkit campaign compare results/cmp-v1 results-today/cmp-v1
  assert_success
  # the testbed's noise is wider than the 10 % tolerance: neither same nor changed
  assert_output --partial "5/5  inconclusive (jobs 5/5)"
  assert_output --partial "2 cell(s) inconclusive"
  refute_output --partial "worse"
  refute_output --partial "better"
  assert [ -s results-today/cmp-v1/report/compare.csv ]
  assert [ -s results-today/cmp-v1/report/compare.png ]
}

@test "docs/campaigns.md: the GSI extrapolation prints the documented numbers" {
  run afkit campaign extrapolate --target 10PB/24h --per-job 12.8MB/s --per-server 32GB/s
  assert_success
  assert_output "$(doc_output docs/campaigns.md 'afkit campaign extrapolate --target 10PB/24h --per-job 12.8MB/s --per-server 32GB/s')"
}

@test "docs/campaigns.md: afkit campaign config-doc rewrites workflows/config/README.md to what is committed" {
  local readme=$REPO/workflows/config/README.md
  cp "$readme" "$BATS_TEST_TMPDIR/README.md"
  run afkit campaign config-doc
  local rc=$status
  cmp -s "$readme" "$BATS_TEST_TMPDIR/README.md" && same=1 || same=0
  cp "$BATS_TEST_TMPDIR/README.md" "$readme" # the checkout as it was
  [[ $rc -eq 0 ]] || fail "config-doc exited $rc: $output"
  ((same)) || fail "the committed README differs from the schema's"
}

@test "docs/campaigns.md: from a copy of workflows/, snakemake plans, dry-runs and lints the default campaign" {
  cp -a "$REPO/workflows/" "$BATS_TEST_TMPDIR/workflows" # the folder (workflows is a link into src/afkit/data)
  cd "$BATS_TEST_TMPDIR/workflows"
  run snakemake --profile profiles/local -n
  assert_success
  assert_output --partial "This was a dry-run"
  assert_output --regexp "image +1"
  run snakemake -n
  assert_success
  assert_output --partial "This was a dry-run"
  run snakemake --lint
  assert_success
  assert_output --partial "Congratulations, your workflow is in a good condition!"
}

@test "docs/image-builder.md: afkit image name prints the documented name, reference and resource group" {
  local cmd
  for cmd in "afkit image name AliPhysics/vAN-20201018_ROOT6-1" \
    "afkit image name --ref gitlab.example.org:5050/hep/afkit AliPhysics/vAN-20201018_ROOT6-1" \
    "afkit image name --resource-group AliPhysics/vAN-20201018_ROOT6-1"; do
    run bash -c "$cmd"
    assert_success
    assert_output "$(doc_output docs/image-builder.md "$cmd")"
  done
}

@test "docs/benchmarks.md: afkit bench gen ao2d writes AO2D with ROOT and the analysis reads DF_*/O2track" {
  # ROOT on PATH: the real ROOT 6.40 the CVMFS fixture unpacked (tests/fixtures/cvmfsfix/upstream.py)
  PATH="${AFKIT_UPSTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/afkit/upstream}/root-0.1a12/tree/ROOT/bin:$PATH"
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr afkit bench gen ao2d --size 8MB --outdir data --compression zstd:5
  assert_success
  assert_output --partial '"kind": "ao2d"'
  assert_output --partial '"compression": 505'
  run --separate-stderr afkit bench analysis -t 'DF_*/O2track' -b fSigned1Pt -o ao2d.jsonl data/ao2d-000.root
  assert_success
  run jq -r 'select(.type == "summary") | [.status, (.files | length), .files[0].tree] | @tsv' ao2d.jsonl
  assert_output "$(printf 'ok\t1\tDF_1000000/O2track')"
}

@test "docs/benchmarks.md: afkit storage url gives the scenario's client URL" {
  run afkit storage url xcache /store/hzz.root
  assert_success
  assert_output "root://127.0.0.1:11095//store/hzz.root"
}

@test "docs/federation.md: afkit federation figure draws the sites and links from the link file" {
  mkdir "$BATS_TEST_TMPDIR/docs"
  cd "$BATS_TEST_TMPDIR"
  run afkit federation figure docs/federation.png
  assert_success
  assert_equal "$(head -c 8 docs/federation.png | od -An -tx1 | tr -d ' \n')" 89504e470d0a1a0a
}

@test "docs/gitlab-ci.md: adding a tag: ci/lint.sh config and ci/tags.sh --profile alice" {
  run ci/lint.sh config
  assert_success
  run ci/tags.sh --profile alice
  assert_success
  assert_line "AliPhysics/vAN-20201018_ROOT6-1"
}

@test "docs/gitlab-ci.md: git push -o ci.input=... hands GitLab the pipeline input (a local receiving repo)" {
  # GitLab is not reachable here: a bare repository that, like GitLab, accepts push options
  # receives the push and records the option its hook was given.
  local remote=$BATS_TEST_TMPDIR/remote.git clone=$BATS_TEST_TMPDIR/clone
  git init -q --bare "$remote"
  git -C "$remote" config receive.advertisePushOptions true
  # shellcheck disable=SC2016 # expanded by the hook
  printf '#!/bin/sh\nprintf "%%s\\n" "$GIT_PUSH_OPTION_0" >"%s/option"\n' "$BATS_TEST_TMPDIR" >"$remote/hooks/pre-receive"
  chmod +x "$remote/hooks/pre-receive"
  git init -q -b main "$clone"
  git -C "$clone" -c user.name=t -c user.email=t@example.org commit -q --allow-empty -m tag
  git -C "$clone" remote add origin "$remote"
  git -C "$clone" push -q -u origin main
  git -C "$clone" -c user.name=t -c user.email=t@example.org commit -q --allow-empty -m 'new tag'
  cd "$clone"
  run git push -o ci.input="tags=AliPhysics/vAN-20250401_ROOT6-1"
  assert_success
  assert_equal "$(cat "$BATS_TEST_TMPDIR/option")" "ci.input=tags=AliPhysics/vAN-20250401_ROOT6-1"
}

@test "docs/CONVENTIONS.md: docsupport.py lists every documented command and the counts" {
  run .venv/bin/python tests/unit/docsupport.py
  assert_success
  assert_line "README.md:16: [fence] make demo"
  assert_output --regexp "[0-9]+ commands \([0-9]+ distinct\); tests/docs-commands.yaml: [0-9]+ exception, [0-9]+ host"
}
