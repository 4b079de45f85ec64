#!/usr/bin/env bats
# The GitLab pipeline run for real with gitlab-ci-local inside the testbed (scripts/ci-local
# --images-only): generated child pipeline, real afkit builder and validator on the fixture CVMFS,
# real Apptainer, a local docker-registry with htpasswd auth standing in for the GitLab registry.
# One small tag that exists and one that does not: the first goes through build, validate and
# publish, the second fails its build job with the builder's message without stopping the first.
# Needs (on the host, once, with the network): scripts/ci-local --prepare.

bats_require_minimum_version 1.5.0

GOOD=AliPhysics/vAN-20201018_ROOT6-1
GOOD_SFX=alice:AliPhysics:vAN-20201018_ROOT6-1
GOOD_NAME=AliPhysics_vAN-20201018_ROOT6-1
MISSING=AliPhysics/vAN-19990101_ROOT6-1
MISSING_SFX=alice:AliPhysics:vAN-19990101_ROOT6-1
PORT=5118
# the project variable the builds take their squashfs compression from (docs/gitlab-ci.md): lz4
# builds in seconds what gzip takes a minute of the 2 cores for
export AFKIT_IMAGE_COMPRESSION=lz4

setup_file() {
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  export REPO
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/ci-local-it.XXXXXX")
  export OUT
  local start=$SECONDS
  touch "$OUT/start"
  "$REPO/scripts/ci-local" --images-only --tags "$GOOD $MISSING" --port "$PORT" --keep-registry \
    --out "$OUT" >"$OUT/ci-local.out" 2>&1 && rc=0 || rc=$?
  printf '%s\n' "$rc" >"$OUT/rc"
  # how long it took is reported, not asserted: a timed test fails on a busy host without anything
  # being wrong (the pipeline took 289 s in one make test and 329 s in a busier one)
  printf '# ci-local --images-only (2 tags): %s s\n' "$((SECONDS - start))" >&3
}

teardown_file() {
  if [[ -f $OUT/registry/pid ]]; then kill "$(cat "$OUT/registry/pid")" 2>/dev/null || true; fi
  rm -rf -- "$OUT"
}

setup() {
  load "$BATS_TEST_DIRNAME/../bats/assertions"
  ART=$OUT/project/.gitlab-ci-local/artifacts
}

# job_status NAME : PASS or FAIL from the run's jobs.tsv (empty when the job did not run).
job_status() { awk -F'\t' -v j="$1" '$1 == j { print $2 }' "$OUT/jobs.tsv"; }

# artifact_dir JOB : gitlab-ci-local's artifact folder of JOB (':' is stored as 'Og').
artifact_dir() { printf '%s/%s\n' "$ART" "${1//:/Og}"; }

# registry_get PATH [ACCEPT] : GET from the local registry with the pipeline's credentials.
registry_get() {
  local user pass
  user=$(sed -n "s/^CI_REGISTRY_USER: '\(.*\)'$/\1/p" "$OUT/project/.gitlab-ci-local-variables.yml")
  pass=$(sed -n "s/^CI_JOB_TOKEN: '\(.*\)'$/\1/p" "$OUT/project/.gitlab-ci-local-variables.yml")
  curl -sSf -K - -H "Accept: ${2:-*/*}" "http://127.0.0.1:$PORT/$1" <<<"user = \"$user:$pass\""
}

@test "ci-local ran the pipeline and reported the failed tag (exit 1)" {
  tail -50 "$OUT/ci-local.out" # shown when the test fails
  assert_equal "$(cat "$OUT/rc")" 1
  assert grep -q 'a job failed' "$OUT/ci-local.out"
}

@test "generate, trigger and the good tag's build, validate and publish jobs passed" {
  cat "$OUT/jobs.tsv"
  assert_equal "$(job_status images-generate)" PASS
  assert_equal "$(job_status images)" PASS
  assert_equal "$(job_status "build:$GOOD_SFX")" PASS
  assert_equal "$(job_status "validate:$GOOD_SFX")" PASS
  assert_equal "$(job_status "publish:$GOOD_SFX")" PASS
}

@test "a pipeline that is not scheduled (gitlab-ci-local's source is 'push') has no functional job" {
  assert_equal "$(job_status "functional:$GOOD_SFX")" ""
}

@test "the missing tag failed its build with the builder's message" {
  assert_equal "$(job_status "build:$MISSING_SFX")" FAIL
  assert grep -q "build:$MISSING_SFX > afkit: error: .*vAN-19990101_ROOT6-1" "$OUT/gitlab-ci-local.log"
  assert grep -q "the build of $MISSING failed (afkit exit code 5" "$OUT/gitlab-ci-local.log"
}

