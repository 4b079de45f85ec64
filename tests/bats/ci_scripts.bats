#!/usr/bin/env bats
# The GitLab CI scripts (ci/*.sh, scripts/ci-local) on the host: help, argument errors, tag lists,
# the generated child pipeline, and build/validate/publish against fakes of afkit, apptainer and
# curl (tests/bats/ci_fakes) — the real programs run in tests/integration/ci_local.bats.

bats_require_minimum_version 1.5.0

setup() {
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  export AFKIT_PYTHON="${AFKIT_VENV:-$REPO/.venv}/bin/python"
  [[ -x $AFKIT_PYTHON ]] || AFKIT_PYTHON=python3
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
    run "$REPO/$s" --help
    [[ $status -eq 0 ]] || { echo "$s --help exited $status"; return 1; }
    [[ $output == Usage:* ]] || { echo "$s: no usage"; return 1; }
    [[ $output == *"Exit codes"* ]] || { echo "$s: exit codes undocumented"; return 1; }
  done
}

@test "unknown options are usage errors (2) naming the option" {
  local s
  for s in ci/tags.sh ci/generate.sh ci/build.sh ci/validate.sh ci/publish.sh ci/functional.sh ci/venv.sh scripts/ci-local; do
    run "$REPO/$s" --no-such-option
    [[ $status -eq 2 ]] || { echo "$s exited $status"; return 1; }
    [[ $output == *"--no-such-option"* ]] || { echo "$s: $output"; return 1; }
  done
  run "$REPO/ci/lint.sh" nonsense
  [[ $status -eq 2 && $output == *"unknown check 'nonsense'"* ]]
}

@test "missing required arguments are usage errors (2)" {
  run "$REPO/ci/build.sh" --profile alice --tag AliPhysics/vAN-1
  [[ $status -eq 2 && $output == *"--output are required"* ]]
  run "$REPO/ci/generate.sh"
  [[ $status -eq 2 && $output == *"--output FILE is required"* ]]
  run "$REPO/ci/validate.sh"
  [[ $status -eq 2 && $output == *"no image given"* ]]
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/x.sif"
  [[ $status -eq 2 && $output == *"CI_REGISTRY_IMAGE"* ]]
  run "$REPO/ci/lint.sh"
  [[ $status -eq 2 ]]
  run "$REPO/ci/build.sh" --profile alice --tag AliPhysics/vAN-1 --output
  [[ $status -eq 2 && $output == *"--output needs a value"* ]]
}

@test "scripts/ci-local: bad port and contradictory tag options are usage errors" {
  run "$REPO/scripts/ci-local" --port 80
  [[ $status -eq 2 && $output == *"bad port '80'"* ]]
  run "$REPO/scripts/ci-local" --port 5x
  [[ $status -eq 2 ]]
  run "$REPO/scripts/ci-local" --tags A/b --all-tags
  [[ $status -eq 2 && $output == *"exclude each other"* ]]
}

# --- tag lists --------------------------------------------------------------------------------

@test "tags.sh prints the tag list of the profile in order" {
  run --separate-stderr "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  [[ $status -eq 0 ]]
  [[ $output == $'AliPhysics/vAN-1\nO2Physics/daily-2' ]]
}

@test "tags.sh: AFKIT_TAGS overrides the list (blanks, commas, newlines)" {
  AFKIT_TAGS=$'A/b, C/d\nE/f  G/h' run --separate-stderr "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  [[ $status -eq 0 ]]
  [[ $output == $'A/b\nC/d\nE/f\nG/h' ]]
  AFKIT_TAGS='  ' run --separate-stderr "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  [[ $output == $'AliPhysics/vAN-1\nO2Physics/daily-2' ]]
}

@test "tags.sh: a bad or duplicated tag in AFKIT_TAGS is invalid (6) and named" {
  AFKIT_TAGS='A/b justaword' run "$REPO/ci/tags.sh" --images "$T/images"
  [[ $status -eq 6 && $output == *"tag 'justaword' does not match the profile's pattern"* ]]
  AFKIT_TAGS='A/b/c' run "$REPO/ci/tags.sh" --images "$T/images"
  [[ $status -eq 6 && $output == *"bad tag 'A/b/c'"* ]]
  AFKIT_TAGS='A/b A/b' run "$REPO/ci/tags.sh" --images "$T/images"
  [[ $status -eq 6 && $output == *"listed twice"* ]]
  AFKIT_TAGS='A/b;rm' run "$REPO/ci/tags.sh" --images "$T/images"
  [[ $status -eq 6 ]]
}

