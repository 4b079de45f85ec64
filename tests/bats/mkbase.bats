#!/usr/bin/env bats
# scripts/mkbase: interface and cache keys (the real build runs in the integration suite).

setup() {
  load "$BATS_TEST_DIRNAME/assertions"
  load "$BATS_TEST_DIRNAME/waiting"
  REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  export AFKIT_BASE_DIR="$BATS_TEST_TMPDIR/base"
}

@test "mkbase --help names the flavours and the exit codes" {
  run "$REPO/scripts/mkbase" --help
  assert_success
  assert_output --partial "minimal"
  assert_output --partial "bench"
  assert_output --partial "Exit codes"
}

@test "mkbase without a flavour is a usage error" {
  run "$REPO/scripts/mkbase"
  assert_failure 2
  assert_output --partial "missing FLAVOUR"
}

@test "mkbase rejects an unknown flavour" {
  run "$REPO/scripts/mkbase" fat
  assert_failure 2
  assert_output --partial "unknown flavour 'fat'"
}

@test "mkbase rejects an unknown option" {
  run "$REPO/scripts/mkbase" --fast minimal
  assert_failure 2
  assert_output --partial "unknown option '--fast'"
}

@test "mkbase cache keys are stable" {
  run "$REPO/scripts/mkbase" --key minimal
  assert_success
  local k1=$output
  run "$REPO/scripts/mkbase" --key minimal
  assert_success
  assert_output "$k1"
}

@test "mkbase cache keys differ per flavour" {
  run "$REPO/scripts/mkbase" --key minimal
  assert_success
  local k1=$output
  run "$REPO/scripts/mkbase" --key bench
  assert_success
  refute_output "$k1"
}

@test "mkbase cache keys differ per suite" {
  run "$REPO/scripts/mkbase" --key minimal
  assert_success
  local k1=$output
  AFKIT_BASE_SUITE=sid run "$REPO/scripts/mkbase" --key minimal
  assert_success
  refute_output "$k1"
}

# cached_minimal : a cached minimal SIF and sandbox under the current key, and an older key's SIF;
# prints the key.
cached_minimal() {
  local key
  key=$("$REPO/scripts/mkbase" --key minimal)
  mkdir -p "$AFKIT_BASE_DIR/minimal-$key.sandbox/etc"
  echo cached >"$AFKIT_BASE_DIR/minimal-$key.sandbox/etc/afkit-base"
  echo cached >"$AFKIT_BASE_DIR/minimal-$key.sif"
  echo old >"$AFKIT_BASE_DIR/minimal-0123456789abcdef.sif"
  printf '%s\n' "$key"
}

@test "mkbase returns a cached image without building" {
  key=$(cached_minimal)
  PATH=/usr/bin:/bin run "$REPO/scripts/mkbase" minimal
  assert_success
  assert_output "$AFKIT_BASE_DIR/minimal-$key.sif"
}

@test "mkbase --sandbox returns a cached sandbox without building" {
  key=$(cached_minimal)
  PATH=/usr/bin:/bin run "$REPO/scripts/mkbase" --sandbox minimal
  assert_success
  assert_output "$AFKIT_BASE_DIR/minimal-$key.sandbox"
}

@test "mkbase prunes an older key's image" {
  cached_minimal >/dev/null
  PATH=/usr/bin:/bin run "$REPO/scripts/mkbase" minimal
  assert_success
  assert [ ! -e "$AFKIT_BASE_DIR/minimal-0123456789abcdef.sif" ]
}

@test "mkbase: a quote in AFKIT_BASE_DIR is a file name, not code run at exit; the half-built directory goes" {
  local bin="$BATS_TEST_TMPDIR/bin"
  mkdir -p "$bin"
  printf '#!/bin/sh\nexit 1\n' >"$bin/mmdebstrap" # the build fails: the EXIT trap cleans up
  chmod +x "$bin/mmdebstrap"
  local dir="$BATS_TEST_TMPDIR/x';touch $BATS_TEST_TMPDIR/pwned;'"
  AFKIT_BASE_DIR=$dir PATH="$bin:/usr/bin:/bin" run "$REPO/scripts/mkbase" --sandbox minimal
  assert_failure
  assert [ ! -e "$BATS_TEST_TMPDIR/pwned" ]
  assert [ -d "$dir" ]
  assert_equal "$(ls -A "$dir")" ".minimal.lock" # the flavour's lock file stays, nothing else
}

