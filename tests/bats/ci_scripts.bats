#!/usr/bin/env bats
# The GitLab CI scripts (ci/*.sh, scripts/ci-local) on the host: help, argument errors, tag lists,
# the generated child pipeline, and build/validate/publish against fakes of afkit, apptainer and
# curl (tests/bats/ci_fakes) — the real programs run in tests/integration/ci_local.bats.

bats_require_minimum_version 1.5.0

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  AFKIT_PYTHON=$(unset AFKIT_PYTHON; source "$REPO/scripts/lib/common.sh"; afkit_python)
  export AFKIT_PYTHON
  T=$BATS_TEST_TMPDIR
  export FAKE_LOG=$T/log FAKE_REG=$T/reg
  mkdir -p "$FAKE_LOG" "$FAKE_REG" "$T/images/alice"
  cp "$REPO/images/alice/profile.yaml" "$T/images/alice/profile.yaml"
  printf 'profile: alice\ntags:\n  - AliPhysics/vAN-1\n  - O2Physics/daily-2\n' >"$T/images/alice/tags.yaml"
  unset AFKIT_TAGS AFKIT_PROFILE AFKIT_BASE CI_REGISTRY_IMAGE CI_REGISTRY_USER CI_JOB_TOKEN \
    AFKIT_REGISTRY_USER AFKIT_REGISTRY_PASSWORD AFKIT_REGISTRY_INSECURE AFKIT_SIGNING_KEY AFKIT_SIGNING_PASSPHRASE \
    AFKIT_VERIFY_FINGERPRINT AFKIT_VERIFY_KEY AFKIT_FUNCTIONAL_STORE AFKIT_FUNCTIONAL_CAMPAIGN AFKIT_BASELINE
}

# with_fakes : put the fake afkit/apptainer/curl first on PATH.
with_fakes() { export PATH="$REPO/tests/bats/ci_fakes:$PATH"; }

# a_validated_image NAME : T/NAME.sif with a matching validation stamp.
a_validated_image() {
  printf 'image %s\n' "$1" >"$T/$1.sif"
  printf 'sha256 %s\nimage %s.sif\n' "$(sha256sum "$T/$1.sif" | cut -d' ' -f1)" "$1" >"$T/$1.validated"
}

# lcg_images : the lcg profile in T/images with a tag list holding a tag of another shape.
lcg_images() {
  mkdir -p "$T/images/lcg"
  cp "$REPO/images/lcg/profile.yaml" "$T/images/lcg/"
  printf 'profile: lcg\ntags: [LCG_105, AliPhysics/v1]\n' >"$T/images/lcg/tags.yaml"
}

# cicfg_check [ARGS...] : ci/cicfg.py check of T/images.
cicfg_check() { "$AFKIT_PYTHON" "$REPO/ci/cicfg.py" check --images "$T/images" "$@"; }

publish_env() {
  with_fakes
  export CI_REGISTRY_IMAGE=registry.example.org/afkit/afkit CI_REGISTRY_USER=ci-bot CI_JOB_TOKEN=tok-S3cr3t-value
  printf 'ci-bot' >"$FAKE_REG/user"
  printf 'tok-S3cr3t-value' >"$FAKE_REG/password"
  export TMPDIR=$T/tmp
  mkdir -p "$TMPDIR"
}

# --- help and usage -------------------------------------------------------------------------

@test "every ci script and scripts/ci-local answers --help with its usage and exit codes" {
  local s
  for s in ci/tags.sh ci/generate.sh ci/build.sh ci/validate.sh ci/publish.sh ci/functional.sh ci/lint.sh ci/venv.sh scripts/ci-local; do
    echo "# $s --help"
    run "$REPO/$s" --help
    assert_success
    assert_output --regexp '^Usage:'
    assert_output --partial "Exit codes"
  done
}

@test "unknown options are usage errors (2) naming the option" {
  local s
  for s in ci/tags.sh ci/generate.sh ci/build.sh ci/validate.sh ci/publish.sh ci/functional.sh ci/venv.sh scripts/ci-local; do
    echo "# $s --no-such-option"
    run "$REPO/$s" --no-such-option
    assert_failure 2
    assert_output --partial "--no-such-option"
  done
}

@test "lint.sh: an unknown check is a usage error (2) naming it" {
  run "$REPO/ci/lint.sh" nonsense
  assert_failure 2
  assert_output --partial "unknown check 'nonsense'"
}

