#!/usr/bin/env bats
# shellcheck disable=SC2016  # single-quoted $... are expanded by the inner shells
# Integration tests of the testbed itself, run INSIDE it as root:
#   scripts/testbed run -- bats tests/integration/testbed.bats
# Real programs only: Apptainer, HTCondor, SLURM, XRootD, environment-modules.

bats_require_minimum_version 1.5.0

setup_file() {
  [[ ${AFKIT_TESTBED:-} == 1 || ${TESTBED:-} == native ]] || {
    echo "run inside the testbed: scripts/testbed run -- bats tests/integration" >&2
    return 1
  }
  # A work directory the unprivileged user afkit can use (bats' own tmpdir is root-only).
  WORK=$(mktemp -d /tmp/afkit-testbed-it.XXXXXX)
  chmod 0755 "$WORK"
  chown afkit:afkit "$WORK"
  export WORK
  # A tiny image sandbox: busybox-static and a few applets.
  local sb=$WORK/sandbox
  mkdir -p "$sb"/{bin,dev,proc,sys,tmp,etc,root,home,var/tmp}
  cp /bin/busybox "$sb/bin/busybox"
  local applet
  for applet in sh echo cat id sha256sum; do ln -s busybox "$sb/bin/$applet"; done
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$sb/etc/passwd"
  printf 'root:x:0:\n' >"$sb/etc/group"
  apptainer --quiet build "$WORK/tiny.sif" "$sb"
  chown afkit:afkit "$WORK/tiny.sif"
}

setup() {
  load "$BATS_TEST_DIRNAME/../bats/assertions"
}

teardown_file() {
  [[ -z ${WORK:-} || ! -d $WORK ]] || rm -rf --one-file-system -- "$WORK"
}

# bubblewrap_only : skip where the tests run natively on a host (TESTBED=native): these check the
# bubblewrap testbed itself.
bubblewrap_only() {
  [[ ${AFKIT_TESTBED:-} == 1 ]] || skip "checks the bubblewrap testbed itself (TESTBED=native runs on a host)"
}

# as_afkit CMD... : run CMD as the unprivileged user afkit, in $WORK.
as_afkit() {
  (cd "$WORK" && setpriv --reuid=afkit --regid=afkit --init-groups \
    env HOME=/home/afkit USER=afkit LOGNAME=afkit PATH="$PATH" "$@")
}

@test "environment: the testbed's variables" {
  assert_equal "$AFKIT_TESTBED" 1
  assert_equal "$AFKIT_XROOTD_URL" root://127.0.0.1:1094
}

@test "environment: venv python 3.13 with Debian's XRootD bindings, htcondor and the project" {
  assert_equal "$(command -v python3)" /opt/afkit/venv/bin/python3
  run python3 -c 'import sys, XRootD.client, htcondor, afkit; print(sys.version_info[:2])'
  assert_success
  assert_output "(3, 13)"
  # --system-site-packages: XRootD is Debian's python3-xrootd, afkit the editable checkout.
  run python3 -c 'import XRootD, afkit; print(XRootD.__file__); print(afkit.__file__)'
  assert_success
  assert_line --index 0 --regexp '^/usr/lib/python3/dist-packages/XRootD/'
  assert_line --index 1 "$AFKIT_REPO/src/afkit/__init__.py"
}

@test "environment: afkit, pytest and snakemake are the venv's" {
  for tool in afkit pytest snakemake; do
    assert_equal "$(command -v "$tool")" "/opt/afkit/venv/bin/$tool"
  done
  run afkit --version
  assert_success
}

@test "isolation: own network namespace with loopback and the federation's link only" {
  bubblewrap_only
  run ip -o link show
  assert_success
  assert_output --partial ": lo:"
  # besides loopback only the federation's link into its own WAN namespace (docs/federation.md),
  # when run-tests has brought the federation up
  assert_equal "$(printf '%s\n' "$output" | grep -cvE '^[0-9]+: (lo|fed0@[^:]+):' || true)" 0
}

@test "isolation: only loopback and federation addresses" {
  bubblewrap_only
  run ip -o -4 addr show
  assert_success
  assert_equal "$(printf '%s\n' "$output" | grep -cvE ' inet (127\.[0-9.]+|10\.77\.[0-9.]+)/' || true)" 0
}

