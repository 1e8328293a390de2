#!/usr/bin/env bash
# Install bmv2 (simple_switch_grpc, simple_switch_CLI) and p4c from p4lang's packages on the
# openSUSE Build Service (project home:p4lang), plus p4runtime-shell in .venv/, so that
# `--target bmv2` and the bmv2 conformance tests run, as root, on a Debian or Ubuntu release
# p4lang publishes packages for (Debian 11, Ubuntu 20.04-23.04; not Debian 12 or Ubuntu 24.04,
# this project's own platforms: there it stops with one line, see docs/bmv2.md).
# Needs network access to download.opensuse.org (not reachable from every sandbox).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $(id -u) -eq 0 ]] || { echo "install-bmv2.sh: run as root" >&2; exit 2; }
. /etc/os-release
case "$ID" in
    debian) dist="Debian_${VERSION_ID}" ;;
    ubuntu) dist="xUbuntu_${VERSION_ID}" ;;
    *) echo "install-bmv2.sh: $ID is not Debian or Ubuntu; see docs/bmv2.md" >&2; exit 2 ;;
esac
url="https://download.opensuse.org/repositories/home:/p4lang/${dist}"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq curl gnupg >/dev/null
# p4lang publishes packages for Debian 11 and Ubuntu 20.04..23.04 (their OBS project's
# repository list; Debian 12 is not among them): say so in one line instead of failing in apt.
if ! curl -fsIL "${url}/Release.key" >/dev/null 2>&1; then
    echo "install-bmv2.sh: p4lang publishes no packages for ${dist} (${url} not found, or the server is unreachable);" \
         "build behavioral-model with PI and p4c from source, or use Ubuntu 22.04/Debian 11 (docs/bmv2.md)" >&2
    exit 1
fi
curl -fsSL "${url}/Release.key" | gpg --dearmor > /etc/apt/trusted.gpg.d/home_p4lang.gpg
echo "deb ${url}/ /" > /etc/apt/sources.list.d/home-p4lang.list
apt-get update -qq
apt-get install -y -qq p4lang-p4c p4lang-bmv2
[[ -x "$repo/.venv/bin/python" ]] || "$repo/scripts/setup.sh"
"$repo/.venv/bin/python" -m pip install -q -e "$repo[bmv2]"
for tool in p4c simple_switch_CLI simple_switch_grpc; do
    command -v "$tool" >/dev/null || echo "install-bmv2.sh: $tool is still missing (bmv2 without PI? see docs/bmv2.md)" >&2
done
