#!/usr/bin/env bats
# The scheduled pipeline run for real with gitlab-ci-local inside the testbed (scripts/ci-local
# --schedule): build, validate, publish (signed with the ci-local test key) and the functional job
# (ci/functional.sh: pull, verify the signature, the functional campaign, compare with the
# baseline, store the baseline) against a local docker-registry and a storage endpoint of its own
# (an XRootD origin on 127.0.0.1:12194, clear of test_storage_xrootd.py's 12094), guarded as a
# real site's is (TLS with a CA of the test's own, WLCG tokens of an issuer of its own on
# 127.0.0.1:12197): the site's functional campaign names the runner's token file, which afkit
# checks and hands to the jobs; no file of the pipelines' runs holds the token or the registry's
# password. Three runs, as three nights:
#   1. the first schedule: every job passes, the run becomes the baseline;
#   2. the next schedule, with the storage endpoint made slow on purpose (afkit storage up origin
#      --throttle: XRootD's throttle plugin): the functional job fails and names the regressed
#      cells, the baseline stays;
#   3. a functional-only schedule (input jobs=functional) after someone replaced the image in the
#      registry with a modified copy: refused by its signature before any job runs.
# Needs (on the host, once, with the network): scripts/ci-local --prepare.

bats_require_minimum_version 1.5.0

GOOD=AliPhysics/vAN-20201018_ROOT6-1
SFX=alice:AliPhysics:vAN-20201018_ROOT6-1
PORT=5119
STORAGE_BASE=12194
ISSUER_PORT=12197
AUD=https://afkit.example/functional
CELLS=("read local blobs origin direct 1cl" "read local blobs origin direct 2cl")

# ci_local RUN ARGS... : scripts/ci-local into OUT/RUN with the shared stores; records its exit code.
ci_local() {
  local run=$1 start=$SECONDS rc=0
  shift
  "$REPO/scripts/ci-local" --tags "$GOOD" --port "$PORT" --out "$OUT/$run" --registry-store "$OUT/registry-store" \
    --functional-store "$OUT/baselines" --functional-campaign "$OUT/functional.yaml" "$@" >"$OUT/$run.out" 2>&1 || rc=$?
  printf '%s\n' "$rc" >"$OUT/$run.rc"
  echo "# $run: rc $rc in $((SECONDS - start)) s" >&3
}

# storage_up [ARGS...] : (re)start the test's guarded origin on 127.0.0.1:STORAGE_BASE serving OUT/data.
storage_up() {
  local g=$OUT/guard
  AFKIT_STORAGE_BASE_PORT=$STORAGE_BASE python3 -m afkit storage down origin --state-dir "$OUT/storage" 2>/dev/null || true
  AFKIT_STORAGE_BASE_PORT=$STORAGE_BASE python3 -m afkit storage up origin --data "$OUT/data" --state-dir "$OUT/storage" \
    --tls-cert "$g/pki/origin.pem" --tls-key "$g/pki/origin.key" --tls-ca "$g/pki/ca-bundle.pem" \
    --token-issuer "https://127.0.0.1:$ISSUER_PORT" --token-audience "$AUD" "$@" >/dev/null
}

# guard_up : OUT/guard: a CA, the origin's and the issuer's certificates, the issuer (a daemon on
# 127.0.0.1:ISSUER_PORT, afkit_testbed.issuer) and the runner's token for the functional jobs
# (read and create: they generate their dataset through the door), OUT/guard/functional.token, 0600.
guard_up() {
  local g=$OUT/guard
  mkdir -m 755 "$g"
  python3 - "$g" <<'PY'
import sys
from pathlib import Path
from afkit_testbed import issuer, pki
g = Path(sys.argv[1])
ca = pki.ensure_ca(g / "pki")
pki.trust_bundle(ca, g / "pki")
pki.server_certificate(ca, g / "pki", "origin", ["127.0.0.1", "localhost"])
pki.server_certificate(ca, g / "pki", "issuer", ["127.0.0.1"])
issuer.ensure_key(g / "issuer.key")
PY
  python3 -m afkit_testbed.issuer --key "$g/issuer.key" --cert "$g/pki/issuer.pem" --cert-key "$g/pki/issuer.key" \
    --host 127.0.0.1 --port "$ISSUER_PORT" >"$g/issuer.log" 2>&1 &
  printf '%s\n' "$!" >"$g/issuer.pid"
  wait_until 30 grep -q "serving https://127.0.0.1:$ISSUER_PORT" "$g/issuer.log"
  python3 - "$g" "https://127.0.0.1:$ISSUER_PORT" "$AUD" <<'PY'
import sys
from pathlib import Path
from afkit.atomic import write_atomic
from afkit_testbed import issuer
g, url, aud = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
grant = issuer.Grant(("storage.read:/", "storage.create:/"), aud, lifetime=7200)
write_atomic(g / "functional.token", issuer.issue(issuer.ensure_key(g / "issuer.key"), url, grant), mode=0o600)
PY
}