@test "build.sh without --output is a usage error (2)" {
  run "$REPO/ci/build.sh" --profile alice --tag AliPhysics/vAN-1
  assert_failure 2
  assert_output --partial "--output are required"
}

@test "build.sh: --output without its value is a usage error (2)" {
  run "$REPO/ci/build.sh" --profile alice --tag AliPhysics/vAN-1 --output
  assert_failure 2
  assert_output --partial "--output needs a value"
}

@test "generate.sh without --output is a usage error (2)" {
  run "$REPO/ci/generate.sh"
  assert_failure 2
  assert_output --partial "--output FILE is required"
}

@test "validate.sh without an image is a usage error (2)" {
  run "$REPO/ci/validate.sh"
  assert_failure 2
  assert_output --partial "no image given"
}

@test "publish.sh without CI_REGISTRY_IMAGE is a usage error (2)" {
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/x.sif"
  assert_failure 2
  assert_output --partial "CI_REGISTRY_IMAGE"
}

@test "lint.sh without a check is a usage error (2)" {
  run "$REPO/ci/lint.sh"
  assert_failure 2
}

@test "scripts/ci-local: a privileged port is a usage error (2)" {
  run "$REPO/scripts/ci-local" --port 80
  assert_failure 2
  assert_output --partial "bad port '80'"
}

@test "scripts/ci-local: a port that is not a number is a usage error (2)" {
  run "$REPO/scripts/ci-local" --port 5x
  assert_failure 2
}

@test "scripts/ci-local: --tags and --all-tags together are a usage error (2)" {
  run "$REPO/scripts/ci-local" --tags A/b --all-tags
  assert_failure 2
  assert_output --partial "exclude each other"
}

# --- tag lists --------------------------------------------------------------------------------

@test "tags.sh prints the tag list of the profile in order" {
  run --separate-stderr "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  assert_success
  assert_output $'AliPhysics/vAN-1\nO2Physics/daily-2'
}

@test "tags.sh: AFKIT_TAGS overrides the list (blanks, commas, newlines)" {
  AFKIT_TAGS=$'A/b, C/d\nE/f  G/h' run --separate-stderr "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  assert_success
  assert_output $'A/b\nC/d\nE/f\nG/h'
}

@test "tags.sh: a blank AFKIT_TAGS means the profile's list" {
  AFKIT_TAGS='  ' run --separate-stderr "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  assert_success
  assert_output $'AliPhysics/vAN-1\nO2Physics/daily-2'
}

@test "tags.sh: a tag outside the profile's pattern in AFKIT_TAGS is invalid (6) and named" {
  AFKIT_TAGS='A/b justaword' run "$REPO/ci/tags.sh" --images "$T/images"
  assert_failure 6
  assert_output --partial "tag 'justaword' does not match the profile's pattern"
}

@test "tags.sh: a tag of three parts in AFKIT_TAGS is invalid (6) and named" {
  AFKIT_TAGS='A/b/c' run "$REPO/ci/tags.sh" --images "$T/images"
  assert_failure 6
  assert_output --partial "bad tag 'A/b/c'"
}

@test "tags.sh: a tag listed twice in AFKIT_TAGS is invalid (6)" {
  AFKIT_TAGS='A/b A/b' run "$REPO/ci/tags.sh" --images "$T/images"
  assert_failure 6
  assert_output --partial "listed twice"
}

@test "tags.sh: a tag with shell characters in AFKIT_TAGS is invalid (6)" {
  AFKIT_TAGS='A/b;rm' run "$REPO/ci/tags.sh" --images "$T/images"
  assert_failure 6
}

@test "tags.sh: no tag list is not found (5), naming AFKIT_TAGS" {
  run "$REPO/ci/tags.sh" --images "$T/images" --profile lcg
  assert_failure 5
  assert_output --partial "no tag list for profile 'lcg'"
  assert_output --partial AFKIT_TAGS
}

@test "tags.sh: a tag list of another profile is invalid (6)" {
  printf 'profile: lcg\ntags: [A/b]\n' >"$T/images/alice/tags.yaml"
  run "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  assert_failure 6
  assert_output --partial "profile is 'lcg'"
}

@test "tags.sh: an empty tag list is invalid (6)" {
  printf 'profile: alice\ntags: []\n' >"$T/images/alice/tags.yaml"
  run "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  assert_failure 6
  assert_output --partial "tags"
}

