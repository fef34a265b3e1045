"""Who owns a network: the owner file ``claim_prefix`` makes, and when its owner is gone.

A fake owner directory; no root needed.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from netarena.common.core.errors import EmulatorError
from netarena.route.linux import namespaces


@pytest.fixture
def owners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(namespaces, "OWNER_DIR", tmp_path / "owners")
    monkeypatch.setattr(namespaces, "NETNS_DIR", tmp_path / "netns")
    monkeypatch.setattr(namespaces, "cleanup", lambda: [])  # reaping itself: the root tests
    return tmp_path / "owners"


def test_a_prefix_is_claimed_by_this_process_once(owners: Path) -> None:
    prefix = namespaces.claim_prefix()
    pid, ticks = (owners / f"{prefix}.pid").read_text().split()
    assert int(pid) == os.getpid() and int(ticks) == namespaces._start_ticks(os.getpid())
    assert namespaces._owner_alive(prefix)
    with pytest.raises(EmulatorError, match="claimed already"):
        namespaces.claim_prefix(prefix)
    assert namespaces.claim_prefix() != prefix


def test_an_owner_is_gone_once_its_pid_ended_or_names_a_later_process(owners: Path) -> None:
    owners.mkdir()
    ended = subprocess.run(["true"], check=True)
    del ended
    with subprocess.Popen(["sleep", "30"]) as later:
        try:
            (owners / "nrdead01.pid").write_text("999999999")
            (owners / "nrlive01.pid").write_text(str(later.pid))
            (owners / "nrreuse1.pid").write_text(str(later.pid))
            an_hour_ago = time.time() - 3600  # written before that process started
            os.utime(owners / "nrreuse1.pid", (an_hour_ago, an_hour_ago))
            ticks = namespaces._start_ticks(later.pid)
            (owners / "nrtick01.pid").write_text(f"{later.pid} {ticks}")
            (owners / "nrtick02.pid").write_text(f"{later.pid} {ticks - 1}")  # an earlier one
            os.utime(owners / "nrtick01.pid", (an_hour_ago, an_hour_ago))  # time not read
            assert namespaces._owner_alive("nrtick01")
            assert not namespaces._owner_alive("nrtick02")
            assert not namespaces._owner_alive("nrdead01")
            assert namespaces._owner_alive("nrlive01")
            assert not namespaces._owner_alive("nrreuse1")
            assert not namespaces._owner_alive("nrnofile")
        finally:
            later.kill()


def test_a_reaper_never_takes_a_prefix_being_claimed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claims in many threads while another reaps all along: an owner file read half
    written (empty) once made a reaper take a live network's prefix, then the network."""
    import threading

    monkeypatch.setattr(namespaces, "OWNER_DIR", tmp_path / "owners")
    monkeypatch.setattr(namespaces, "NETNS_DIR", tmp_path / "netns")
    monkeypatch.setattr(namespaces, "stale_groups", set)
    monkeypatch.setattr(namespaces, "reap", lambda: [])
    claimed: list[str] = []
    done = threading.Event()

    def reap() -> None:
        while not done.is_set():
            namespaces.cleanup()

    reaper = threading.Thread(target=reap)
    reaper.start()
    try:
        def claim() -> None:
            claimed.extend(namespaces.claim_prefix() for _ in range(50))

        workers = [threading.Thread(target=claim) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        done.set()
        reaper.join()
    namespaces.cleanup()
    assert len(claimed) == 200
    assert all((tmp_path / "owners" / f"{p}.pid").exists() for p in claimed)
    assert not list((tmp_path / "owners").glob(".claim.*"))
