#!/usr/bin/env bash
# Check that the quick start's set-up holds on a minimal fresh Debian 12 (what a new VM or
# container has: debootstrap's minbase, no procps, no python3), as root:
#
#   sudo ./scripts/check-fresh-install.sh [ROOT]          # ROOT default /var/tmp/symphony-fresh
#   sudo ./scripts/check-fresh-install.sh ROOT --tests    # ... and the namespace tests in it
#
# 1. debootstrap --variant=minbase bookworm ROOT (kept and reused when it exists; apt-get
#    install debootstrap first);
# 2. this checkout's HEAD (git archive) in ROOT/root/symphony-emu;
# 3. in a chroot of ROOT (proc, sys, dev and a fresh /run mounted): ./scripts/setup.sh, then
#    `symphony-emu doctor` (every required item ok), every system command a host or test
#    runs on PATH (emu.doctor.SYSTEM_COMMANDS), and one host set-up script run in a network
#    namespace that must pass emu.mininet.network.check_host_setup (every command succeeds)
#    and leave IPv6 off;
# 4. with --tests: the port I/O tests (tests/p4/test_portio.py: namespaces, veths, sysctl),
#    which take the Mininet lock like every network test here.
#
# Minutes, and the network to reach deb.debian.org and PyPI: not part of CI (.ci/run), run
# it by hand after changing setup.sh or what a host runs. On a machine whose pip reads a local
# index, FRESH_BIND="/opt/wheels /opt/pypi" binds those folders in and /etc/pip.conf is copied.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $(id -u) -eq 0 ]] || { echo "check-fresh-install.sh: run as root (debootstrap, chroot, namespaces)" >&2; exit 2; }
root="${1:-/var/tmp/symphony-fresh}"
tests=0
[[ "${2:-}" == "--tests" ]] && tests=1
command -v debootstrap >/dev/null || { echo "check-fresh-install.sh: apt-get install debootstrap first" >&2; exit 2; }
say() { printf '==> %s\n' "$*" >&2; }

if [[ ! -x "$root/bin/sh" ]]; then
    say "debootstrap --variant=minbase bookworm $root"
    debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
fi
rm -rf "$root/root/symphony-emu"
mkdir -p "$root/root/symphony-emu"
git -C "$repo" archive HEAD | tar -x -C "$root/root/symphony-emu"
cp /etc/resolv.conf "$root/etc/resolv.conf"
[[ -f /etc/pip.conf ]] && cp /etc/pip.conf "$root/etc/pip.conf"

mounted=()
mnt() { mkdir -p "$root$2"; mount "${@:3}" "$1" "$root$2"; mounted=("$root$2" "${mounted[@]}"); }
cleanup() { for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
trap cleanup EXIT
mnt "$root" / --bind  # the root a mount point of its own: `ip netns` remounts / inside the chroot
mnt proc /proc -t proc
mnt sysfs /sys -t sysfs
mnt /dev /dev --bind
mnt devpts /dev/pts -t devpts
mnt tmpfs /run -t tmpfs
for dir in ${FRESH_BIND:-}; do mnt "$dir" "$dir" --bind -o ro; done

in_root() {
    chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 ${PIP_FIND_LINKS:+PIP_FIND_LINKS="$PIP_FIND_LINKS"} bash -euo pipefail -c "cd /root/symphony-emu; $1"
}
say "setup.sh in the minimal root"
in_root "apt-get update -qq && ./scripts/setup.sh"
say "doctor"
in_root "COLUMNS=160 .venv/bin/symphony-emu doctor"  # exits 1 when a required item is missing
say "every system command a host or test runs"
in_root ".venv/bin/python -c 'from emu.doctor import SYSTEM_COMMANDS; print(\" \".join(c for c, _, _ in SYSTEM_COMMANDS))' \
         | tr ' ' '\n' | while read -r cmd; do command -v \"\$cmd\" >/dev/null || { echo \"missing: \$cmd\"; exit 1; }; done"
say "a host's set-up script in a network namespace"
in_root "ip netns add fresh-check && trap 'ip netns del fresh-check' EXIT
    ip -n fresh-check link add h1-eth0 type veth peer name h1-peer
    script=\$(.venv/bin/python -c 'from emu.topology import load_topology; from emu.mininet.network import host_setup_script; \
        p = load_topology(\"topologies/single.yaml\").plan; print(host_setup_script(p, \"h1\"))')
    out=\$(ip netns exec fresh-check sh -c \"\$script\" 2>&1)
    echo \"\$out\"
    printf '%s' \"\$out\" | .venv/bin/python -c 'import sys; from emu.topology import load_topology; \
        from emu.mininet.network import check_host_setup; \
        check_host_setup(load_topology(\"topologies/single.yaml\").plan, \"h1\", sys.stdin.read())' 
    [[ \$(ip netns exec fresh-check cat /proc/sys/net/ipv6/conf/all/disable_ipv6) == 1 ]]"
if ((tests)); then
    say "tests/p4/test_portio.py in the minimal root (Mininet lock)"
    flock /tmp/symphony-mininet.lock chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        bash -c "cd /root/symphony-emu && .venv/bin/pytest -q -p no:cacheprovider tests/p4/test_portio.py"
fi
say "the set-up holds on a minimal Debian 12 ($root)"