@test "tags.sh: an unknown key in the tag list is invalid (6) and named" {
  printf 'profile: alice\ntags: [A/b]\nextra: 1\n' >"$T/images/alice/tags.yaml"
  run "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  assert_failure 6
  assert_output --partial "extra"
}

@test "tags.sh: a tag list that is not YAML is invalid (6)" {
  printf 'profile: [alice\n' >"$T/images/alice/tags.yaml"
  run "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  assert_failure 6
  assert_output --partial "not valid YAML"
}

@test "tags.sh: a profile name that is a path is a usage error (2)" {
  run "$REPO/ci/tags.sh" --images "$T/images" --profile '../etc'
  assert_failure 2
}

@test "the repository's alice tag list is valid and lists fixture tags" {
  run --separate-stderr "$REPO/ci/tags.sh" --profile alice
  assert_success
  assert_output --partial "AliPhysics/vAN-20201018_ROOT6-1"
}

@test "the repository's lcg tag list is valid and lists LCG_105" {
  run --separate-stderr "$REPO/ci/tags.sh" --profile lcg
  assert_success
  assert_output LCG_105
}

@test "one-word tags (LCG): a tag of another shape in the list is invalid (6) and named" {
  lcg_images
  run "$REPO/ci/tags.sh" --images "$T/images" --profile lcg
  assert_failure 6
  assert_output --partial "'AliPhysics/v1' does not match the profile's pattern"
}

@test "one-word tags (LCG): their jobs are named after the profile" {
  lcg_images
  AFKIT_TAGS=LCG_105 run "$REPO/ci/generate.sh" --images "$T/images" --profile lcg --output "$T/c.yml"
  assert_success
  assert grep -q '^build:lcg:LCG_105:' "$T/c.yml"
  assert grep -q 'AFKIT_IMAGE_NAME: LCG_105' "$T/c.yml"
}

# --- child pipeline -----------------------------------------------------------------------------

@test "generate.sh writes one independent build -> validate -> publish chain per tag" {
  run "$REPO/ci/generate.sh" --images "$T/images" --output "$T/out/child.yml"
  assert_success
  run "$AFKIT_PYTHON" - "$T/out/child.yml" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
assert d["stages"] == ["build", "validate", "publish"], d["stages"]
assert d["default"]["tags"] == ["apptainer", "cvmfs"]
for sfx in ("alice:AliPhysics:vAN-1", "alice:O2Physics:daily-2"):
    b, v, p = d[f"build:{sfx}"], d[f"validate:{sfx}"], d[f"publish:{sfx}"]
    assert [n["job"] for n in v["needs"]] == [f"build:{sfx}"]
    assert [n["job"] for n in p["needs"]] == [f"build:{sfx}", f"validate:{sfx}"]
    assert "junit" in v["artifacts"]["reports"] and v["artifacts"]["when"] == "always"
    assert any(a.endswith(".sif") for a in b["artifacts"]["paths"])
    assert any(a.endswith(".json") for a in b["artifacts"]["paths"])
    rules = [r["if"] for r in p["rules"]]
    assert "$CI_COMMIT_TAG" in rules and "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH" in rules, rules
    assert p["rules"][0] == {"if": '$AFKIT_PUBLISH == "never"', "when": "never"}
assert d["build:alice:AliPhysics:vAN-1"]["variables"]["AFKIT_IMAGE_NAME"] == "AliPhysics_vAN-1"
print(len([k for k in d if ":" in k]))
PY
  assert_success
  assert_output 6
  run ls -A "$T/out"
  assert_output child.yml
}

@test "generate.sh: a scheduled pipeline gets a functional job after each publish" {
  run "$REPO/ci/generate.sh" --images "$T/images" --scheduled true --output "$T/s.yml"
  assert_success
  assert_output --partial "functional tests: after-publish"
  run grep -c '^functional:alice:AliPhysics:vAN-1:' "$T/s.yml"
  assert_output 1
  run grep -c '^publish:alice:AliPhysics:vAN-1:' "$T/s.yml"
  assert_output 1
}

@test "generate.sh: jobs=functional writes only the functional jobs" {
  run "$REPO/ci/generate.sh" --images "$T/images" --jobs functional --scheduled false --output "$T/f.yml"
  assert_success
  assert_output --partial "functional tests: only"
  run grep -c '^functional:alice:O2Physics:daily-2:' "$T/f.yml"
  assert_output 1
  run grep -c '^build:' "$T/f.yml"
  assert_output 0
}

