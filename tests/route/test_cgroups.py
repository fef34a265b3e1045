"""Which per-episode limits are made where (a fake control-group tree; no root needed)."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from netarena.route.linux import cgroups
from netarena.route.linux.cgroup_tree import reweigh


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
    group = cgroups.EpisodeGroup("nrabc12", ("r1",))
    made = own / "netarena-route" / "nrabc12"
    commands = made / "commands"
    assert group.dirs == [made] and group.procs_files() == [str(commands / "cgroup.procs")]
    assert (made / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (commands / "memory.max").read_text() == str(cgroups.MEMORY_BYTES)
    assert (commands / "pids.max").read_text() == str(cgroups.MAX_TASKS)
    assert (commands / "cpu.max").read_text() == "50000 100000"
    router = made / "r1"
    assert (router / "memory.max").read_text() == str(cgroups.ROUTER_LIMITS.memory_bytes)
    assert (router / "cpu.max").read_text() == "max 100000"  # no quota while it starts
    group.limit("r1", cgroups.ROUTER_LIMITS)
    assert (router / "cpu.max").read_text() == "50000 100000"
    assert "cgroup v2" in found.describe() and "512 MiB" in found.describe()


def test_v2_without_the_controllers_says_so(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (fake_root / "cgroup.controllers").write_text("cpu io\n")
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {"": "/"})
    found = cgroups.hierarchy()
    assert found.version is None and "NO per-episode memory" in found.describe()
    assert cgroups.EpisodeGroup("nrabc13").procs_files() == []  # commands still run


def test_v1_uses_each_controllers_hierarchy(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("memory", "pids", "cpu,cpuacct"):
        (fake_root / name / "user").mkdir(parents=True)
    own = {"memory": "/user", "pids": "/user", "cpu": "/user", "cpuacct": "/user"}
    monkeypatch.setattr(cgroups, "_own_paths", lambda: own)
    found = cgroups.hierarchy()
    assert found.version == 1 and sorted(found.parents) == ["cpu", "memory", "pids"]
    group = cgroups.EpisodeGroup("nrabc14", ("r1", "r2"))
    memory = fake_root / "memory" / "user" / "netarena-route" / "nrabc14"
    assert (memory / "commands" / "memory.limit_in_bytes").read_text() == str(cgroups.MEMORY_BYTES)
    assert not (memory / "commands" / "pids.max").exists()
    router = str(cgroups.ROUTER_LIMITS.memory_bytes)
    assert (memory / "r2" / "memory.limit_in_bytes").read_text() == router
    cpu = fake_root / "cpu,cpuacct" / "user" / "netarena-route" / "nrabc14"
    assert (cpu / "commands" / "cpu.cfs_quota_us").read_text() == "50000"
    pids = fake_root / "pids" / "user" / "netarena-route" / "nrabc14"
    assert (pids / "commands" / "pids.max").exists() and (pids / "r1" / "pids.max").exists()
    group.limit("", cgroups.episode_limits(2))  # once the routers run: all of it together
    assert (cpu / "cpu.cfs_quota_us").read_text() == "100000"
    assert (pids / "pids.max").read_text() == str(cgroups.MAX_TASKS + 2 * 64)


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


def test_groups_weigh_a_process_per_child_when_the_cpu_is_contended(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All episodes' groups under one parent weighed one process together: every router's
    daemons, a process each outside any group, took seconds longer to start when busy."""
    names = ("memory", "pids", "cpu")
    for name in names:
        (fake_root / name / "user").mkdir(parents=True)
    monkeypatch.setattr(cgroups, "_own_paths", lambda: dict.fromkeys(names, "/user"))
    parent = fake_root / "cpu" / "user" / "netarena-route"
    parent.mkdir()
    (parent / "cpu.shares").write_text("1024")
    original = cgroups.make_group

    def make(group: Path, controllers: tuple[str, ...]) -> Path:  # a fake tree has no files
        made = original(group, controllers)
        (made / "cpu.shares").touch()
        return made

    monkeypatch.setattr(cgroups, "make_group", make)
    cgroups.EpisodeGroup("nrabc15", ("r1", "r2", "r3"))
    cgroups.EpisodeGroup("nrabc16")
    assert (parent / "nrabc15" / "cpu.shares").read_text() == str(4 * 1024)
    assert (parent / "nrabc16" / "cpu.shares").read_text() == "1024"
    assert (parent / "cpu.shares").read_text() == str(5 * 1024)
    shutil.rmtree(parent / "nrabc15")  # as its close removes it (a fake tree has files)
    reweigh(parent)
    assert (parent / "cpu.shares").read_text() == "1024"
