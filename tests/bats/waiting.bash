# shellcheck shell=bash
# Waiting in bats tests: `wait_until` polls a condition instead of sleeping a fixed time (the twin
# of wait_until in tests/waitsupport.py). Load it in setup() or setup_file():
#   load "$BATS_TEST_DIRNAME/waiting"              (tests/bats/*.bats)
#   load "$BATS_TEST_DIRNAME/../bats/waiting"      (tests/integration/*.bats)

# wait_until TIMEOUT CMD [ARG...] : run CMD every 0.1 s until it succeeds; after TIMEOUT seconds
# (an integer or a decimal such as 2.5) print what was awaited to stderr and return 1.
wait_until() {
  local timeout=$1
  shift
  local whole=${timeout%%.*} frac=${timeout#*.}
  [[ $timeout == *.* ]] || frac=0
  frac=${frac}000000
  local deadline=$((${EPOCHREALTIME//[!0-9]/} + ${whole:-0} * 1000000 + 10#${frac:0:6}))
  until "$@"; do
    if ((${EPOCHREALTIME//[!0-9]/} >= deadline)); then
      printf 'wait_until: timed out after %s s waiting for: %s\n' "$timeout" "$*" >&2
      return 1
    fi
    sleep 0.1
  done
}