@test "tags.sh: no tag list is not found (5); a wrong list is invalid (6)" {
  run "$REPO/ci/tags.sh" --images "$T/images" --profile lcg
  [[ $status -eq 5 && $output == *"no tag list for profile 'lcg'"* && $output == *AFKIT_TAGS* ]]
  printf 'profile: lcg\ntags: [A/b]\n' >"$T/images/alice/tags.yaml"
  run "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  [[ $status -eq 6 && $output == *"profile is 'lcg'"* ]]
  printf 'profile: alice\ntags: []\n' >"$T/images/alice/tags.yaml"
  run "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  [[ $status -eq 6 && $output == *"tags"* ]]
  printf 'profile: alice\ntags: [A/b]\nextra: 1\n' >"$T/images/alice/tags.yaml"
  run "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  [[ $status -eq 6 && $output == *"extra"* ]]
  printf 'profile: [alice\n' >"$T/images/alice/tags.yaml"
  run "$REPO/ci/tags.sh" --images "$T/images" --profile alice
  [[ $status -eq 6 && $output == *"not valid YAML"* ]]
  run "$REPO/ci/tags.sh" --images "$T/images" --profile '../etc'
  [[ $status -eq 2 ]]
}

@test "the repository's tag lists are valid and list fixture tags" {
  run --separate-stderr "$REPO/ci/tags.sh" --profile alice
  [[ $status -eq 0 ]]
  [[ $output == *"AliPhysics/vAN-20201018_ROOT6-1"* ]]
  run --separate-stderr "$REPO/ci/tags.sh" --profile lcg
  [[ $status -eq 0 && $output == LCG_105 ]]
}

@test "one-word tags (LCG): checked against the profile's pattern, named after the profile" {
  mkdir -p "$T/images/lcg"
  cp "$REPO/images/lcg/profile.yaml" "$T/images/lcg/"
  printf 'profile: lcg\ntags: [LCG_105, AliPhysics/v1]\n' >"$T/images/lcg/tags.yaml"
  run "$REPO/ci/tags.sh" --images "$T/images" --profile lcg
  [[ $status -eq 6 && $output == *"'AliPhysics/v1' does not match the profile's pattern"* ]]
  AFKIT_TAGS=LCG_105 run "$REPO/ci/generate.sh" --images "$T/images" --profile lcg --output "$T/c.yml"
  [[ $status -eq 0 ]]
  grep -q '^build:lcg:LCG_105:' "$T/c.yml"
  grep -q 'AFKIT_IMAGE_NAME: LCG_105' "$T/c.yml"
}

# --- child pipeline -----------------------------------------------------------------------------

@test "generate.sh writes one independent build -> validate -> publish chain per tag" {
  run "$REPO/ci/generate.sh" --images "$T/images" --output "$T/out/child.yml"
  [[ $status -eq 0 ]]
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
  [[ $status -eq 0 ]] || { echo "$output"; return 1; }
  [[ $output == 6 ]]
  run ls -A "$T/out"
  [[ $output == child.yml ]]
}

@test "generate.sh: a scheduled pipeline gets a functional job after each publish; jobs=functional only those" {
  run "$REPO/ci/generate.sh" --images "$T/images" --scheduled true --output "$T/s.yml"
  [[ $status -eq 0 && $output == *"functional tests: after-publish"* ]]
  grep -q '^functional:alice:AliPhysics:vAN-1:' "$T/s.yml"
  grep -q '^publish:alice:AliPhysics:vAN-1:' "$T/s.yml"
  run "$REPO/ci/generate.sh" --images "$T/images" --jobs functional --scheduled false --output "$T/f.yml"
  [[ $status -eq 0 && $output == *"functional tests: only"* ]]
  grep -q '^functional:alice:O2Physics:daily-2:' "$T/f.yml"
  run ! grep -q '^build:' "$T/f.yml"
  run "$REPO/ci/generate.sh" --images "$T/images" --output "$T/n.yml"
  run ! grep -q '^functional:' "$T/n.yml"
  run "$REPO/ci/generate.sh" --images "$T/images" --scheduled maybe --output "$T/x.yml"
  [[ $status -eq 2 && ! -e $T/x.yml ]]
}