@test "generate.sh: a pipeline that is not scheduled has no functional job" {
  run "$REPO/ci/generate.sh" --images "$T/images" --output "$T/n.yml"
  assert_success
  run grep -c '^functional:' "$T/n.yml"
  assert_output 0
}

@test "generate.sh: a bad --scheduled value is a usage error (2) and writes nothing" {
  run "$REPO/ci/generate.sh" --images "$T/images" --scheduled maybe --output "$T/x.yml"
  assert_failure 2
  run test -e "$T/x.yml"
  assert_failure
}

@test "generate.sh: --tags (the pipeline's input) wins over AFKIT_TAGS" {
  AFKIT_TAGS='Env/one' run "$REPO/ci/generate.sh" --images "$T/images" --tags 'Input/one' --output "$T/a.yml"
  assert_success
  assert grep -q '^build:alice:Input:one:' "$T/a.yml"
  refute grep -q 'Env/one' "$T/a.yml"
}

@test "generate.sh: empty --tags and --profile mean the defaults" {
  AFKIT_TAGS='Env/one' run "$REPO/ci/generate.sh" --images "$T/images" --profile '' --tags '' --output "$T/b.yml"
  assert_success
  assert grep -q '^build:alice:Env:one:' "$T/b.yml"
}

@test "generate.sh honours AFKIT_TAGS" {
  AFKIT_TAGS='Only/one' run "$REPO/ci/generate.sh" --images "$T/images" --output "$T/out/child.yml"
  assert_success
  assert grep -q '^build:alice:Only:one:' "$T/out/child.yml"
  refute grep -q 'AliPhysics/vAN-1' "$T/out/child.yml"
}

@test "generate.sh leaves no file behind on a bad tag (6)" {
  AFKIT_TAGS='Bad' run "$REPO/ci/generate.sh" --images "$T/images" --output "$T/out2/child.yml"
  assert_failure 6
  assert [ ! -e "$T/out2/child.yml" ]
}

@test "the repository's .gitlab-ci.yml: stages, one-line jobs calling ci/, trigger of the generated child" {
  run "$AFKIT_PYTHON" - "$REPO/.gitlab-ci.yml" <<'PY'
import sys, yaml
d = list(yaml.safe_load_all(open(sys.argv[1])))[-1]  # after the 'spec: inputs' header
assert d["stages"] == ["lint", "test", "build", "validate", "publish"]
jobs = {k: v for k, v in d.items() if isinstance(v, dict) and not k.startswith(".") and k not in ("variables", "default")}
assert set(jobs) >= {"lint:code", "lint:snakemake", "lint:config", "test", "images-generate", "images"}, set(jobs)
for name, job in jobs.items():
    if "trigger" in job:
        inc = job["trigger"]["include"][0]
        assert inc == {"artifact": "out/child-pipeline.yml", "job": "images-generate"}, inc
        assert job["trigger"]["strategy"] == "depend"
        continue
    assert 1 <= len(job["script"]) <= 2, name
    assert all(s.startswith(("ci/", "scripts/")) for s in job["script"]), name
print("ok")
PY
  assert_success
  assert_output ok
}

# --- lint config --------------------------------------------------------------------------------

@test "cicfg check: valid profiles and tag lists pass" {
  run cicfg_check --profile-schema "$REPO/src/afkit/image/profile.schema.json"
  assert_success
}

@test "cicfg check: a tag outside the profile's pattern fails (6) naming it" {
  printf 'profile: alice\ntags:\n  - AliPhysics/vAN-1\n  - A/b/c\n' >"$T/images/alice/tags.yaml"
  run cicfg_check --profile-schema "$REPO/src/afkit/image/profile.schema.json"
  assert_failure 6
  assert_output --partial "A/b/c"
}

@test "cicfg check: a tag list without its profile fails (6) naming the missing profile.yaml" {
  mkdir -p "$T/images/orphan"
  printf 'profile: orphan\ntags: [A/b]\n' >"$T/images/orphan/tags.yaml"
  run cicfg_check
  assert_failure 6
  assert_output --regexp 'no .*orphan/profile\.yaml'
}

@test "lint.sh config passes on the repository" {
  run "$REPO/ci/lint.sh" config
  assert_success
  assert_output --partial "valid"
}

# --- build --------------------------------------------------------------------------------------