@test "isolation: the host name resolves to 127.0.0.1" {
  bubblewrap_only
  assert grep -qE '^127\.0\.0\.1\s.*\b'"$(hostname)"'\b' /etc/hosts
}

@test "isolation: /cvmfs is read-only" {
  bubblewrap_only
  run touch /cvmfs/afkit-write-test
  assert_failure
}

@test "isolation: a private fuse node every user can open, /tmp sticky and world-writable" {
  bubblewrap_only
  assert_equal "$(stat -c %a /dev/fuse)" 666
  assert_equal "$(stat -c %a /tmp)" 1777
}

@test "apptainer: an image built from a sandbox runs as root (no --userns needed)" {
  run apptainer exec "$WORK/tiny.sif" sh -c 'echo root-in-image $(id -u)'
  assert_success
  assert_output --partial "root-in-image 0"
}

@test "apptainer: an image built from a sandbox runs as afkit" {
  run as_afkit apptainer exec "$WORK/tiny.sif" sh -c 'echo user-in-image $(id -u)'
  assert_success
  assert_output --partial "user-in-image 1000"
}

@test "apptainer: --userns --containall runs (its own /proc)" {
  run apptainer exec --userns --containall "$WORK/tiny.sif" cat /proc/self/uid_map
  assert_success
}

# post_def : WORK/post.def, a definition file whose %post writes /built.txt.
post_def() {
  printf 'Bootstrap: localimage\nFrom: %s\n\n%%post\n  echo built-by-post > /built.txt\n' \
    "$WORK/tiny.sif" >"$WORK/post.def"
  chmod 0644 "$WORK/post.def"
}

@test "apptainer: definition-file build with %post (--fakeroot) as root" {
  post_def
  local out
  out=$(mktemp -d /tmp/afkit-testbed-root.XXXXXX)
  apptainer --quiet build --fakeroot "$out/post-root.sif" "$WORK/post.def"
  # stdout only: apptainer warns on stderr about the image's missing passwd/group files.
  run --separate-stderr apptainer exec "$out/post-root.sif" cat /built.txt
  rm -rf -- "$out"
  assert_success
  assert_output built-by-post
}

@test "apptainer: definition-file build with %post (--fakeroot) as afkit" {
  post_def
  as_afkit apptainer --quiet build --fakeroot "$WORK/post-user.sif" "$WORK/post.def"
  run --separate-stderr as_afkit apptainer exec "$WORK/post-user.sif" cat /built.txt
  assert_success
  assert_output built-by-post
}

@test "htcondor: a vanilla job submitted by afkit runs on one of >= 2 slots" {
  assert [ "$(condor_status -af Name | grep -c .)" -ge 2 ]
  cat >"$WORK/vanilla.sub" <<SUB
executable = /bin/sh
arguments = "-c 'echo vanilla-ok; id -un'"
output = vanilla.out
error = vanilla.err
log = vanilla.log
should_transfer_files = NO
queue
SUB
  chown afkit:afkit "$WORK/vanilla.sub"
  as_afkit condor_submit vanilla.sub
  run as_afkit condor_wait -wait 180 vanilla.log
  assert_success
  assert_equal "$(cat "$WORK/vanilla.out")" "$(printf 'vanilla-ok\nafkit')"
}

@test "htcondor: its master left the kernel's ephemeral port range, clear of the tests' fixed ports" {
  # condor.conf: ENABLE_KERNEL_TUNING = False (linux_kernel_tuning would make it 1024-65535)
  assert_equal "$(condor_config_val ENABLE_KERNEL_TUNING)" "False"
  read -r low high </proc/sys/net/ipv4/ip_local_port_range
  assert_equal "$low $high" "32768 60999"
}