@test "generate.sh: --tags (the pipeline's input) wins over AFKIT_TAGS; empty --tags and --profile mean the defaults" {
  AFKIT_TAGS='Env/one' run "$REPO/ci/generate.sh" --images "$T/images" --tags 'Input/one' --output "$T/a.yml"
  [[ $status -eq 0 ]]
  grep -q '^build:alice:Input:one:' "$T/a.yml"
  run ! grep -q 'Env/one' "$T/a.yml"
  AFKIT_TAGS='Env/one' run "$REPO/ci/generate.sh" --images "$T/images" --profile '' --tags '' --output "$T/b.yml"
  [[ $status -eq 0 ]]
  grep -q '^build:alice:Env:one:' "$T/b.yml"
}

@test "generate.sh honours AFKIT_TAGS and leaves no file behind on a bad tag" {
  AFKIT_TAGS='Only/one' run "$REPO/ci/generate.sh" --images "$T/images" --output "$T/out/child.yml"
  [[ $status -eq 0 ]]
  grep -q '^build:alice:Only:one:' "$T/out/child.yml"
  run ! grep -q 'AliPhysics/vAN-1' "$T/out/child.yml"
  AFKIT_TAGS='Bad' run "$REPO/ci/generate.sh" --images "$T/images" --output "$T/out2/child.yml"
  [[ $status -eq 6 ]]
  [[ ! -e $T/out2/child.yml ]]
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
  [[ $status -eq 0 && $output == ok ]] || { echo "$output"; return 1; }
}

# --- lint config --------------------------------------------------------------------------------

@test "cicfg check: valid profiles and tag lists pass; a tag outside the profile's pattern fails (6)" {
  run "$AFKIT_PYTHON" "$REPO/ci/cicfg.py" check --images "$T/images" --profile-schema "$REPO/src/afkit/image/profile.schema.json"
  [[ $status -eq 0 ]]
  printf 'profile: alice\ntags:\n  - AliPhysics/vAN-1\n  - A/b/c\n' >"$T/images/alice/tags.yaml"
  run "$AFKIT_PYTHON" "$REPO/ci/cicfg.py" check --images "$T/images" --profile-schema "$REPO/src/afkit/image/profile.schema.json"
  [[ $status -eq 6 && $output == *"A/b/c"* ]]
  mkdir -p "$T/images/orphan"
  printf 'profile: orphan\ntags: [A/b]\n' >"$T/images/orphan/tags.yaml"
  run "$AFKIT_PYTHON" "$REPO/ci/cicfg.py" check --images "$T/images"
  [[ $status -eq 6 && $output == *"no "*"orphan/profile.yaml"* ]]
}

@test "lint.sh config passes on the repository" {
  run "$REPO/ci/lint.sh" config
  [[ $status -eq 0 && $output == *"valid"* ]]
}

# --- build --------------------------------------------------------------------------------------

@test "build.sh calls the builder with the profile, tag, name, base, and prints the SIF" {
  with_fakes
  AFKIT_BASE=localimage:/b.sif run --separate-stderr "$REPO/ci/build.sh" --profile alice --tag AliPhysics/vAN-1 --output "$T/o"
  [[ $status -eq 0 ]]
  [[ $output == "$T/o/AliPhysics_vAN-1.sif" ]]
  grep -qx "afkit image build --profile alice --tag AliPhysics/vAN-1 --output $T/o --name AliPhysics_vAN-1 -y --no-validate --base localimage:/b.sif" "$FAKE_LOG/argv"
  [[ -s $T/o/AliPhysics_vAN-1.json ]]
}

@test "build.sh: an unknown tag fails with the builder's message and exit code (5)" {
  with_fakes
  run "$REPO/ci/build.sh" --profile alice --tag Missing/v1 --output "$T/o"
  [[ $status -eq 5 ]]
  [[ $output == *"afkit: error: unknown tag Missing/v1"* ]]
  [[ $output == *"the build of Missing/v1 failed"* ]]
}

@test "build.sh: a builder that leaves no SIF is a failure (1); bad tags and paths are refused" {
  with_fakes
  FAKE_BUILD_NO_OUTPUT=1 run "$REPO/ci/build.sh" --profile alice --tag AliPhysics/vAN-1 --output "$T/o"
  [[ $status -eq 1 && $output == *"did not write"* ]]
  rm -f "$FAKE_LOG/argv"
  run "$REPO/ci/build.sh" --profile alice --tag 'x;y' --output "$T/o"
  [[ $status -eq 2 && $output == *"bad tag"* ]]
  run "$REPO/ci/build.sh" --profile alice --tag A/b --output "$T/../../x"
  [[ $status -eq 4 ]]
  [[ ! -e $FAKE_LOG/argv ]]
}

