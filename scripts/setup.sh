#!/usr/bin/env bash
# Installs everything NetArena needs on a fresh Debian bookworm machine (run as root):
# the system tools the emulators use, a virtual environment, and the five distributions with the
# test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${NETARENA_VENV:-.venv}"

need_apt=()
# The route emulator: Mininet (mnexec; Linux bridges via brctl), namespaces and veths
# (iproute2), the agents' shell sandbox (bubblewrap), and the tools agents use on nodes.
command -v ip         >/dev/null || need_apt+=(iproute2)
command -v tc         >/dev/null || need_apt+=(iproute2)
command -v iptables   >/dev/null || need_apt+=(iptables)
command -v ifconfig   >/dev/null || need_apt+=(net-tools)
command -v ping       >/dev/null || need_apt+=(iputils-ping)
command -v mnexec     >/dev/null || need_apt+=(mininet)
command -v brctl      >/dev/null || need_apt+=(bridge-utils)
command -v bwrap      >/dev/null || need_apt+=(bubblewrap)
command -v traceroute >/dev/null || need_apt+=(traceroute)
command -v vtysh      >/dev/null || need_apt+=(frr)
command -v ethtool    >/dev/null || need_apt+=(ethtool)
command -v nft        >/dev/null || need_apt+=(nftables)  # the judge reads nodes' rulesets
command -v tracepath  >/dev/null || need_apt+=(iputils-tracepath)
command -v mtr        >/dev/null || need_apt+=(mtr-tiny)
command -v arping     >/dev/null || need_apt+=(arping)
command -v tcpdump    >/dev/null || need_apt+=(tcpdump)
command -v conntrack  >/dev/null || need_apt+=(conntrack)
command -v dig        >/dev/null || need_apt+=(bind9-dnsutils)  # dig, nslookup
command -v nc         >/dev/null || need_apt+=(netcat-openbsd)  # the operator corpus's tools
command -v iperf3     >/dev/null || need_apt+=(iperf3)
command -v ipset      >/dev/null || need_apt+=(ipset)
# The MALT sandbox's seccomp allowlist (pyseccomp loads the system libseccomp); setpriv (util-linux)
# runs the sandbox tests as uid 10001 too.
/sbin/ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2 ' || need_apt+=(libseccomp2)
command -v setpriv  >/dev/null || need_apt+=(util-linux)
# The status page's test renders it in a real headless browser.
command -v chromium >/dev/null || need_apt+=(chromium fonts-dejavu-core)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "setup: not root, cannot apt-get install ${need_apt[*]}; route tests will be skipped" >&2
  fi
fi

# The Python side is skipped when nothing it depends on changed since it last completed: the
# stamp is a hash of this script and every pyproject.toml (the editable installs follow the
# sources by themselves). Reinstalling took 37 s of every test run. NETARENA_SETUP_FORCE=1
# reinstalls anyway.
stamp="$VENV/.netarena-setup"
want="$(cat scripts/setup.sh pyproject.toml ./*/pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ "${NETARENA_SETUP_FORCE:-0}" != 1 ] && [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] \
   && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup: ready ($VENV, unchanged since its last install)" >&2
  exit 0
fi
rm -f "$stamp"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
# One distribution per folder (src/netarena/<name>/, PEP 420), all editable: each install adds a
# plain src/ path to sys.path (a static .pth), which editors, pyright and mypy follow. The root
# is the netarena meta-distribution (no code of its own, so not editable: an editable install
# of it would be an empty import hook) and carries the test tools (the dev extra).
# A venv made before the split holds one `netarena` distribution that owns the `netarena` script;
# pip would replace it after installing common and so delete the script common just wrote.
"$VENV/bin/python" -m pip uninstall -y -q netarena 2>/dev/null || true
# Bytecode is compiled afterwards on every core (pip compiles one file after another: 45 of the
# install's 80 s here, 2 cores).
"$VENV/bin/python" -m pip install -q --no-compile \
  -e ./common -e ./app-malt -e ./app-route -e ./app-k8s -e ./a2a_llm ".[dev]"
"$VENV/bin/python" -m compileall -q -j 0 \
  "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null
echo "$want" > "$stamp"
echo "setup: ready ($VENV)" >&2
