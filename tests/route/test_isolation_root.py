"""Hostile commands, parallel episodes, and cleanup after normal and killed runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from netarena.route import RouteApp
from netarena.route.namespaces import NETNS_DIR, list_prefixes

from .conftest import NEEDS_ROOT
from .test_faults_root import play

pytestmark = [pytest.mark.root, NEEDS_ROOT]


def host_state() -> dict[str, str]:
    """What the host looks like: firewall, links, namespaces, files we might touch."""
    run = lambda *a: subprocess.run(a, capture_output=True, text=True).stdout  # noqa: E731
    return {
        "iptables": "\n".join(
            ln for ln in run("iptables-save").splitlines() if not ln.startswith("#")
        ),
        "links": run("ip", "-o", "link", "show"),
        "routes": run("ip", "route"),
        "forward": Path("/proc/sys/net/ipv4/ip_forward").read_text(),
        "tmp": " ".join(sorted(p.name for p in Path("/tmp").glob("pwn*"))),
    }


def ours_in_host() -> list[str]:
    return [n for n in os.listdir(NETNS_DIR) if n.startswith("nr")] if NETNS_DIR.exists() else []


HOSTILE = [
    "rm -rf /",
    "sh -c 'touch /tmp/pwned'",
    "ip route; reboot",
    "; reboot",
    "ip netns exec {other}_r0 ip link set r0-eth1 down",
    "nsenter --net=/run/netns/{other}_r0 ip link set r0-eth1 down",
    "ip addr > /tmp/pwned",
    "ip addr show $(touch /tmp/pwned)",
    "ip addr show `touch /tmp/pwned`",
    "ip link set r0-eth1 netns 1",
    "iptables-save -f /tmp/pwned",
    "sysctl -w kernel.hostname=pwned",
]


def test_hostile_commands_rejected_without_effect(small_app: RouteApp) -> None:
    before = host_state()
    a = small_app.open(small_app.generate(21, 1, "DR"))
    b = small_app.open(small_app.generate(22, 1, "WR"))
    try:
        b_matrix = b.matrix
        replies = [
            json.dumps({"machine": "r0", "command": c.format(other=b.prefix)}) for c in HOSTILE
        ]
        replies += [
            json.dumps({"machine": f"{b.prefix}_r0", "command": "ip link set r0-eth1 down"}),
            json.dumps({"machine": "h99", "command": "ip addr"}),
            json.dumps({"machine": "host", "command": "ip addr"}),
        ]
        for reply in replies:
            result = a.step(reply)
            assert not result.valid, reply
            assert result.reward == (-100 if result.info["forbidden"] else -10)
        assert a.ledger.forbidden_commands == len(HOSTILE) + 1
        assert a.ledger.invalid_actions == len(replies)
        assert b.score().correct is False and b.matrix == b_matrix
        assert not a.score().safe
        assert host_state() == before
        assert "[rejected:" in a.observe()
    finally:
        a.close()
        b.close()
    assert host_state() == before


def test_commands_run_inside_the_node_only(small_app: RouteApp) -> None:
    with small_app.open(small_app.generate(23, 1, "DT")) as ep:
        ep.step(json.dumps({"machine": "h1", "command": "ip -o link show"}))
        out = ep.history[-1].output
        assert "h1-eth0" in out and "r0-eth1" not in out and "docker" not in out
        ep.step(json.dumps({"machine": "h1", "command": "sysctl -w net.ipv4.ip_forward=1"}))
        assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() in {"0", "1"}
        ep.step(json.dumps({"machine": "r0", "command": "ping -c 50 192.168.1.100"}))
        assert "timed out" in ep.history[-1].output


def test_parallel_episodes_do_not_interfere() -> None:
    app = RouteApp({"num_subnets": 3, "hosts_per_subnet": 2})
    queries = [app.generate(100 + i, 1 + i % 3) for i in range(8)]

    def solve(q):
        ep = app.open(q)
        try:
            play(ep)
            return ep.prefix, ep.score()
        finally:
            ep.close()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(solve, queries))
    assert len({prefix for prefix, _ in results}) == 8
    assert all(s.correct and s.safe for _, s in results), [s for _, s in results]
    assert not any(p in list_prefixes() for p, _ in results)


KILLED = textwrap.dedent("""
    import json, sys
    from netarena.route import RouteApp
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
    ep = app.open(app.generate(5, 2, "DR+DT"))
    print(ep.prefix, flush=True)
    ep.step(json.dumps({"machine": "h1", "command": "ping -c 100 192.168.2.100"}))
""")


@pytest.mark.slow
def test_cleanup_after_a_killed_run() -> None:
    before = host_state()
    proc = subprocess.Popen([sys.executable, "-c", KILLED], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    prefix = proc.stdout.readline().strip()
    time.sleep(0.5)  # the ping is now running inside h1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert prefix in list_prefixes()
    inodes = {(NETNS_DIR / n).stat().st_ino for n in ours_in_host() if n.startswith(prefix)}
    netarena = str(Path(sys.executable).parent / "netarena")
    cli = subprocess.run([netarena, "route", "cleanup"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert f"removed {prefix}_r0" in cli.stdout
    assert prefix not in list_prefixes(), cli.stderr
    assert not Path(f"/run/netarena-route/{prefix}.pid").exists()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ino = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:  # gone, or a kernel thread
            continue
        assert ino not in inodes
    assert host_state() == before


def test_cleanup_spares_live_episodes(small_app: RouteApp) -> None:
    from netarena.route import cleanup

    with small_app.open(small_app.generate(31, 1, "RI")) as ep:
        cleanup()
        assert ep.prefix in list_prefixes()
    assert ep.prefix not in list_prefixes()
