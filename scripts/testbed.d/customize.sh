#!/usr/bin/env bash
# mmdebstrap customize hook of the afkit testbed rootfs: users, daemon directories, Apptainer
# settings, HTCondor's exit_37.sif. Part of the rootfs cache key. Usage: customize.sh ROOTFS
set -euo pipefail

case ${1:-} in
  -h | --help | '')
    echo "Usage: customize.sh ROOTFS  (mmdebstrap customize hook, run as root)"
    [[ -n ${1:-} ]]
    exit
    ;;
esac
root=$1
[[ -d $root/etc ]] || { echo "customize.sh: '$root' is not a root filesystem" >&2; exit 6; }
inroot() { chroot "$root" "$@"; }

# The unprivileged user that submits batch jobs (root cannot submit to HTCondor).
inroot id afkit >/dev/null 2>&1 ||
  inroot useradd --create-home --uid 1000 --user-group --shell /bin/bash afkit

# Directories the packages' postinst would create (owners resolved inside the rootfs). mmdebstrap
# empties /run at the end (and /var/lock is /run/lock): `up` creates the runtime directories.
inroot install -d -o condor -g condor /var/spool/condor /var/log/condor /var/lib/condor/execute
inroot install -d -m 0700 -o root -g root /etc/condor/passwords.d /etc/condor/tokens.d
inroot install -d -o slurm -g slurm /var/lib/slurm/slurmctld /var/log/slurm
inroot install -d -o root -g root /var/spool/slurmd
inroot install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge /etc/munge
inroot install -d -o xrootd -g xrootd /var/spool/xrootd /var/log/xrootd
inroot install -d -m 0755 /srv/xrootd/data /opt/afkit/venv /cvmfs

# Apptainer as root: the host's root lacks CAP_SYS_RESOURCE, and apptainer's default for root
# ("full" capabilities) then fails ("Requesting capability set ..."). Give root no default
# capabilities; --fakeroot builds (%post) use the subordinate ids below.
sed -i 's/^root default capabilities = full$/root default capabilities = no/' \
  "$root"/etc/apptainer/apptainer.conf
grep -q '^root default capabilities = no$' "$root"/etc/apptainer/apptainer.conf
# Unprivileged users get no subordinate ids: apptainer then uses a root-mapped user namespace
# for --fakeroot (newuidmap's multi-range mapping is refused inside the testbed).
for f in subuid subgid; do
  sed -i '/^root:/d; /^afkit:/d' "$root/etc/$f"
  printf 'root:100000:65536\n' >>"$root/etc/$f"
done

# HTCondor's startd advertises SIF support only if this test image runs; Debian lacks it.
if [[ ! -e $root/usr/libexec/condor/exit_37.sif ]]; then
  # apptainer needs /proc: enter the tree with bubblewrap rather than chroot.
  bwrap --bind "$root" / --bind /proc /proc --dev-bind /dev /dev --tmpfs /tmp --cap-add ALL \
    --unshare-net -- /usr/bin/apptainer --quiet build /usr/libexec/condor/exit_37.sif \
    /usr/libexec/condor/singularity_test_sandbox
fi

# Without systemd nothing cleans these; keep the image small.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/usr/share/doc/*/changelog*.gz
