#!/usr/bin/env bash
# Build the afkit testbed root filesystem (Debian trixie + apptainer from sid) into TARGET.
# Called by `scripts/testbed build`; its content is part of the rootfs cache key.
set -euo pipefail
AFKIT_PROG=testbed-build
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
MIRROR=${AFKIT_TESTBED_MIRROR:-http://deb.debian.org/debian}

usage() {
  cat <<USAGE
Usage: scripts/testbed.d/build-rootfs.sh PACKAGE_LIST TARGET

Runs mmdebstrap (mode root, variant apt) for Debian trixie with sid added at pin priority 1
(only apptainer comes from sid, see sid.pref; sid's expired Release file is accepted), installs
the packages listed in PACKAGE_LIST and customizes the tree with customize.sh.
TARGET must not exist. Run as root. Environment: AFKIT_TESTBED_MIRROR (default $MIRROR).
USAGE
}

# read_packages FILE : the package names of FILE, comma-separated (comments and blanks dropped).
read_packages() {
  sed -e 's/#.*//' "$1" | awk 'NF { print $1 }' | paste -sd, -
}

main() {
  case ${1:-} in -h | --help) usage; return 0 ;; esac
  (($# == 2)) || die "$AFKIT_EX_USAGE" "expected PACKAGE_LIST TARGET" "see --help"
  local list=$1 target=$2 packages
  [[ -r $list ]] || die "$AFKIT_EX_NOT_FOUND" "package list '$list' not readable"
  [[ ! -e $target ]] || die "$AFKIT_EX_UNSAFE" "target '$target' exists" "give a new path"
  ((EUID == 0)) || die "$AFKIT_EX_PREREQ" "building the rootfs needs root" "run as root"
  packages=$(read_packages "$list")
  [[ -n $packages ]] || die "$AFKIT_EX_INVALID" "package list '$list' names no package"
  mmdebstrap_private --mode=root --variant=apt --format=directory \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    --aptopt='APT::Install-Recommends "false"' \
    --setup-hook="mkdir -p \"\$1/etc/apt/preferences.d\"" \
    --setup-hook="copy-in '$HERE/sid.pref' /etc/apt/preferences.d/" \
    --customize-hook="'$HERE/customize.sh' \"\$1\"" \
    --include="$packages" \
    trixie "$target" \
    "deb $MIRROR trixie main" "deb $MIRROR sid main"
}

main "$@"