@test "the missing tag's validate and publish jobs never ran" {
  assert_equal "$(job_status "validate:$MISSING_SFX")" ""
  assert_equal "$(job_status "publish:$MISSING_SFX")" ""
}

@test "the build job's artifacts are the SIF and its manifest" {
  local dir
  dir=$(artifact_dir "build:$GOOD_SFX")/out/images/$GOOD_NAME
  assert [ -s "$dir/$GOOD_NAME.sif" ]
  assert [ -s "$dir/$GOOD_NAME.json" ]
  run head -c 10 "$dir/$GOOD_NAME.sif"
  assert_output '#!/usr/bin' # a SIF starts with its launch script line
  run jq -r .compression "$dir/$GOOD_NAME.json"
  assert_output lz4 # AFKIT_IMAGE_COMPRESSION reached the builder
}

@test "the validate job's JUnit report lists the checks, none failed, and the stamp matches the SIF" {
  local dir sif
  dir=$(artifact_dir "validate:$GOOD_SFX")/out/images/$GOOD_NAME
  sif=$(artifact_dir "build:$GOOD_SFX")/out/images/$GOOD_NAME/$GOOD_NAME.sif
  run python3 - "$dir/$GOOD_NAME.junit.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suite = root if root.tag == "testsuite" else root.find("testsuite")
cases = suite.findall("testcase")
names = {f"{c.get('classname')}:{c.get('name')}" for c in cases}
assert len(cases) >= 5 and int(suite.get("tests")) == len(cases), (len(cases), suite.attrib)
assert int(suite.get("failures", 0)) == 0 and int(suite.get("errors", 0)) == 0, suite.attrib
assert "image.env:ROOTSYS" in names and "image.proof:root-config" in names, sorted(names)
assert not any(c.find("failure") is not None for c in cases)
PY
  assert_success
  assert grep -qx "sha256 $(sha256sum "$sif" | cut -d' ' -f1)" "$dir/$GOOD_NAME.validated"
}

@test "the published image: registry digest and pulled-back digest equal the built SIF's sha256" {
  local sif sha ref digest layer
  sif=$(artifact_dir "build:$GOOD_SFX")/out/images/$GOOD_NAME/$GOOD_NAME.sif
  sha=$(sha256sum "$sif" | cut -d' ' -f1)
  ref=oras://127.0.0.1:$PORT/afkit/afkit/alice/aliphysics:vAN-20201018_ROOT6-1
  # what the publish job recorded after its own pull-back comparison
  assert_equal "$(cat "$OUT/published.tsv")" "$ref"$'\t'"sha256:$sha"
  # what the registry holds, read independently of ci/publish.sh
  layer=$(registry_get v2/afkit/afkit/alice/aliphysics/manifests/vAN-20201018_ROOT6-1 \
    application/vnd.oci.image.manifest.v1+json |
    jq -r '.layers[] | select(.mediaType == "application/vnd.sylabs.sif.layer.v1.sif") | .digest')
  assert_equal "$layer" "sha256:$sha"
  digest=$(registry_get "v2/afkit/afkit/alice/aliphysics/blobs/$layer" | sha256sum | cut -d' ' -f1)
  assert_equal "$digest" "$sha"
}

# publish_setup : a copy of the published SIF and its stamp in BATS_TEST_TMPDIR, the pipeline's
# registry credentials exported; sets SIF.
publish_setup() {
  local dir vars
  dir=$(artifact_dir "build:$GOOD_SFX")/out/images/$GOOD_NAME
  SIF=$BATS_TEST_TMPDIR/$GOOD_NAME.sif
  cp "$dir/$GOOD_NAME.sif" "$SIF"
  cp "$(artifact_dir "validate:$GOOD_SFX")/out/images/$GOOD_NAME/$GOOD_NAME.validated" "$BATS_TEST_TMPDIR/"
  vars=$OUT/project/.gitlab-ci-local-variables.yml
  export CI_REGISTRY_IMAGE=127.0.0.1:$PORT/afkit/afkit AFKIT_REGISTRY_INSECURE=1
  CI_REGISTRY_USER=$(sed -n "s/^CI_REGISTRY_USER: '\(.*\)'$/\1/p" "$vars")
  CI_JOB_TOKEN=$(sed -n "s/^CI_JOB_TOKEN: '\(.*\)'$/\1/p" "$vars")
  export CI_REGISTRY_USER CI_JOB_TOKEN
}