@test "build.sh calls the builder with the profile, tag, name, base, and prints the SIF" {
  with_fakes
  AFKIT_BASE=localimage:/b.sif run --separate-stderr "$REPO/ci/build.sh" --profile alice --tag AliPhysics/vAN-1 --output "$T/o"
  assert_success
  assert_output "$T/o/AliPhysics_vAN-1.sif"
  assert grep -qx "afkit image build --profile alice --tag AliPhysics/vAN-1 --output $T/o --name AliPhysics_vAN-1 -y --no-validate --base localimage:/b.sif" "$FAKE_LOG/argv"
  assert [ -s "$T/o/AliPhysics_vAN-1.json" ]
}

@test "build.sh passes AFKIT_IMAGE_COMPRESSION to the builder as --compression" {
  with_fakes
  AFKIT_IMAGE_COMPRESSION=lz4 run --separate-stderr "$REPO/ci/build.sh" --profile alice --tag AliPhysics/vAN-1 --output "$T/o"
  assert_success
  assert grep -qx "afkit image build --profile alice --tag AliPhysics/vAN-1 --output $T/o --name AliPhysics_vAN-1 -y --no-validate --compression lz4" "$FAKE_LOG/argv"
}

@test "build.sh: an unknown tag fails with the builder's message and exit code (5)" {
  with_fakes
  run "$REPO/ci/build.sh" --profile alice --tag Missing/v1 --output "$T/o"
  assert_failure 5
  assert_output --partial "afkit: error: unknown tag Missing/v1"
  assert_output --partial "the build of Missing/v1 failed"
}

@test "build.sh: a builder that leaves no SIF is a failure (1)" {
  with_fakes
  FAKE_BUILD_NO_OUTPUT=1 run "$REPO/ci/build.sh" --profile alice --tag AliPhysics/vAN-1 --output "$T/o"
  assert_failure 1
  assert_output --partial "did not write"
}

@test "build.sh: a bad tag is refused (2) before the builder runs" {
  with_fakes
  run "$REPO/ci/build.sh" --profile alice --tag 'x;y' --output "$T/o"
  assert_failure 2
  assert_output --partial "bad tag"
  assert [ ! -e "$FAKE_LOG/argv" ]
}

@test "build.sh: an output path with .. is refused (4) before the builder runs" {
  with_fakes
  run "$REPO/ci/build.sh" --profile alice --tag A/b --output "$T/../../x"
  assert_failure 4
  assert [ ! -e "$FAKE_LOG/argv" ]
}

# --- validate -----------------------------------------------------------------------------------

@test "validate.sh: a valid image gets a stamp with its sha256 and a JUnit report" {
  with_fakes
  printf 'img' >"$T/a.sif"
  run "$REPO/ci/validate.sh" --profile alice "$T/a.sif"
  assert_success
  assert grep -qx "sha256 $(sha256sum "$T/a.sif" | cut -d' ' -f1)" "$T/a.validated"
  assert grep -q 'proof:root-config' "$T/a.junit.xml"
  assert grep -qx "afkit image validate $T/a.sif --junit $T/a.junit.xml --profile alice" "$FAKE_LOG/argv"
}

@test "validate.sh: a failed validation exits 6, removes an old stamp, keeps the report" {
  with_fakes
  printf 'img' >"$T/a.sif"
  printf 'sha256 old\n' >"$T/a.validated"
  FAKE_VALIDATE_RC=6 run "$REPO/ci/validate.sh" "$T/a.sif"
  assert_failure 6
  assert_output --partial "will not be published"
  assert [ ! -e "$T/a.validated" ]
  assert grep -q 'failures="1"' "$T/a.junit.xml"
}

@test "validate.sh: a validator crash still leaves a failing JUnit report" {
  with_fakes
  printf 'img' >"$T/a.sif"
  FAKE_VALIDATE_RC=1 FAKE_VALIDATE_NO_JUNIT=1 run "$REPO/ci/validate.sh" "$T/a.sif"
  assert_failure 1
  assert grep -q '<failure message="afkit image validate exited with 1"/>' "$T/a.junit.xml"
}

@test "validate.sh: a missing image is not found (5)" {
  with_fakes
  run "$REPO/ci/validate.sh" "$T/none.sif"
  assert_failure 5
}

# --- publish ------------------------------------------------------------------------------------

