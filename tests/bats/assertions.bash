# shellcheck shell=bash
# bats-support and bats-assert, Debian's (/usr/lib/bats): every file of both libraries sourced,
# which is what their load.bash files do, without the $(dirname ...) those run for each file: 15
# processes before every test, most of a short test's time on a busy host. In setup():
#   load "$BATS_TEST_DIRNAME/assertions"
# A missing library fails the test (source of a file that does not exist), as load does.
for _afkit_bats_lib in /usr/lib/bats/bats-support/src/*.bash /usr/lib/bats/bats-assert/src/*.bash; do
  # shellcheck source=/dev/null
  source "$_afkit_bats_lib" || return
done
unset _afkit_bats_lib