@test "publishing the same image again is a no-op" {
  publish_setup
  run "$REPO/ci/publish.sh" --profile alice --tag "$GOOD" "$SIF"
  assert_success
  assert_output --partial "already holds this image"
  refute_output --partial pushing
}

@test "wrong credentials fail (3) before any push" {
  publish_setup
  CI_JOB_TOKEN=not-the-token run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-other "$SIF"
  assert_failure 3
  assert_output --partial "refused the credentials"
  run registry_get v2/afkit/afkit/alice/aliphysics/tags/list
  assert_success
  refute_output --partial vAN-other
}

@test "nothing was written into the checkout: the pipeline ran in its own copy" {
  run find "$REPO" -maxdepth 3 -newer "$OUT/start" \( -name .gitlab-ci-local -o -name child-pipeline.yml \
    -o -name "$GOOD_NAME.*" \) -not -path "$REPO/build/*"
  assert_success
  assert_output ""
  assert [ -d "$OUT/project/.git" ]
  assert [ -d "$OUT/project/.gitlab-ci-local" ]
}

# run_dir OUTPUT : the run directory scripts/ci-local named in its OUTPUT ("... logs in DIR")
run_dir() { sed -n 's/^ci-local: jobs: .*; logs in \(.*\)$/\1/p' <<<"$1" | tail -n1; }

# The documented command lines as written, from the repository; each removes the run directory it
# made (~200 MB per image).
@test "docs/gitlab-ci.md: scripts/ci-local --images-only publishes the one small default tag" {
  cd "$REPO"
  run scripts/ci-local --images-only
  local dir
  dir=$(run_dir "$output")
  [[ -n $dir && $dir == "$REPO"/build/ci-local/run-* ]] || { echo "$output"; return 1; }
  local jobs
  jobs=$(cat "$dir/jobs.tsv")
  rm -rf -- "$dir"
  assert_success
  assert_regex "$jobs" "publish:$GOOD_SFX"$'\t'"PASS"
  refute_regex "$jobs" FAIL
}

@test "docs/gitlab-ci.md: scripts/ci-local --images-only --profile lcg publishes the LCG view; its jobs run the ci scripts as documented" {
  cd "$REPO"
  run scripts/ci-local --images-only --profile lcg
  local dir child
  dir=$(run_dir "$output")
  [[ -n $dir && $dir == "$REPO"/build/ci-local/run-* ]] || { echo "$output"; return 1; }
  child=$(cat "$dir/project/out/child-pipeline.yml")
  local jobs
  jobs=$(cat "$dir/jobs.tsv")
  rm -rf -- "$dir"
  assert_success
  assert_regex "$jobs" "build:lcg:LCG_105"$'\t'"PASS"
  assert_regex "$jobs" "publish:lcg:LCG_105"$'\t'"PASS"
  refute_regex "$jobs" FAIL
  # docs/gitlab-ci.md's job lines (P, T, DIR, IMAGE.sif: the job's variables), which passed above
  # shellcheck disable=SC2016 # the variables are the job's, expanded by the runner
  grep -qF -- 'ci/build.sh --profile "$AFKIT_PROFILE" --tag "$AFKIT_TAG" --output "$AFKIT_IMAGE_DIR"' <<<"$child"
  # shellcheck disable=SC2016
  grep -qF -- 'ci/validate.sh --profile "$AFKIT_PROFILE" --fingerprint "" "$AFKIT_IMAGE_DIR/$AFKIT_IMAGE_NAME.sif"' <<<"$child"
  # shellcheck disable=SC2016
  grep -qF -- 'ci/publish.sh --profile "$AFKIT_PROFILE" --tag "$AFKIT_TAG" "$AFKIT_IMAGE_DIR/$AFKIT_IMAGE_NAME.sif"' <<<"$child"
}

@test "docs/gitlab-ci.md: scripts/ci-local -- --list lists the whole pipeline's jobs" {
  cd "$REPO"
  run scripts/ci-local -- --list
  local dir
  dir=$(run_dir "$output")
  [[ -n $dir && $dir == "$REPO"/build/ci-local/run-* ]] && rm -rf -- "$dir"
  assert_success
  local job
  for job in lint:code lint:snakemake lint:config test images-generate images; do
    grep -qE "^$job +" <<<"$output" || { echo "no job $job in: $output"; return 1; }
  done
}