@test "publish.sh pushes, reads the digest back, pulls and compares, records the result" {
  publish_env
  a_validated_image img
  local sha
  sha=$(sha256sum "$T/img.sif" | cut -d' ' -f1)
  run --separate-stderr "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_success
  assert_output "oras://registry.example.org/afkit/afkit/alice/aliphysics:vAN-1 sha256:$sha"
  assert grep -q '^apptainer push --authfile .* '"$T/img.sif"' oras://registry.example.org/afkit/afkit/alice/aliphysics:vAN-1$' "$FAKE_LOG/argv"
  assert grep -q '^apptainer pull ' "$FAKE_LOG/argv"
  assert grep -qx "digest sha256:$sha" "$T/img.published"
  assert_equal "$(cat "$FAKE_REG/manifests/afkit/afkit/alice/aliphysics/vAN-1")" "sha256:$sha"
}

@test "publish.sh with AFKIT_SIGNING_KEY pushes a signed copy, verifies it pulled back, records the fingerprint" {
  publish_env
  a_validated_image img
  export FAKE_FINGERPRINT=0123456789ABCDEF0123456789ABCDEF01234567 AFKIT_SIGNING_KEY=$T/signing.asc
  printf 'private key\n' >"$AFKIT_SIGNING_KEY"
  local unsigned pushed
  unsigned=$(sha256sum "$T/img.sif" | cut -d' ' -f1)
  run --separate-stderr "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_success
  pushed=$(cat "$FAKE_REG/manifests/afkit/afkit/alice/aliphysics/vAN-1")
  assert_not_equal "$pushed" "sha256:$unsigned"
  assert grep -qx "signature $FAKE_FINGERPRINT" "$FAKE_REG/blobs/${pushed#sha256:}"
  assert_equal "$(sha256sum "$T/img.sif" | cut -d' ' -f1)" "$unsigned"
  assert grep -qx "digest $pushed" "$T/img.published"
  assert grep -qx "fingerprint $FAKE_FINGERPRINT" "$T/img.published"
  assert grep -q "^afkit image verify --fingerprint $FAKE_FINGERPRINT .*/pulled.sif$" "$FAKE_LOG/argv"
}

@test "publish.sh never puts the token on a command line or in its output" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_success
  refute_output --partial tok-S3cr3t-value
  refute grep -q 'tok-S3cr3t-value' "$FAKE_LOG/argv"
  # ... but it did reach apptainer (stdin) and curl (config on stdin)
  assert_equal "$(cat "$FAKE_LOG/login.stdin")" tok-S3cr3t-value
  assert grep -qF 'user = "ci-bot:tok-S3cr3t-value"' "$FAKE_LOG/curl.stdin"
  # and the private auth files are gone
  run ls -A "$TMPDIR"
  assert_success
  assert_output ""
}

@test "publish.sh: the same image already under the tag is a no-op (no push)" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_success
  : >"$FAKE_LOG/argv"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_success
  assert_output --partial "already holds this image"
  refute grep -q '^apptainer ' "$FAKE_LOG/argv"
}

@test "publish.sh: a different image under the tag is replaced, and says so" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_success
  a_validated_image img2
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img2.sif"
  assert_success
  assert_output --regexp 'holds sha256:.*replacing it'
  assert_equal "$(cat "$FAKE_REG/manifests/afkit/afkit/alice/aliphysics/vAN-1")" "sha256:$(sha256sum "$T/img2.sif" | cut -d' ' -f1)"
}

@test "publish.sh: no validation stamp means no publish (6)" {
  publish_env
  printf 'image\n' >"$T/img.sif"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_failure 6
  assert_output --partial "no validation stamp"
  assert [ ! -e "$FAKE_LOG/argv" ]
}

@test "publish.sh: a stamp of another image means no publish (6)" {
  publish_env
  printf 'image\n' >"$T/img.sif"
  printf 'sha256 %064d\n' 0 >"$T/img.validated"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_failure 6
  assert_output --partial "not the image that was validated"
  assert [ ! -e "$FAKE_LOG/argv" ]
}

@test "publish.sh: an unreachable registry fails (3) before anything is pushed" {
  publish_env
  a_validated_image img
  touch "$FAKE_REG/down"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_failure 3
  assert_output --partial "unreachable"
  refute grep -q '^apptainer ' "$FAKE_LOG/argv"
}

