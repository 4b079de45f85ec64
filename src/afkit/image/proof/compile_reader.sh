#!/bin/sh
# afkit image validation: compile read_tree.cxx with the image's c++ against ROOT (root-config),
# then run it: compile_reader.sh FILE_OR_URL TREE BRANCH
set -eu
here=$(dirname "$0")
out=$(mktemp -d "${TMPDIR:-/tmp}/afkit-proof.XXXXXX")
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC2046  # root-config's flags are words
c++ -o "$out/read_tree" "$here/read_tree.cxx" $(root-config --cflags --libs)
"$out/read_tree" "$@"