# port_closed PORT : does nothing answer on 127.0.0.1:PORT?
port_closed() { ! (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# registry_creds : USER:PASSWORD of the last run's registry.
registry_creds() {
  local vars=$OUT/$1/project/.gitlab-ci-local-variables.yml
  printf '%s:%s\n' "$(sed -n "s/^CI_REGISTRY_USER: '\(.*\)'$/\1/p" "$vars")" "$(sed -n "s/^CI_JOB_TOKEN: '\(.*\)'$/\1/p" "$vars")"
}

# tamper_registry_image RUN : replace the published image by a copy modified after signing.
tamper_registry_image() {
  local ref=oras://127.0.0.1:$PORT/afkit/afkit/alice/aliphysics:vAN-20201018_ROOT6-1 creds dir=$OUT/tamper
  mkdir -p "$dir"
  creds=$(registry_creds "$1")
  printf '%s' "${creds#*:}" | apptainer registry --config "$dir/remote.yaml" login --authfile "$dir/auth.json" \
    --username "${creds%%:*}" --password-stdin "oras://127.0.0.1:$PORT" >/dev/null
  apptainer pull --no-https --authfile "$dir/auth.json" "$dir/image.sif" "$ref" >/dev/null
  python3 - "$dir/image.sif" <<'PY'
import re, subprocess, sys
out = subprocess.run(["apptainer", "sif", "list", sys.argv[1]], capture_output=True, text=True, check=True).stdout
offset = int(re.search(r"\|(\d+)-\d+\s*\|FS", out).group(1)) + 100
with open(sys.argv[1], "r+b") as fh:
    fh.seek(offset)
    byte = fh.read(1)
    fh.seek(offset)
    fh.write(bytes([byte[0] ^ 0xFF]))
PY
  apptainer push --no-https --authfile "$dir/auth.json" "$dir/image.sif" "$ref" >/dev/null 2>&1
}

# the builds' squashfs compression (docs/gitlab-ci.md, AFKIT_IMAGE_COMPRESSION): lz4, as in ci_local.bats
export AFKIT_IMAGE_COMPRESSION=lz4

setup_file() {
  load "$BATS_TEST_DIRNAME/../bats/waiting"
  REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  export REPO
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/ci-local-schedule-it.XXXXXX")
  export OUT
  chmod 755 "$OUT"
  mkdir -m 755 "$OUT/data"
  chown xrootd:xrootd "$OUT/data" # the functional jobs' dataset is written through the door
  guard_up
  storage_up
  # the functional campaign of the repository, reading from this test's own guarded endpoint with
  # the runner's token (docs/campaigns.md, "Guarded storage")
  python3 - "$REPO/workflows/config/functional.yaml" "$OUT/functional.yaml" "$STORAGE_BASE" "$OUT/data" "$OUT/guard" <<'PY'
import sys, yaml
src, dest, port, data, guard = sys.argv[1:]
cfg = yaml.safe_load(open(src, encoding="utf-8"))
cfg["storage"]["origin"].update(url=f"roots://127.0.0.1:{port}", path=data,
                                credential={"token": f"{guard}/functional.token", "ca": f"{guard}/pki/ca-bundle.pem"})
yaml.safe_dump(cfg, open(dest, "w", encoding="utf-8"), sort_keys=False)
PY
  # night 1: the first scheduled pipeline makes the baseline
  ci_local run1 --schedule --images-only
  readlink -f "$OUT/baselines/functional/alice/aliphysics/baseline" >"$OUT/baseline-after-run1"
  # night 2: the storage endpoint serves 4 MB/s instead of hundreds
  storage_up --throttle 4MB
  ci_local run2 --schedule --images-only --keep-registry
  readlink -f "$OUT/baselines/functional/alice/aliphysics/baseline" >"$OUT/baseline-after-run2"
  storage_up
  # night 3: the image under the tag was replaced by a modified copy; only the functional jobs run
  tamper_registry_image run2 || echo "tampering failed" >"$OUT/tamper-failed"
  kill "$(cat "$OUT/run2/registry/pid")" 2>/dev/null || true
  wait_until 60 port_closed "$PORT" # the next run starts its registry on the same port
  ci_local run3 --functional-only
}

teardown_file() {
  local run
  for run in run1 run2 run3; do
    if [[ -f $OUT/$run/registry/pid ]]; then kill "$(cat "$OUT/$run/registry/pid")" 2>/dev/null || true; fi
  done
  AFKIT_STORAGE_BASE_PORT=$STORAGE_BASE python3 -m afkit storage down origin --state-dir "$OUT/storage" 2>/dev/null || true
  if [[ -f $OUT/guard/issuer.pid ]]; then kill "$(cat "$OUT/guard/issuer.pid")" 2>/dev/null || true; fi
  rm -rf -- "$OUT"
}

# job_status RUN NAME : PASS or FAIL from a run's jobs.tsv (empty when the job did not run).
job_status() { awk -F'\t' -v j="$2" '$1 == j { print $2 }' "$OUT/$1/jobs.tsv"; }

# functional_json RUN : the functional job's verdict file of RUN.
functional_json() {
  local job=functional:$SFX
  printf '%s\n' "$OUT/$1/project/.gitlab-ci-local/artifacts/${job//:/Og}/out/functional/AliPhysics_vAN-20201018_ROOT6-1/functional.json"
}

setup() {
  load "$BATS_TEST_DIRNAME/../bats/assertions"
}

# run_rc RUN : the exit code of RUN as run's status, its output's tail as output (on failure).
run_rc() { run bash -c 'tail -40 "$1" >&2; exit "$(cat "$2")"' _ "$OUT/$1.out" "$OUT/$1.rc"; }

@test "night 1: the scheduled pipeline passes" {
  run_rc run1
  assert_success
}

@test "night 1: build, validate, publish and the functional job passed" {
  local job
  for job in build validate publish functional; do
    assert_equal "$(job_status run1 "$job:$SFX")" PASS
  done
}

@test "night 1: the image's signature was verified and there was no baseline yet" {
  assert grep -q "no baseline yet in $OUT/baselines/functional/alice/aliphysics" "$OUT/run1/gitlab-ci-local.log"
  assert grep -q "signature by [0-9A-F]\{40\} verified" "$OUT/run1/gitlab-ci-local.log"
  assert_equal "$(cat "$OUT/run1/functional.tsv")" "$GOOD"$'\t'passed$'\t'
}

@test "night 1: the run is stored as the baseline: ten ok jobs in the signed image" {
  local base
  base=$(cat "$OUT/baseline-after-run1")
  assert_regex "$base" "^$OUT/baselines/functional/alice/aliphysics/runs/"
  # ten jobs (2 cells x 5 repetitions: enough for a verdict of afkit campaign compare), all ok,
  # run in the signed image
  assert_equal "$(awk -F, 'NR > 1' "$base/jobs.csv" | wc -l)" 10
  run python3 - "$base" <<'PY'
import csv, json, sys
from pathlib import Path
base = Path(sys.argv[1])
rows = list(csv.DictReader((base / "jobs.csv").open()))
info = json.loads((base / "baseline.json").read_text())
assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
assert {r["image_fingerprint"] for r in rows} == {info["fingerprint"]}, info
assert info["image"].endswith("/alice/aliphysics:vAN-20201018_ROOT6-1") and info["digest"].startswith("sha256:")
PY
  assert_success
}

@test "night 2: with the storage throttled the pipeline fails (1) after build, validate and publish passed" {
  run_rc run2
  assert_failure 1
  local job
  for job in build validate publish; do
    assert_equal "$(job_status run2 "$job:$SFX")" PASS
  done
  assert_equal "$(job_status run2 "functional:$SFX")" FAIL
}

@test "night 2: the functional job names the regressed cells" {
  assert grep -q "functional:$SFX > ci/functional.sh: error: regressed against the baseline $(cat "$OUT/baseline-after-run1"): " \
    "$OUT/run2/gitlab-ci-local.log"
  local cell
  for cell in "${CELLS[@]}"; do
    assert grep -q "regressed against the baseline .*$cell" "$OUT/run2/gitlab-ci-local.log"
    assert grep -q "$cell" "$OUT/run2/functional.tsv"
  done
  assert_equal "$(cut -f2 "$OUT/run2/functional.tsv")" regressed
  run jq -e '.status == "regressed" and (.regressed | length) == 2' "$(functional_json run2)"
  assert_success
}

@test "night 2: a regressed run does not replace the baseline" {
  assert_equal "$(cat "$OUT/baseline-after-run2")" "$(cat "$OUT/baseline-after-run1")"
}

@test "night 3: an image modified in the registry after signing fails the functional-only pipeline (1)" {
  refute [ -e "$OUT/tamper-failed" ]
  run_rc run3
  assert_failure 1
  # only the functional job ran: nothing was built or published
  assert_equal "$(job_status run3 "build:$SFX")" ""
  assert_equal "$(job_status run3 "publish:$SFX")" ""
  assert_equal "$(job_status run3 "functional:$SFX")" FAIL
}

@test "night 3: the modified image is refused by its signature before any job runs" {
  assert grep -q "does not match the content" "$OUT/run3/gitlab-ci-local.log"
  assert grep -q "ci/functional.sh: error: refused oras://127.0.0.1:$PORT/afkit/afkit/alice/aliphysics:vAN-20201018_ROOT6-1: its signature by [0-9A-F]\{40\} was not verified (exit 6); no job ran" \
    "$OUT/run3/gitlab-ci-local.log"
  run jq -e '.status == "refused"' "$(functional_json run3)"
  assert_success
  # no campaign ran, the baseline is the first night's
  refute [ -d "$(dirname "$(functional_json run3)")/results" ]
  assert_equal "$(readlink -f "$OUT/baselines/functional/alice/aliphysics/baseline")" "$(cat "$OUT/baseline-after-run1")"
}

@test "the functional job read the guarded storage with the runner's token file" {
  local base
  base=$(cat "$OUT/baseline-after-run1")
  run python3 - "$base/jobs.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8")))