# --- validate -----------------------------------------------------------------------------------

@test "validate.sh: a valid image gets a stamp with its sha256 and a JUnit report" {
  with_fakes
  printf 'img' >"$T/a.sif"
  run "$REPO/ci/validate.sh" --profile alice "$T/a.sif"
  [[ $status -eq 0 ]]
  grep -qx "sha256 $(sha256sum "$T/a.sif" | cut -d' ' -f1)" "$T/a.validated"
  grep -q 'proof:root-config' "$T/a.junit.xml"
  grep -qx "afkit image validate $T/a.sif --junit $T/a.junit.xml --profile alice" "$FAKE_LOG/argv"
}

@test "validate.sh: a failed validation exits 6, removes an old stamp, keeps the report" {
  with_fakes
  printf 'img' >"$T/a.sif"
  printf 'sha256 old\n' >"$T/a.validated"
  FAKE_VALIDATE_RC=6 run "$REPO/ci/validate.sh" "$T/a.sif"
  [[ $status -eq 6 && $output == *"will not be published"* ]]
  [[ ! -e $T/a.validated ]]
  grep -q 'failures="1"' "$T/a.junit.xml"
}

@test "validate.sh: a validator crash still leaves a failing JUnit report" {
  with_fakes
  printf 'img' >"$T/a.sif"
  FAKE_VALIDATE_RC=1 FAKE_VALIDATE_NO_JUNIT=1 run "$REPO/ci/validate.sh" "$T/a.sif"
  [[ $status -eq 1 ]]
  grep -q '<failure message="afkit image validate exited with 1"/>' "$T/a.junit.xml"
  run "$REPO/ci/validate.sh" "$T/none.sif"
  [[ $status -eq 5 ]]
}

# --- publish ------------------------------------------------------------------------------------

@test "publish.sh pushes, reads the digest back, pulls and compares, records the result" {
  publish_env
  a_validated_image img
  local sha
  sha=$(sha256sum "$T/img.sif" | cut -d' ' -f1)
  run --separate-stderr "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 0 ]]
  [[ $output == "oras://registry.example.org/afkit/afkit/alice/aliphysics:vAN-1 sha256:$sha" ]]
  grep -q '^apptainer push --authfile .* '"$T/img.sif"' oras://registry.example.org/afkit/afkit/alice/aliphysics:vAN-1$' "$FAKE_LOG/argv"
  grep -q '^apptainer pull ' "$FAKE_LOG/argv"
  grep -qx "digest sha256:$sha" "$T/img.published"
  [[ $(cat "$FAKE_REG/manifests/afkit/afkit/alice/aliphysics/vAN-1") == "sha256:$sha" ]]
}

@test "publish.sh with AFKIT_SIGNING_KEY pushes a signed copy, verifies it pulled back, records the fingerprint" {
  publish_env
  a_validated_image img
  export FAKE_FINGERPRINT=0123456789ABCDEF0123456789ABCDEF01234567 AFKIT_SIGNING_KEY=$T/signing.asc
  printf 'private key\n' >"$AFKIT_SIGNING_KEY"
  local unsigned pushed
  unsigned=$(sha256sum "$T/img.sif" | cut -d' ' -f1)
  run --separate-stderr "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 0 ]]
  pushed=$(cat "$FAKE_REG/manifests/afkit/afkit/alice/aliphysics/vAN-1")
  [[ $pushed != "sha256:$unsigned" ]]
  grep -qx "signature $FAKE_FINGERPRINT" "$FAKE_REG/blobs/${pushed#sha256:}"
  [[ $(sha256sum "$T/img.sif" | cut -d' ' -f1) == "$unsigned" ]]
  grep -qx "digest $pushed" "$T/img.published"
  grep -qx "fingerprint $FAKE_FINGERPRINT" "$T/img.published"
  grep -q "^afkit image verify --fingerprint $FAKE_FINGERPRINT .*/pulled.sif$" "$FAKE_LOG/argv"
}

@test "publish.sh never puts the token on a command line or in its output" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 0 ]]
  [[ $output != *tok-S3cr3t-value* ]]
  run ! grep -q 'tok-S3cr3t-value' "$FAKE_LOG/argv"
  # ... but it did reach apptainer (stdin) and curl (config on stdin)
  [[ $(cat "$FAKE_LOG/login.stdin") == tok-S3cr3t-value ]]
  grep -qF 'user = "ci-bot:tok-S3cr3t-value"' "$FAKE_LOG/curl.stdin"
  # and the private auth files are gone
  run ls -A "$TMPDIR"
  [[ $status -eq 0 && -z $output ]]
}