@test "htcondor: the startd supports SIF and a container-universe job runs in the image" {
  # the testbed's own slots (while the federation is up, its sites' slots are in the pool too)
  run condor_status -const 'AFKIT_SITE =?= undefined' -af HasSingularity HasSIF
  assert_line --index 0 "true true"
  cat >"$WORK/container.sub" <<SUB
universe = container
container_image = $WORK/tiny.sif
executable = /bin/sh
transfer_executable = false
arguments = "-c 'echo container-ok; cat /etc/passwd | head -c 0; sha256sum /bin/busybox >/dev/null && echo has-busybox'"
output = container.out
error = container.err
log = container.log
should_transfer_files = YES
when_to_transfer_output = ON_EXIT
queue
SUB
  chown afkit:afkit "$WORK/container.sub"
  as_afkit condor_submit container.sub
  run as_afkit condor_wait -wait 180 container.log
  assert_success
  assert_equal "$(cat "$WORK/container.out")" "$(printf 'container-ok\nhas-busybox')"
}

@test "htcondor: the venv's PyPI htcondor wheel submits as afkit (IDTOKEN from up)" {
  run as_afkit python3 -c '
import htcondor
sub = htcondor.Submit({"executable": "/bin/echo", "arguments": "wheel-ok", "output": "wheel.out",
                       "log": "wheel.log", "should_transfer_files": "NO"})
print(htcondor.Schedd().submit(sub).cluster())'
  assert_success
  assert_output --regexp '^[0-9]+$'
  run as_afkit condor_wait -wait 180 wheel.log
  assert_success
  assert_equal "$(cat "$WORK/wheel.out")" wheel-ok
}

@test "slurm: partition debug is up" {
  run sinfo -h -p debug -o '%P %a' # the federation's per-site partitions may be there too
  assert_output "debug* up"
}

@test "slurm: sbatch --wait as afkit writes the job's output" {
  printf '#!/bin/sh\necho slurm-ok "$SLURM_JOB_PARTITION" "$(id -un)"\n' >"$WORK/job.sh"
  chown afkit:afkit "$WORK/job.sh"
  run as_afkit sbatch --wait --quiet -o slurm.out job.sh
  assert_success
  assert_equal "$(cat "$WORK/slurm.out")" "slurm-ok debug afkit"
}

@test "xrootd: a file in the data directory reads back byte-identical over root://" {
  assert_equal "$AFKIT_XROOTD_DATA" /srv/xrootd/data
  local name="it-$$-$RANDOM.bin"
  head -c 3000000 /dev/urandom >"$AFKIT_XROOTD_DATA/$name"
  xrdcp -f -s "$AFKIT_XROOTD_URL//$name" "$WORK/back.bin"
  assert_equal "$(sha256sum <"$AFKIT_XROOTD_DATA/$name")" "$(sha256sum <"$WORK/back.bin")"
  rm -f "$AFKIT_XROOTD_DATA/$name"
}

@test "xrootd: user afkit writes through xrootd and directly into the data directory" {
  local name="it-user-$$-$RANDOM.txt"
  printf 'through xrootd\n' >"$WORK/up.txt"
  chown afkit:afkit "$WORK/up.txt"
  as_afkit xrdcp -s up.txt "$AFKIT_XROOTD_URL//$name"
  assert_equal "$(cat "$AFKIT_XROOTD_DATA/$name")" "through xrootd"
  as_afkit sh -c "echo direct > '$AFKIT_XROOTD_DATA/direct-$name'"
  run xrdfs 127.0.0.1:1094 ls /
  assert_output --partial "/$name"
  assert_output --partial "/direct-$name"
  rm -f "$AFKIT_XROOTD_DATA/$name" "$AFKIT_XROOTD_DATA/direct-$name"
}

@test "environment-modules: module load of a modulefile sets the environment" {
  mkdir -p "$WORK/modules/hello" "$WORK/hello/bin"
  printf '#!/bin/sh\necho hello-from-module\n' >"$WORK/hello/bin/hello-testbed"
  chmod +x "$WORK/hello/bin/hello-testbed"
  cat >"$WORK/modules/hello/1.0" <<MOD
#%Module1.0
setenv HELLO_TESTBED 1.0
prepend-path PATH $WORK/hello/bin
MOD
  run bash -c 'source "$MODULESHOME/init/bash" && module use "$1" && module load hello/1.0 &&
    echo "$HELLO_TESTBED" && hello-testbed' _ "$WORK/modules"
  assert_success
  assert_output "$(printf '1.0\nhello-from-module')"
}
