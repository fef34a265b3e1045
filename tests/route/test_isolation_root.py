"""Parallel episodes, and cleanup after normal and killed runs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from netarena.route import RouteApp
from netarena.route.linux.cgroups import stale_groups
from netarena.route.linux.namespaces import NETNS_DIR, OWNER_DIR, list_prefixes
from netarena.route.linux.reaplog import reap_note

from .conftest import NEEDS_ROOT, play_reference, reply

pytestmark = [pytest.mark.root, NEEDS_ROOT]


def _mounts() -> str:
    lines = Path("/proc/mounts").read_text().splitlines()
    return " ".join(line.split()[1] for line in lines if "netarena" in line)


@pytest.mark.slow
def test_parallel_episodes_do_not_interfere() -> None:
    app = RouteApp({"num_subnets": 3, "hosts_per_subnet": 2})
    queries = [app.generate(100 + i, 1 + i % 3) for i in range(8)]

    def solve(query):
        with app.open(query) as episode:
            play_reference(episode)
            return episode.prefix, episode.score()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(solve, queries))
    assert len({prefix for prefix, _ in results}) == 8
    assert all(s.correct and s.safe for _, s in results), [s for _, s in results]
    assert not any(p in list_prefixes() for p, _ in results)
    assert not any(p in _mounts() for p, _ in results)


KILLED = textwrap.dedent("""
    import json
    from netarena.route import RouteApp
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
    episode = app.open(app.generate(5, 2, "DR+DT"))
    print(episode.prefix, flush=True)
    episode.step(json.dumps({"machine": "h1", "command": "ping -c 100 r0"}))
""")


@pytest.mark.slow
def test_cleanup_after_a_killed_run() -> None:
    proc = subprocess.Popen([sys.executable, "-c", KILLED], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    prefix = proc.stdout.readline().strip()
    names = [n for n in os.listdir(NETNS_DIR) if n.startswith(prefix)]
    inodes = {(NETNS_DIR / n).stat().st_ino for n in names}
    deadline = time.monotonic() + 120  # a loaded machine may take a while (60 s: missed once)
    while not any(_comm(pid) == "ping" for pid in _processes_in(inodes)):
        assert time.monotonic() < deadline, "the ping never started in h1's sandbox"
        time.sleep(0.1)
    inside = _processes_in(inodes)  # the nodes' shells and the sandboxed ping
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    netarena = str(Path(sys.executable).parent / "netarena")
    cli = subprocess.run([netarena, "route", "cleanup"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    # Removed for want of an owner: by this cleanup, or first by another process's open()
    # (claim_prefix); parallel tests' killed runs may be in this cleanup's list as well.
    assert "owner judged gone" in reap_note(OWNER_DIR, prefix), cli.stdout
    assert prefix not in list_prefixes(), cli.stderr
    assert not (OWNER_DIR / f"{prefix}.pid").exists()
    assert prefix not in _mounts() and not (OWNER_DIR / f"{prefix}.fs").exists()
    assert prefix not in stale_groups()  # its control group too
    # Every process that was inside is gone. (Not "no process is in a namespace with one of
    # those inode numbers": the kernel reuses the numbers of deleted namespaces, and other
    # runs on a loaded machine create namespaces all the time.)
    assert not set(inside.items()) & set(_processes_in(inodes).items())


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _processes_in(inodes: set[int]) -> dict[int, str]:
    """Processes in the namespaces ``inodes``: pid → start time (tells a reused pid apart)."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino in inodes:
                stat = Path(f"/proc/{pid}/stat").read_text()
                found[int(pid)] = stat.rsplit(")", 1)[1].split()[19]
        except OSError:  # gone, or a kernel thread
            continue
    return found


HANGS_IN_OPEN = textwrap.dedent("""
    import sys, time
    from netarena.route import RouteApp
    from netarena.route.frr.episode import FrrEpisode
    from netarena.route.emulator.network import Network

    def hang(self, *args, **kwargs):  # the network is built (FRR: its daemons run)
        print(getattr(self, "net", self).prefix, flush=True)
        time.sleep(600)

    Network._apply_intent = hang
    FrrEpisode._settle_healthy = hang
    app = RouteApp({"num_routers": 3} if sys.argv[1] == "frr" else {"num_subnets": 2})
    app.open(app.generate(5, 1, "ospf-cost" if sys.argv[1] == "frr" else "DI"))
""")
LIVE_OWNER = textwrap.dedent("""
    import time
    from netarena.route import RouteApp
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
    episode = app.open(app.generate(6, 1, "RI"))
    print(episode.prefix, flush=True)
    time.sleep(600)
""")


def _started(script: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    """A Python process running ``script`` and the prefix it printed."""
    argv = [sys.executable, "-c", script, *args]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["static", "frr"])
def test_a_program_killed_in_open_is_reaped_by_the_next_open_never_a_live_one(
    kind: str, small_app: RouteApp
) -> None:
    """SIGKILL while ``open()`` builds: its namespaces stay; the next ``open()`` (any
    process's) removes them and everything else of that network, and neither it nor
    ``netarena route cleanup`` touches a network whose owner is alive."""
    if kind == "frr" and shutil.which("vtysh") is None:
        pytest.skip("needs FRR")
    live, alive = _started(LIVE_OWNER)
    try:
        dead, killed = _started(HANGS_IN_OPEN, kind)
        assert killed and alive and killed in list_prefixes() and alive in list_prefixes()
        names = [n for n in os.listdir(NETNS_DIR) if n.startswith(killed)]
        inodes = {(NETNS_DIR / n).stat().st_ino for n in names}
        daemons = [p for p in _processes_in(inodes) if _comm(p) in ("zebra", "ospfd")]
        assert kind == "static" or len(daemons) == 6, daemons
        os.kill(dead.pid, signal.SIGKILL)
        dead.wait()
        assert killed in list_prefixes() and (OWNER_DIR / f"{killed}.pid").exists()
        deadline = time.monotonic() + 10  # a router's box ends with its owner
        while any(_comm(p) in ("zebra", "ospfd") for p in _processes_in(inodes)):
            assert time.monotonic() < deadline, "the daemons outlived their owner"
            time.sleep(0.1)
        with small_app.open(small_app.generate(31, 1, "RI")) as episode:
            assert episode.prefix != killed and killed not in list_prefixes()
            assert not (OWNER_DIR / f"{killed}.pid").exists() and killed not in _mounts()
            assert killed not in stale_groups()
            assert alive in list_prefixes()
        netarena = str(Path(sys.executable).parent / "netarena")
        cli = subprocess.run([netarena, "route", "cleanup"], capture_output=True, text=True)
        assert cli.returncode == 0 and alive not in cli.stdout, cli.stdout
        assert alive in list_prefixes() and (OWNER_DIR / f"{alive}.pid").exists()
    finally:
        live.kill()
        live.wait()
    from netarena.route import cleanup

    cleanup()
    assert alive not in list_prefixes()


def test_cleanup_spares_live_episodes(small_app: RouteApp) -> None:
    from netarena.route import cleanup

    with small_app.open(small_app.generate(31, 1, "RI")) as episode:
        cleanup()
        assert episode.prefix in list_prefixes()
        assert episode.step(reply("h1", "echo alive")).valid
    assert episode.prefix not in list_prefixes()
    assert episode.prefix not in _mounts()