@test "publish.sh: refused credentials fail (3) before anything is pushed" {
  publish_env
  a_validated_image img
  CI_JOB_TOKEN=wrong run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_failure 3
  assert_output --partial "refused the credentials"
  refute_output --partial wrong
  refute grep -q '^apptainer ' "$FAKE_LOG/argv"
  assert [ ! -d "$FAKE_REG/manifests" ]
}

@test "publish.sh: an image that comes back different is deleted again and fails (1)" {
  publish_env
  a_validated_image img
  touch "$FAKE_REG/corrupt_pull"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_failure 1
  assert_output --partial "differs"
  assert grep -q '^curl DELETE .*/v2/afkit/afkit/alice/aliphysics/manifests/sha256:' "$FAKE_LOG/argv"
  assert [ ! -e "$FAKE_REG/manifests/afkit/afkit/alice/aliphysics/vAN-1" ]
  assert [ ! -e "$T/img.published" ]
}

@test "publish.sh: a failed push fails (1) and leaves the tag untouched" {
  publish_env
  a_validated_image img
  touch "$FAKE_REG/push_fails"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_failure 1
  assert_output --regexp 'apptainer push.*failed'
  assert [ ! -e "$FAKE_REG/manifests/afkit/afkit/alice/aliphysics/vAN-1" ]
}

@test "publish.sh: a user without a password is a usage error (2)" {
  publish_env
  a_validated_image img
  CI_JOB_TOKEN='' run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_failure 2
  assert_output --partial "without a password"
}

@test "publish.sh: a bad registry image is a usage error (2)" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --registry-image 'host/a b' --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_failure 2
  assert_output --partial "bad registry image"
}

@test "publish.sh never sends the job token to another --registry-image (4)" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --registry-image other.example.org/x --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_failure 4
  assert_output --partial "refusing to send the job token to other.example.org/x"
  assert [ ! -e "$FAKE_LOG/argv" ]
  assert [ ! -e "$FAKE_LOG/curl.stdin" ]
}

@test "publish.sh never sends the job token to a registry other than CI_REGISTRY (4)" {
  publish_env
  a_validated_image img
  CI_REGISTRY=elsewhere.example.org run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_failure 4
  assert [ ! -e "$FAKE_LOG/argv" ]
  assert [ ! -e "$FAKE_LOG/curl.stdin" ]
}

@test "publish.sh: AFKIT_REGISTRY_* credentials publish to AFKIT_REGISTRY_IMAGE, not the job token" {
  publish_env
  a_validated_image img
  printf 'other-bot' >"$FAKE_REG/user"
  printf 'other-pass' >"$FAKE_REG/password"
  AFKIT_REGISTRY_IMAGE=registry.example.org/other AFKIT_REGISTRY_USER=other-bot AFKIT_REGISTRY_PASSWORD=other-pass \
    run --separate-stderr "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_success
  assert_output --regexp '^oras://registry\.example\.org/other/alice/aliphysics:vAN-1 sha256:'
  refute grep -q 'tok-S3cr3t-value' "$FAKE_LOG/curl.stdin" "$FAKE_LOG/login.stdin"
}

@test "publish.sh --dry-run checks the registry and pushes nothing" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --dry-run --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  assert_success
  assert_output --partial "would push"
  refute grep -q '^apptainer ' "$FAKE_LOG/argv"
}

functional_args=(--profile alice --tag AliPhysics/vAN-1 --baseline alice/aliphysics --out)

@test "functional.sh without --baseline is a usage error (2)" {
  run "$REPO/ci/functional.sh" --profile alice --tag AliPhysics/vAN-1 --out "$T/f"
  assert_failure 2
  assert_output --partial "--baseline and --out are required"
}

@test "functional.sh without a baseline store is refused (3)" {
  run "$REPO/ci/functional.sh" "${functional_args[@]}" "$T/f"
  assert_failure 3
  assert_output --partial "no baseline store: set AFKIT_FUNCTIONAL_STORE"
}

@test "functional.sh: a missing campaign file is refused (5)" {
  AFKIT_FUNCTIONAL_STORE=$T/store CI_REGISTRY_IMAGE=registry.example.org/afkit/afkit \
    run "$REPO/ci/functional.sh" "${functional_args[@]}" "$T/f" --campaign "$T/none.yaml"
  assert_failure 5
  assert_output --partial "no functional campaign $T/none.yaml"
}

