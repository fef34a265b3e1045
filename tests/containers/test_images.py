"""Static checks of the Dockerfiles and pins (no Docker engine needed)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGES = {"malt": "app-malt", "route": "app-route", "k8s": "app-k8s", "purple": "a2a_llm"}
# What each image installs (repository folders, each its own distribution).
INSTALLS = {"malt": "common app-malt", "route": "common app-route", "k8s": "common app-k8s",
            "purple": "common a2a_llm $APPS"}
DISTRIBUTIONS = ("common", "app-malt", "app-route", "app-k8s", "a2a_llm")


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
    assert health.endswith("CMD netarena-healthcheck")  # any port: the purple's is 9019


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


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_each_image_installs_common_and_only_its_app(image: str) -> None:
    """A green image carries one app's dependencies (no kubernetes client in the malt image)."""
    steps = _instructions(_dockerfile(image))
    install = next(s for s in steps if "docker/install.sh" in s)
    assert f"docker/install.sh {INSTALLS[image]} &&" in install
    if image == "purple":  # reference solvers of every app by default; APPS= for LLM only
        assert 'ARG APPS="app-malt app-route app-k8s"' in steps


def test_constraints_pin_every_runtime_dependency() -> None:
    pins = {}
    for line in (ROOT / "docker" / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep, f"unpinned constraint line: {line}"
            pins[_norm(name)] = version
    deps = []
    for folder in DISTRIBUTIONS:
        project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
        deps += [d for d in project["dependencies"] if not d.startswith("netarena")]
        deps += project.get("optional-dependencies", {}).get("llm", [])
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
    assert _ROUTE_FLAGS in proc.stderr


_ROUTE_FLAGS = ("--cap-drop ALL --cap-add CHOWN --cap-add DAC_OVERRIDE --cap-add KILL "
                "--cap-add NET_ADMIN --cap-add NET_RAW --cap-add SETGID --cap-add SETUID "
                "--cap-add SYS_ADMIN --cap-add SYS_PTRACE "
                "--security-opt seccomp=netarena-route-seccomp.json")
"""The fix the entrypoint names: route's privileges (``netarena.common.launch.privileges``)."""


@pytest.mark.root
@pytest.mark.parametrize("dropped", ["kill", "net_raw", "chown,dac_override", "sys_ptrace"])
def test_entrypoint_names_each_missing_capability(tmp_path: Path, dropped: str) -> None:
    """A container given fewer capabilities than route's (its bounding set, as the engine
    sets it) stops at once naming every one missing."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for tool, body in _FAKE_TOOLS.items():
        (fake_bin / tool).write_text(f"#!/bin/sh\n{body}\n")
        (fake_bin / tool).chmod(0o755)
    drop = ",".join(f"-{cap}" for cap in dropped.split(","))
    proc = subprocess.run(
        [shutil.which("setpriv") or "setpriv", "--bounding-set", drop, "sh",
         str(ROOT / "docker" / "entrypoint.sh")],
        env={"PATH": f"{fake_bin}:/usr/bin:/bin", "NETARENA_NEEDS_NETNS": "1"},
        capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1, proc.stderr
    named = proc.stderr.split("lacks", 1)[1].split(".", 1)[0].split()
    assert named == [f"CAP_{cap.upper()}" for cap in sorted(
        dropped.split(","), key=lambda c: _BITS[c])], proc.stderr
    assert _ROUTE_FLAGS in proc.stderr


_BITS = {"chown": 0, "dac_override": 1, "kill": 5, "net_raw": 13, "sys_ptrace": 19}


def test_scripts_parse() -> None:
    for script in ("scripts/containers.sh", "docker/make-base-image.sh", "docker/entrypoint.sh",
                   "docker/healthcheck.sh"):
        subprocess.run(["bash", "-n", str(ROOT / script)], check=True, timeout=30)


_HEALTH_SERVER = """
import http.server, socket, sys
class S(http.server.HTTPServer):
    address_family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/healthz" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
S((sys.argv[1], int(sys.argv[2])), H).serve_forever()
"""


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="needs root and unshare for a private network namespace")
@pytest.mark.parametrize(("host", "port"), [("0.0.0.0", 9019), ("127.0.0.1", 9009),
                                            ("127.0.0.1", 18123), ("::", 9019)])
def test_healthcheck_finds_the_server_on_any_port(host: str, port: int) -> None:
    """The purple manifests start it on 9019, green ones on 9009: the check finds either.

    In a network namespace of its own (nothing else listening): healthy while the server
    answers /healthz, unhealthy before it starts and after it stops, and a listener that is
    not the server (404 on /healthz) never counts.
    """
    script = f"""
    ip link set lo up
    {ROOT}/docker/healthcheck.sh; echo "before $?"
    python3 -m http.server -b 127.0.0.1 8000 >/dev/null 2>&1 & other=$!
    python3 -c '{_HEALTH_SERVER}' '{host}' {port} & server=$!
    for _ in $(seq 50); do {ROOT}/docker/healthcheck.sh && break; sleep 0.1; done
    {ROOT}/docker/healthcheck.sh; echo "running $?"
    kill $server; wait $server 2>/dev/null
    {ROOT}/docker/healthcheck.sh; echo "stopped $?"
    kill $other
    """
    proc = subprocess.run(["unshare", "--net", "sh", "-c", script], capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.split() == ["before", "1", "running", "0", "stopped", "1"], proc.stderr
