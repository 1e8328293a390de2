#!/usr/bin/env bash
# Set up symphony-emu on a fresh Debian 12 / Ubuntu 24.04 machine (as root), then optionally
# run it.
#
#   ./scripts/setup.sh              install system packages, create .venv/, install the project
#   ./scripts/setup.sh run [ARGS]   ... then: .venv/bin/symphony-emu run [ARGS]
#   ./scripts/setup.sh test [ARGS]  ... then: .venv/bin/pytest [ARGS]
#   ./scripts/setup.sh cli [ARGS]   ... then: .venv/bin/symphony-emu [ARGS]
#
# Idempotent: packages already present are not reinstalled, an existing .venv/ is reused.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

say() { printf '==> %s\n' "$*" >&2; }

if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh: run as root (Mininet needs it): sudo $0 $*" >&2
    exit 2
fi

# 1. System packages (Mininet without Open vSwitch: emu brings its own switch; procps gives
#    the hosts' sysctl, missing from a minimal Debian; tshark reads the switches' --pcap
#    captures with tools/wireshark/cth.lua, and the tests check that). Every command a host
#    or a test runs comes from one of these (emu/doctor.py SYSTEM_COMMANDS; a test checks).
#    gcc and python3-dev build the optional compiled modules (step 3).
packages=(mininet ethtool iproute2 procps python3-venv python3-pip iputils-ping psmisc tshark gcc python3-dev)
missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
if ((${#missing[@]})); then
    say "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. Python >= 3.11 with the system's site-packages (Debian's mininet module lives there).
python=/usr/bin/python3
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup.sh: $python is $("$python" -V 2>&1); symphony-emu needs Python >= 3.11 (Debian 12, Ubuntu 24.04)" >&2
    exit 2
fi
if [[ ! -x .venv/bin/python ]]; then
    say "creating .venv/"
    "$python" -m venv --system-site-packages .venv
fi

# 3. The project and its test and speed extras.
stamp=.venv/.symphony-emu-installed
if [[ ! -f $stamp || setup.cfg -nt $stamp || pyproject.toml -nt $stamp ]]; then
    say "pip install -e '.[test,fast,compiled]'"
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,fast,compiled]'
    touch "$stamp"
fi
# Optional: the virtual-time hot modules compiled with Cython (hostapps/compiled.py); a module
# whose source changed since is loaded from its .py, SYMPHONY_EMU_PURE=1 loads every one so.
# Without Cython or a C compiler the pure-Python modules run, with the same results.
if ! .venv/bin/python scripts/build_compiled.py; then
    say "compiled modules not built: the pure-Python ones run (same results, slower virtual time)"
fi

# Optional: finsy (an asyncio P4Runtime client; tests/p4/test_finsy.py) in a venv of its own,
# since it needs protobuf >= 5 and p4runtime-shell pins 3.20: the main .venv is never touched.
finsy_stamp=.venv-finsy/.installed
if [[ ! -f $finsy_stamp || tests/p4/finsy/requirements.txt -nt $finsy_stamp ]]; then
    say "creating .venv-finsy/ (finsy, tests/p4/finsy/requirements.txt)"
    if "$python" -m venv .venv-finsy && .venv-finsy/bin/python -m pip install -q --disable-pip-version-check \
            -r tests/p4/finsy/requirements.txt; then
        touch "$finsy_stamp"
    else
        say "finsy not installed: tests/p4/test_finsy.py skips and says so (the main .venv is unaffected)"
    fi
fi

# 4. Optionally run something.
cmd="${1:-}"
if [[ $# -gt 0 ]]; then shift; fi
case "$cmd" in
    "") say "ready: sudo .venv/bin/symphony-emu run   |   sudo .venv/bin/pytest" ;;
    run) exec .venv/bin/symphony-emu run "$@" ;;
    test) exec .venv/bin/pytest "$@" ;;
    cli) exec .venv/bin/symphony-emu "$@" ;;
    *) echo "setup.sh: unknown command '$cmd' (use run, test or cli)" >&2; exit 2 ;;
esac