@test "publish.sh: the same image already under the tag is a no-op (no push)" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 0 ]]
  : >"$FAKE_LOG/argv"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 0 && $output == *"already holds this image"* ]]
  run ! grep -q '^apptainer ' "$FAKE_LOG/argv"
}

@test "publish.sh: a different image under the tag is replaced, and says so" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  a_validated_image img2
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img2.sif"
  [[ $status -eq 0 && $output == *"holds sha256:"*"replacing it"* ]]
  [[ $(cat "$FAKE_REG/manifests/afkit/afkit/alice/aliphysics/vAN-1") == "sha256:$(sha256sum "$T/img2.sif" | cut -d' ' -f1)" ]]
}

@test "publish.sh: no validation stamp, or a stamp of another image, means no publish (6)" {
  publish_env
  printf 'image\n' >"$T/img.sif"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 6 && $output == *"no validation stamp"* ]]
  printf 'sha256 %064d\n' 0 >"$T/img.validated"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 6 && $output == *"not the image that was validated"* ]]
  [[ ! -e $FAKE_LOG/argv ]]
}

@test "publish.sh: an unreachable registry fails (3) before anything is pushed" {
  publish_env
  a_validated_image img
  touch "$FAKE_REG/down"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 3 && $output == *"unreachable"* ]]
  run ! grep -q '^apptainer ' "$FAKE_LOG/argv"
}

@test "publish.sh: refused credentials fail (3) before anything is pushed" {
  publish_env
  a_validated_image img
  CI_JOB_TOKEN=wrong run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 3 && $output == *"refused the credentials"* ]]
  [[ $output != *wrong* ]]
  run ! grep -q '^apptainer ' "$FAKE_LOG/argv"
  [[ ! -d $FAKE_REG/manifests ]]
}

@test "publish.sh: an image that comes back different is deleted again and fails (1)" {
  publish_env
  a_validated_image img
  touch "$FAKE_REG/corrupt_pull"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 1 && $output == *"differs"* ]]
  grep -q '^curl DELETE .*/v2/afkit/afkit/alice/aliphysics/manifests/sha256:' "$FAKE_LOG/argv"
  [[ ! -e $FAKE_REG/manifests/afkit/afkit/alice/aliphysics/vAN-1 ]]
  [[ ! -e $T/img.published ]]
}

@test "publish.sh: a failed push fails (1) and leaves the tag untouched" {
  publish_env
  a_validated_image img
  touch "$FAKE_REG/push_fails"
  run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 1 && $output == *"apptainer push"*"failed"* ]]
  [[ ! -e $FAKE_REG/manifests/afkit/afkit/alice/aliphysics/vAN-1 ]]
}

@test "publish.sh: a user without a password (or a bad registry) is a usage error (2)" {
  publish_env
  a_validated_image img
  CI_JOB_TOKEN='' run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 2 && $output == *"without a password"* ]]
  run "$REPO/ci/publish.sh" --registry-image 'host/a b' --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 2 && $output == *"bad registry image"* ]]
}

@test "publish.sh never sends the job token to a registry other than the project's (4)" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --registry-image other.example.org/x --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 4 && $output == *"refusing to send the job token to other.example.org/x"* ]]
  CI_REGISTRY=elsewhere.example.org run "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 4 ]]
  [[ ! -e $FAKE_LOG/argv && ! -e $FAKE_LOG/curl.stdin ]]
}

@test "publish.sh: AFKIT_REGISTRY_* credentials publish to AFKIT_REGISTRY_IMAGE, not the job token" {
  publish_env
  a_validated_image img
  printf 'other-bot' >"$FAKE_REG/user"
  printf 'other-pass' >"$FAKE_REG/password"
  AFKIT_REGISTRY_IMAGE=registry.example.org/other AFKIT_REGISTRY_USER=other-bot AFKIT_REGISTRY_PASSWORD=other-pass \
    run --separate-stderr "$REPO/ci/publish.sh" --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 0 && $output == "oras://registry.example.org/other/alice/aliphysics:vAN-1 sha256:"* ]]
  run ! grep -q 'tok-S3cr3t-value' "$FAKE_LOG/curl.stdin" "$FAKE_LOG/login.stdin"
}

