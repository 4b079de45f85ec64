#!/usr/bin/env bash
# Runs INSIDE the testbed as the first program of every `scripts/testbed run`/`shell`: switches to
# USER (gid and HOME from the testbed's passwd), changes to CWD and execs CMD.
# Usage: enter.sh USER CWD REPO CMD...   (USER '-' : already switched)
set -euo pipefail

case ${1:-} in
  -h | --help) sed -n '2,4p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
(($# >= 4)) || { echo "testbed: error: enter.sh USER CWD REPO CMD..." >&2; exit 2; }
user=$1 cwd=$2 repo=$3
shift 3
if [[ $user != root && $user != - ]]; then
  entry=$(getent passwd "$user") || {
    echo "testbed: error: no user '$user' inside the testbed" >&2
    exit 3
  }
  IFS=: read -r _ _ _ gid _ home _ <<<"$entry"
  export HOME=$home USER=$user LOGNAME=$user
  exec setpriv --reuid="$user" --regid="$gid" --init-groups -- "$0" - "$cwd" "$repo" "$@"
fi
cd -- "$cwd" 2>/dev/null || {
  printf 'testbed: error: directory %s is not visible inside the testbed (or not to user %s)\n' \
    "$cwd" "$(id -un)" >&2
  printf 'testbed: hint: run from the repository (%s) or another bound path\n' "$repo" >&2
  exit 3
}
exec "$@"
