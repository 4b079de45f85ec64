# shellcheck shell=bash
# Shared helpers for afkit's shell scripts. Source it; do not run it.
#
# Exit codes (the same numbers as src/afkit/errors.py ExitCode, the one table, documented in
# README "Exit codes"; tests/unit/test_exit_codes.py checks that they match):
#   0 ok, 1 a step failed, 2 usage error, 3 prerequisite missing, 4 refused (unsafe path),
#   5 not found, 6 validation failed, 130 interrupted.

# shellcheck disable=SC2034  # the constants are used by the scripts that source this file
readonly AFKIT_EX_OK=0 AFKIT_EX_FAILURE=1 AFKIT_EX_USAGE=2 AFKIT_EX_PREREQ=3 \
  AFKIT_EX_UNSAFE=4 AFKIT_EX_NOT_FOUND=5 AFKIT_EX_INVALID=6 AFKIT_EX_INTERRUPTED=130

AFKIT_PROG=${AFKIT_PROG:-$(basename "${0:-afkit}")}

# log MESSAGE... : progress to stderr, prefixed with the program name.
log() { printf '%s: %s\n' "$AFKIT_PROG" "$*" >&2; }

# warn MESSAGE...
warn() { printf '%s: warning: %s\n' "$AFKIT_PROG" "$*" >&2; }

# die CODE MESSAGE [HINT] : print an error (and what to do) and exit with CODE.
die() {
  local code=$1 msg=$2 hint=${3:-}
  printf '%s: error: %s\n' "$AFKIT_PROG" "$msg" >&2
  if [[ -n $hint ]]; then printf '%s: hint: %s\n' "$AFKIT_PROG" "$hint" >&2; fi
  exit "$code"
}

# need_cmd CMD [HINT] : exit 3 unless CMD is on PATH.
need_cmd() {
  command -v "$1" >/dev/null 2>&1 || die "$AFKIT_EX_PREREQ" "'$1' not found on PATH" "${2:-install it and retry}"
}

# write_atomic FILE CMD [ARG...] : CMD's stdout becomes FILE whole or not at all: written to a
# temporary beside FILE, renamed over FILE when CMD succeeds, removed when it fails (CMD's exit
# status is returned). The shell's counterpart of afkit.atomic.write_atomic.
write_atomic() {
  local file=$1 tmp rc=0
  shift
  tmp="$(dirname -- "$file")/.$(basename -- "$file").$$.part"
  rm -f -- "$tmp"
  "$@" >"$tmp" || rc=$?
  if ((rc == 0)); then
    mv -f -- "$tmp" "$file"
  else
    rm -f -- "$tmp"
  fi
  return "$rc"
}

# mmdebstrap_private ARGS... : mmdebstrap in a mount namespace of its own. In --mode=root it
# mounts /proc, /sys and device nodes into the target while it installs (mmdebstrap's
# setup_mounts); made in this namespace, those mounts would be copied into any mount namespace
# started meanwhile (the testbed's bwrap, made with private propagation, kept them after
# mmdebstrap unmounted them here), and a sandbox built beside it would carry sysfs and procfs
# there: Apptainer's copy of such a sandbox then fails ("archive/tar: missed writing 4096 bytes").
mmdebstrap_private() {
  need_cmd mmdebstrap "apt-get install mmdebstrap (make deps does it)"
  need_cmd unshare "apt-get install util-linux"
  # dpkg --force-unsafe-io: no fsync of every unpacked file (thousands of packages' files in the
  # testbed's rootfs); the target is a scratch directory renamed into place only when complete,
  # so a crash loses nothing that a rebuild would not remake
  unshare --mount --propagation private -- mmdebstrap --dpkgopt=force-unsafe-io "$@"
}

# pid_tree PID... : the PIDs and every process below them (children, theirs, ...), one per line.
pid_tree() {
  { printf 'm %s\n' "$@"; ps -e -o pid=,ppid= | awk '{ print "p", $1, $2 }'; } | awk '
    $1 == "m" { inset[$2] = 1; next }
    { parent[$2] = $3 }
    END {
      do { changed = 0
        for (p in parent) if (!(p in inset) && (parent[p] in inset)) { inset[p] = 1; changed = 1 }
      } while (changed)
      for (p in inset) print p
    }'
}

# afkit_cache_dir : ${XDG_CACHE_HOME:-~/.cache}/afkit
afkit_cache_dir() { printf '%s/afkit\n' "${XDG_CACHE_HOME:-$HOME/.cache}"; }

# afkit_repo_root : the checkout this script lives in (found when this file is sourced: a later cd
# must not change it).
AFKIT_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
afkit_repo_root() { printf '%s\n' "$AFKIT_REPO_ROOT"; }

# afkit_venv : the virtualenv with afkit: $AFKIT_VENV, else the checkout's .venv (make venv makes
# it; the Makefile's VENV follows AFKIT_VENV too).
afkit_venv() { printf '%s\n' "${AFKIT_VENV:-$(afkit_repo_root)/.venv}"; }

# afkit_python : the Python that runs afkit, the one way the scripts find it: $AFKIT_PYTHON, else
# the venv's (afkit_venv), else python3 on PATH. (Python code runs sys.executable.)
afkit_python() {
  local venv
  venv=$(afkit_venv)
  if [[ -n ${AFKIT_PYTHON:-} ]]; then
    printf '%s\n' "$AFKIT_PYTHON"
  elif [[ -x $venv/bin/python ]]; then
    printf '%s\n' "$venv/bin/python"
  else
    printf '%s\n' python3
  fi
}
