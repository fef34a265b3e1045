"""Static checks of the Dockerfiles and pins (no Docker engine needed)."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGES = {"malt": "app-malt", "route": "app-route", "k8s": "app-k8s", "purple": "a2a_llm"}
SHARED_START = "# --- shared layers"
SHARED_END = "# --- end of shared layers ---"


def _dockerfile(image: str) -> str:
    return (ROOT / IMAGES[image] / "Dockerfile").read_text()


def _instructions(text: str) -> list[str]:
    """Dockerfile instructions with continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_base_image_is_a_build_arg_and_entrypoint_takes_server_flags(image: str) -> None:
    steps = _instructions(_dockerfile(image))
    assert steps[0] == "ARG BASE_IMAGE=python:3.13-slim-bookworm"
    assert steps[1] == "FROM ${BASE_IMAGE}"
    command = "purple" if image == "purple" else f"serve\", \"{image}"
    assert f'ENTRYPOINT ["netarena-entrypoint", "{command}"]' in steps
    assert steps[-1] == 'CMD ["--host", "0.0.0.0", "--port", "9009"]'
    for step in steps:  # nothing fetched outside the package indexes
        assert not re.search(r"\b(git clone|wget|ADD https?:)|curl .*https?://(?!127)", step), step
    health = next(s for s in steps if s.startswith("HEALTHCHECK"))
    assert "curl -fsS http://127.0.0.1:9009/healthz" in health


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_user_is_unprivileged_except_route(image: str) -> None:
    steps = _instructions(_dockerfile(image))
    if image == "route":
        assert not any(s.startswith("USER") for s in steps)
        assert "ENV NETARENA_NEEDS_NETNS=1" in steps
        apt = next(s for s in steps if "apt-get install" in s)
        for pkg in ("iproute2", "iptables", "iputils-ping", "net-tools"):
            assert f" {pkg}" in apt
    else:
        assert "USER netarena" in steps


def test_every_image_installs_curl_for_compose_healthchecks() -> None:
    install = (ROOT / "docker" / "install.sh").read_text()
    assert "apt-get install -y --no-install-recommends curl" in install
    for image in IMAGES:
        assert "docker/install.sh" in _dockerfile(image)


def test_shared_layers_are_identical() -> None:
    """Identical leading layers are built once and shared by all four images."""
    blocks = set()
    for image in IMAGES:
        text = _dockerfile(image)
        head = text[text.index("ARG BASE_IMAGE"):text.index(SHARED_END)]
        assert SHARED_START in head
        blocks.add(head)
    assert len(blocks) == 1


def test_constraints_pin_every_runtime_dependency() -> None:
    pins = {}
    for line in (ROOT / "docker" / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep, f"unpinned constraint line: {line}"
            pins[_norm(name)] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + project["optional-dependencies"]["llm"]
    for dep in deps:
        name = _norm(re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0])
        assert name in pins, f"{name} is not pinned in docker/constraints.txt"
    assert pins["litellm"] not in ("1.82.7", "1.82.8")  # compromised releases
    assert pins["a2a-sdk"].startswith("1.3.")


_FAKE_TOOLS = {
    "unshare": "exit 0",
    "mount": "exit 1",  # never remount the host's /proc or /sys
    "umount": "exit 1",  # never lift the host's mounts
    "setpriv": 'shift 3; exec "$@"',  # as_other: run the command as is
    "readlink": "exit 0",
    "bwrap": "exit 0",
    "netarena": "echo started",
}


@pytest.mark.parametrize(("broken", "problem"), [
    ({"unshare": "exit 1"}, "lacks CAP_NET_ADMIN and CAP_SYS_ADMIN"),
    ({"unshare": 'case "$*" in *ip_forward*) exit 1;; esac; exit 0'},
     "/proc/sys is read-only here"),
    ({"unshare": 'case "$*" in *mnexec*) exit 1;; esac; exit 0'},
     "cannot start in a user namespace"),
    ({"readlink": "exit 1"}, "lacks CAP_SYS_PTRACE"),
    ({"bwrap": "exit 1"}, "pivot_root refused"),
    ({}, None),
])
def test_entrypoint_refuses_route_without_its_privileges(
    tmp_path: Path, broken: dict[str, str], problem: str | None
) -> None:
    """Without each privilege route needs, the image stops at once naming it and the fix."""
    script = ROOT / "docker" / "entrypoint.sh"
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for tool, body in {**_FAKE_TOOLS, **broken}.items():
        (fake_bin / tool).write_text(f"#!/bin/sh\n{body}\n")
        (fake_bin / tool).chmod(0o755)
    env = {"PATH": f"{fake_bin}:/usr/bin:/bin", "NETARENA_NEEDS_NETNS": "1"}
    proc = subprocess.run(["sh", str(script), "--help"], env=env, capture_output=True,
                          text=True, timeout=30)
    if problem is None:
        assert (proc.returncode, proc.stdout.strip()) == (0, "started"), proc.stderr
        return
    assert proc.returncode == 1
    assert problem in proc.stderr
    flags = "--cap-add NET_ADMIN --cap-add SYS_ADMIN --cap-add SYS_PTRACE"
    assert f"{flags} --security-opt seccomp=unconfined" in proc.stderr


def test_scripts_parse() -> None:
    for script in ("scripts/containers.sh", "docker/make-base-image.sh", "docker/entrypoint.sh"):
        subprocess.run(["bash", "-n", str(ROOT / script)], check=True, timeout=30)