@test "mkbase runs mmdebstrap in a mount namespace of its own (its /proc and /sys mounts reach no other)" {
  local bin="$BATS_TEST_TMPDIR/bin"
  mkdir -p "$bin"
  # a stand-in that makes the target's tree and records the mount namespace it ran in
  cat >"$bin/mmdebstrap" <<STUB
#!/bin/bash
for a in "\$@"; do [[ \$a == -* || \$a == deb\ * || \$a == trixie ]] || target=\$a; done
mkdir -p "\$target/dev" "\$target/etc" "\$target/usr/share"
readlink /proc/self/ns/mnt >"$BATS_TEST_TMPDIR/mmdebstrap-ns"
STUB
  chmod +x "$bin/mmdebstrap"
  PATH="$bin:/usr/bin:/bin" run "$REPO/scripts/mkbase" --sandbox minimal
  assert_success
  assert [ -s "$BATS_TEST_TMPDIR/mmdebstrap-ns" ]
  assert [ "$(cat "$BATS_TEST_TMPDIR/mmdebstrap-ns")" != "$(readlink /proc/self/ns/mnt)" ]
}

@test "mkbase's mmdebstrap runs dpkg without an fsync of every unpacked file (force-unsafe-io)" {
  local bin="$BATS_TEST_TMPDIR/bin"
  mkdir -p "$bin"
  # a stand-in that makes the target's tree and records its arguments
  cat >"$bin/mmdebstrap" <<STUB
#!/bin/bash
printf '%s\n' "\$@" >"$BATS_TEST_TMPDIR/mmdebstrap-args"
for a in "\$@"; do [[ \$a == -* || \$a == deb\ * || \$a == trixie ]] || target=\$a; done
mkdir -p "\$target/dev" "\$target/etc" "\$target/usr/share"
STUB
  chmod +x "$bin/mmdebstrap"
  PATH="$bin:/usr/bin:/bin" run "$REPO/scripts/mkbase" --sandbox minimal
  assert_success
  assert grep -qx -- '--dpkgopt=force-unsafe-io' "$BATS_TEST_TMPDIR/mmdebstrap-args"
}

@test "mkbase refuses a sandbox with file systems mounted inside it, before apptainer runs" {
  local key bin="$BATS_TEST_TMPDIR/bin"
  key=$(cached_minimal)
  rm -f "$AFKIT_BASE_DIR/minimal-$key.sif"
  mkdir -p "$bin" "$AFKIT_BASE_DIR/minimal-$key.sandbox/sys"
  printf '#!/bin/sh\ntouch "%s/apptainer-ran"\n' "$BATS_TEST_TMPDIR" >"$bin/apptainer"
  chmod +x "$bin/apptainer"
  # the mount lives in a namespace of the test's own, gone with it
  # shellcheck disable=SC2016  # the inner bash's arguments
  PATH="$bin:/usr/bin:/bin" run unshare --mount --propagation private -- bash -c \
    'mount -t tmpfs afkit-test "$1/sys" && exec "$2/scripts/mkbase" minimal' _ \
    "$AFKIT_BASE_DIR/minimal-$key.sandbox" "$REPO"
  assert_failure 1
  assert_output --partial "file systems are mounted inside the sandbox"
  assert_output --partial "minimal-$key.sandbox/sys"
  assert [ ! -e "$BATS_TEST_TMPDIR/apptainer-ran" ]
}

@test "mkbase waits for another build of the same flavour, then returns the image it left" {
  local key
  key=$(cached_minimal)
  mkfifo "$BATS_TEST_TMPDIR/release"
  # another build: holds the flavour's lock until the test writes to the fifo
  flock "$AFKIT_BASE_DIR/.minimal.lock" cat "$BATS_TEST_TMPDIR/release" >/dev/null &
  # shellcheck disable=SC2016  # the inner bash's argument
  wait_until 10 bash -c '! flock -n "$1" true' _ "$AFKIT_BASE_DIR/.minimal.lock"
  PATH=/usr/bin:/bin "$REPO/scripts/mkbase" minimal >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
  local mk=$!
  wait_until 10 grep -q "another build of 'minimal' is running; waiting for it" "$BATS_TEST_TMPDIR/err"
  assert [ ! -s "$BATS_TEST_TMPDIR/out" ]
  echo go >"$BATS_TEST_TMPDIR/release"
  wait "$mk"
  assert_equal "$(cat "$BATS_TEST_TMPDIR/out")" "$AFKIT_BASE_DIR/minimal-$key.sif"
}