assert rows and all(r["status"] == "ok" and r["url"].startswith("roots://127.0.0.1:12194/") for r in rows), rows[:2]
PY
  assert_success
  # the blobs were written through the door (by the server, as the xrootd user), not on its disk
  assert_equal "$(stat -c %U "$OUT/data/afkit-functional/blob-0000.dat")" xrootd
}

@test "no file of the three nights' pipelines holds the storage token or the registry's password" {
  local secrets=$OUT/secrets run
  python3 - "$OUT/guard/functional.token" "$(registry_creds run1)" "$(registry_creds run2)" "$(registry_creds run3)" >"$secrets" <<'PY'
import base64, sys
token = open(sys.argv[1], encoding="utf-8").read().strip()
out = {token, base64.b64encode(token.encode()).decode(), *token.split(".")}
for creds in sys.argv[2:]:
    user, _, password = creds.partition(":")
    out |= {password, base64.b64encode(f"{user}:{password}".encode()).decode()}
print("\n".join(sorted(s for s in out if len(s) >= 8)))
PY
  [ "$(wc -l <"$secrets")" -ge 6 ]
  # the search would find them: the token's file and the variables file the pipelines were given
  grep -q -F -f "$secrets" "$OUT/guard/functional.token"
  grep -q -F -f "$secrets" "$OUT/run1/project/.gitlab-ci-local-variables.yml"
  for run in run1 run2 run3; do
    # every file of the run (gitlab-ci-local's project copy, job logs, artifacts with the JUnit
    # reports, the campaigns' results), but the variables file the pipeline was given
    run grep -r -l -F -f "$secrets" --exclude=.gitlab-ci-local-variables.yml -- "$OUT/$run"
    assert_failure 1
    assert_output ""
  done
  run grep -l -F -f "$secrets" -r "$OUT/baselines" "$OUT"/run*.out
  assert_failure 1
}
