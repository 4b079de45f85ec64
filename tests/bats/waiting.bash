# shellcheck shell=bash
# Waiting in bats tests: `wait_until` polls a condition instead of sleeping a fixed time (the twin
# of wait_until in tests/waitsupport.py). Load it in setup() or setup_file():
#   load "$BATS_TEST_DIRNAME/waiting"              (tests/bats/*.bats)
#   load "$BATS_TEST_DIRNAME/../bats/waiting"      (tests/integration/*.bats)

# wait_until TIMEOUT CMD [ARG...] : run CMD every 0.1 s until it succeeds; after TIMEOUT seconds
# (an integer or a decimal such as 2.5) print what was awaited to stderr and return 1. As in
# tests/waitsupport.py, TIMEOUT is what the work needs on an idle machine: each second of waiting
# counts cores / max(cores, load) (the one-minute load of /proc/loadavg), so a loaded machine gets
# more wall time; at most WAIT_WALL_CAP (10) times TIMEOUT of it.
WAIT_WALL_CAP=10

# cpu_share_ppm : millionths of a core one second of wall time gives a runnable process now
cpu_share_ppm() {
  local load cores whole frac
  cores=$(nproc)
  read -r load _ </proc/loadavg
  whole=${load%%.*} frac=${load#*.}
  [[ $load == *.* ]] || frac=0
  frac=${frac}00
  local hundredths=$((10#${whole:-0} * 100 + 10#${frac:0:2}))
  ((hundredths > cores * 100)) || hundredths=$((cores * 100))
  printf '%s\n' $((cores * 100 * 1000000 / hundredths))
}

wait_until() {
  local timeout=$1
  shift
  local whole=${timeout%%.*} frac=${timeout#*.}
  [[ $timeout == *.* ]] || frac=0
  frac=${frac}000000
  local budget=$((${whole:-0} * 1000000 + 10#${frac:0:6}))
  local start last now spent=0
  start=${EPOCHREALTIME//[!0-9]/}
  last=$start
  until "$@"; do
    now=${EPOCHREALTIME//[!0-9]/}
    spent=$((spent + (now - last) * $(cpu_share_ppm) / 1000000))
    last=$now
    if ((spent >= budget || now - start >= WAIT_WALL_CAP * budget)); then
      "$@" && return 0
      printf 'wait_until: timed out after %s s waiting for: %s (%s s of wall time, load %s on %s cores)\n' \
        "$timeout" "$*" $(((now - start) / 1000000)) "$(cut -d' ' -f1 /proc/loadavg)" "$(nproc)" >&2
      return 1
    fi
    sleep 0.1
  done
}
