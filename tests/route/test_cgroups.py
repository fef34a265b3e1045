"""Which per-episode limits are made where (a fake control-group tree; no root needed)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from netarena.route import cgroups


@pytest.fixture
def fake_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", tmp_path)
    cgroups.hierarchy.cache_clear()
    yield tmp_path
    cgroups.hierarchy.cache_clear()


def test_v2_enables_the_controllers_and_limits_each_episode(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = fake_root / "docker" / "abc"
    own.mkdir(parents=True)
    (fake_root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (own / "cgroup.controllers").write_text("cpu memory pids\n")
    (own / "cgroup.procs").write_text(f"{os.getpid()}\n")
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {"": "/docker/abc"})
    found = cgroups.hierarchy()
    assert found.version == 2 and set(found.parents.values()) == {own / "netarena-route"}
    assert (own / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    group = cgroups.EpisodeGroup("nrabc12")
    made = own / "netarena-route" / "nrabc12"
    assert group.dirs == [made] and group.procs_files == [str(made / "cgroup.procs")]
    assert (made / "memory.max").read_text() == str(cgroups.MEMORY_BYTES)
    assert (made / "pids.max").read_text() == str(cgroups.MAX_TASKS)
    assert (made / "cpu.max").read_text() == "50000 100000"
    assert "cgroup v2" in found.describe() and "512 MiB" in found.describe()


def test_v2_without_the_controllers_says_so(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (fake_root / "cgroup.controllers").write_text("cpu io\n")
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {"": "/"})
    found = cgroups.hierarchy()
    assert found.version is None and "NO per-episode memory" in found.describe()
    assert cgroups.EpisodeGroup("nrabc13").procs_files == []  # commands still run


def test_v1_uses_each_controllers_hierarchy(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("memory", "pids", "cpu,cpuacct"):
        (fake_root / name / "user").mkdir(parents=True)
    own = {"memory": "/user", "pids": "/user", "cpu": "/user", "cpuacct": "/user"}
    monkeypatch.setattr(cgroups, "_own_paths", lambda: own)
    found = cgroups.hierarchy()
    assert found.version == 1 and sorted(found.parents) == ["cpu", "memory", "pids"]
    cgroups.EpisodeGroup("nrabc14")
    memory = fake_root / "memory" / "user" / "netarena-route" / "nrabc14"
    assert (memory / "memory.limit_in_bytes").read_text() == str(cgroups.MEMORY_BYTES)
    assert not (memory / "pids.max").exists()
    cpu = fake_root / "cpu,cpuacct" / "user" / "netarena-route" / "nrabc14"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "50000"
    assert (fake_root / "pids" / "user" / "netarena-route" / "nrabc14" / "pids.max").exists()


@pytest.mark.parametrize("alone", [True, False])
def test_v2_moves_its_own_processes_into_a_leaf_to_enable_controllers(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch, alone: bool
) -> None:
    """A container's root group holds the evaluator: "no internal processes" says EBUSY."""
    (fake_root / "cgroup.controllers").write_text("cpu memory pids\n")
    others = "" if alone else "1\n"  # init of the host: not ours to move
    (fake_root / "cgroup.procs").write_text(f"{os.getpid()}\n{others}")
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {"": "/"})
    real, busy = cgroups._write, [True]

    def write(path: Path, value: str) -> None:
        if path == fake_root / "cgroup.subtree_control" and busy:
            busy.clear()
            raise OSError(errno.EBUSY, "Device or resource busy")
        real(path, value)

    monkeypatch.setattr(cgroups, "_write", write)
    found = cgroups.hierarchy()
    leaf = fake_root / "netarena-evaluator" / "cgroup.procs"
    if alone:
        assert found.version == 2 and leaf.read_text() == str(os.getpid())
    else:
        assert found.version is None and "shared with other processes" in found.reason
        assert not leaf.exists()


def test_route_limits_prints_what_is_active() -> None:
    from typer.testing import CliRunner

    from netarena.route.cli import app

    result = CliRunner().invoke(app, ["limits"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("route sandbox limits: ")
    assert "4096 set elements" in result.output and "10 s and 16 MiB" in result.output