@test "publish.sh --dry-run checks the registry and pushes nothing" {
  publish_env
  a_validated_image img
  run "$REPO/ci/publish.sh" --dry-run --profile alice --tag AliPhysics/vAN-1 "$T/img.sif"
  [[ $status -eq 0 && $output == *"would push"* ]]
  run ! grep -q '^apptainer ' "$FAKE_LOG/argv"
}

@test "functional.sh: missing arguments, store, signer or campaign are refused before anything is pulled" {
  local args=(--profile alice --tag AliPhysics/vAN-1 --baseline alice/aliphysics --out "$T/f")
  run "$REPO/ci/functional.sh" --profile alice --tag AliPhysics/vAN-1 --out "$T/f"
  [[ $status -eq 2 && $output == *"--baseline and --out are required"* ]]
  run "$REPO/ci/functional.sh" "${args[@]}"
  [[ $status -eq 3 && $output == *"no baseline store: set AFKIT_FUNCTIONAL_STORE"* ]]
  export AFKIT_FUNCTIONAL_STORE=$T/store CI_REGISTRY_IMAGE=registry.example.org/afkit/afkit
  run "$REPO/ci/functional.sh" "${args[@]}" --campaign "$T/none.yaml"
  [[ $status -eq 5 && $output == *"no functional campaign $T/none.yaml"* ]]
  run "$REPO/ci/functional.sh" "${args[@]}"
  [[ $status -eq 2 && $output == *"set AFKIT_VERIFY_FINGERPRINT"* ]]
  run "$REPO/ci/functional.sh" "${args[@]/alice\/aliphysics/..\/etc}"
  [[ $status -eq 4 && $output == *"refusing baseline name '../etc'"* ]]
  run "$REPO/ci/functional.sh" "${args[@]}" --published "$T/none.published"
  [[ $status -eq 5 && $output == *"no publish record"* ]]
  [[ ! -e $T/store && ! -e $T/f ]]
}

@test "functional.sh never sends the job token to another registry than the project's (4)" {
  publish_env
  printf 'ref oras://elsewhere.example.org/x/alice/aliphysics:vAN-1\ndigest sha256:%064d\nfingerprint %s\n' 0 "$(printf 'A%.0s' {1..40})" >"$T/r.published"
  run "$REPO/ci/functional.sh" --profile alice --tag AliPhysics/vAN-1 --baseline alice/aliphysics --out "$T/f" \
    --store "$T/store" --published "$T/r.published"
  [[ $status -eq 4 && $output == *"refusing to send the job token to elsewhere.example.org"* ]]
  [[ $output != *tok-S3cr3t-value* ]]
}

@test "image references: lower-case package, version kept, oras:// prefix added once" {
  run bash -c "source '$REPO/scripts/lib/common.sh'; source '$REPO/ci/lib/ci.sh';
    ci_image_ref oras://Reg.example:5050/G/P/ alice AliPhysics/vAN-20201018_ROOT6-1
    ci_image_ref reg/x alice O2Physics/v1+b
    ci_image_name alice O2Physics/daily-1
    ci_image_ref reg/x lcg LCG_105
    ci_image_name lcg LCG_105"
  [[ ${lines[0]} == oras://reg.example:5050/g/p/alice/aliphysics:vAN-20201018_ROOT6-1 ]]
  [[ ${lines[1]} == oras://reg/x/alice/o2physics:v1_b ]]
  [[ ${lines[2]} == O2Physics_daily-1 ]]
  [[ ${lines[3]} == oras://reg/x/lcg/lcg:LCG_105 ]]
  [[ ${lines[4]} == LCG_105 ]]
}

@test "venv.sh: a runner-provided AFKIT_VENV is used as is; a broken one is a missing prerequisite (3)" {
  local venv
  venv=$(dirname "$(dirname "$AFKIT_PYTHON")")
  [[ -x $venv/bin/python ]] || venv=$REPO/.venv
  AFKIT_VENV=$venv run --separate-stderr "$REPO/ci/venv.sh"
  [[ $status -eq 0 && $output == "$venv" ]]
  AFKIT_VENV=$T/nothing run "$REPO/ci/venv.sh"
  [[ $status -eq 3 && $output == *"has no bin/python"* ]]
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
  [ "$status" -eq 4 ]
  [[ $output == *"not made by scripts/ci-local"* ]]
  [ "$(cat "$out/project/thesis.tex")" = precious ]
  [ ! -e "$out/.afkit-ci-local" ]
}