@test "functional.sh without a signer's fingerprint is a usage error (2)" {
  AFKIT_FUNCTIONAL_STORE=$T/store CI_REGISTRY_IMAGE=registry.example.org/afkit/afkit \
    run "$REPO/ci/functional.sh" "${functional_args[@]}" "$T/f"
  assert_failure 2
  assert_output --partial "set AFKIT_VERIFY_FINGERPRINT"
}

@test "functional.sh refuses a baseline name that leaves the store (4)" {
  AFKIT_FUNCTIONAL_STORE=$T/store CI_REGISTRY_IMAGE=registry.example.org/afkit/afkit \
    run "$REPO/ci/functional.sh" --profile alice --tag AliPhysics/vAN-1 --baseline ../etc --out "$T/f"
  assert_failure 4
  assert_output --partial "refusing baseline name '../etc'"
}

@test "functional.sh without a publish record is refused (5) and writes nothing" {
  AFKIT_FUNCTIONAL_STORE=$T/store CI_REGISTRY_IMAGE=registry.example.org/afkit/afkit \
    run "$REPO/ci/functional.sh" "${functional_args[@]}" "$T/f" --published "$T/none.published"
  assert_failure 5
  assert_output --partial "no publish record"
  refute [ -e "$T/store" ]
  refute [ -e "$T/f" ]
}

@test "functional.sh never sends the job token to another registry than the project's (4)" {
  publish_env
  printf 'ref oras://elsewhere.example.org/x/alice/aliphysics:vAN-1\ndigest sha256:%064d\nfingerprint %s\n' 0 "$(printf 'A%.0s' {1..40})" >"$T/r.published"
  run "$REPO/ci/functional.sh" --profile alice --tag AliPhysics/vAN-1 --baseline alice/aliphysics --out "$T/f" \
    --store "$T/store" --published "$T/r.published"
  assert_failure 4
  assert_output --partial "refusing to send the job token to elsewhere.example.org"
  refute_output --partial tok-S3cr3t-value
}

@test "image references: lower-case package, version kept, oras:// prefix added once" {
  run bash -c "source '$REPO/scripts/lib/common.sh'; source '$REPO/ci/lib/ci.sh';
    ci_image_ref oras://Reg.example:5050/G/P/ alice AliPhysics/vAN-20201018_ROOT6-1
    ci_image_ref reg/x alice O2Physics/v1+b
    ci_image_name alice O2Physics/daily-1
    ci_image_ref reg/x lcg LCG_105
    ci_image_name lcg LCG_105"
  assert_success
  assert_line --index 0 oras://reg.example:5050/g/p/alice/aliphysics:vAN-20201018_ROOT6-1
  assert_line --index 1 oras://reg/x/alice/o2physics:v1_b
  assert_line --index 2 O2Physics_daily-1
  assert_line --index 3 oras://reg/x/lcg/lcg:LCG_105
  assert_line --index 4 LCG_105
}

@test "venv.sh: a runner-provided AFKIT_VENV is used as is" {
  local venv
  venv=$(dirname "$(dirname "$AFKIT_PYTHON")")
  [[ -x $venv/bin/python ]] || venv=$REPO/.venv
  AFKIT_VENV=$venv run --separate-stderr "$REPO/ci/venv.sh"
  assert_success
  assert_output "$venv"
}

@test "venv.sh: an AFKIT_VENV without python is a missing prerequisite (3)" {
  AFKIT_VENV=$T/nothing run "$REPO/ci/venv.sh"
  assert_failure 3
  assert_output --partial "has no bin/python"
}

@test "scripts/ci-local never removes the 'project' of an --out directory it did not make (exit 4)" {
  local bin=$T/bin out=$T/mine c
  mkdir -p "$bin" "$out/project"
  for c in node jq apptainer docker-registry; do printf '#!/bin/sh\nexit 0\n' >"$bin/$c"; done
  printf '#!/bin/sh\necho 4.73.0\n' >"$bin/gitlab-ci-local"
  chmod +x "$bin"/*
  printf 'precious\n' >"$out/project/thesis.tex"
  PATH="$bin:$REPO/tests/bats/ci_fakes:$PATH" AFKIT_CI_LOCAL_CACHE="$T/cache" run "$REPO/scripts/ci-local" \
    --here --out "$out" --base localimage:/nonexistent --tags A/b
  assert_failure 4
  assert_output --partial "not made by scripts/ci-local"
  assert_equal "$(cat "$out/project/thesis.tex")" precious
  assert [ ! -e "$out/.afkit-ci-local" ]
}
