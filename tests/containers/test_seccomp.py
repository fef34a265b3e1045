"""Route's seccomp profile and capabilities, as a container gets them, without an engine.

``tests.helpers.seccomp_profile`` loads the profile through libseccomp the way the engine
(runc) loads it and keeps only route's capabilities in the bounding set; what the route
emulator does must work there, and what the profile leaves out must be refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from netarena.common.launch.privileges import ROUTE_CAPABILITIES
from netarena.common.launch.seccomp import profile_text, route_profile

pytestmark = pytest.mark.root
ROOT = Path(__file__).resolve().parents[2]
CAPS = ",".join(ROUTE_CAPABILITIES)

_PROBE = """
import ctypes, json, os, sys
import pyseccomp
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name in sys.argv[1:]:
    ctypes.set_errno(0)
    libc.syscall(pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name), 0, 0, 0, 0, 0)
    out[name] = ctypes.get_errno()
print(json.dumps(out))
"""
"""Calls each named system call with zero arguments; prints each one's errno."""


def _run(profile: Path, *command: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.helpers.seccomp_profile", str(profile),
                           CAPS, *command], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout_s)


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    path = tmp_path / "netarena-route-seccomp.json"
    path.write_text(profile_text())
    return path


def test_the_namespaces_mounts_and_sandbox_route_builds_work(profile: Path) -> None:
    for command in (["bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname",
                     "r0", "--ro-bind", "/", "/", "--proc", "/proc", "true"],  # as route does
                    ["unshare", "--net", "--mount", "--uts", "--pid", "--fork", "true"],
                    ["setpriv", "--reuid=65533", "--regid=65533", "--clear-groups", "true"]):
        proc = _run(profile, *command)
        assert proc.returncode == 0, (command, proc.stderr)


def test_what_the_profile_leaves_out_is_refused(profile: Path) -> None:
    names = ["bpf", "io_uring_setup", "ptrace", "keyctl", "setdomainname", "kexec_load",
             "perf_event_open", "userfaultfd", "init_module", "syslog"]
    proc = _run(profile, sys.executable, "-c", _PROBE, *names)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == dict.fromkeys(names, 1)  # EPERM, the profile's answer
    allowed = _run(profile, sys.executable, "-c", _PROBE, "pivot_root", "getpid")
    assert 1 not in json.loads(allowed.stdout).values()  # reached the kernel


def test_without_pivot_root_the_sandbox_cannot_start(tmp_path: Path) -> None:
    """The profile is what lets bubblewrap run (Docker's default refuses pivot_root)."""
    narrowed = route_profile()
    for rule in narrowed["syscalls"]:
        rule["names"] = [n for n in rule["names"] if n != "pivot_root"]
    path = tmp_path / "no-pivot-root.json"
    path.write_text(json.dumps(narrowed))
    proc = _run(path, "bwrap", "--ro-bind", "/", "/", "true")
    assert proc.returncode != 0


@pytest.mark.slow
def test_route_episodes_are_solved_under_the_profile_and_capabilities(profile: Path) -> None:
    netarena = str(Path(sys.executable).parent / "netarena")
    proc = _run(profile, netarena, "run", "route", "--agent", "reference", "-n", "3",
                "--seed", "5", "--levels", "1,2,3", "--json", timeout_s=280)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["correctness"]["k"] == summary["queries"] == 3, proc.stderr[-2000:]
    assert summary["unscored"] == 0 and summary["safety"]["k"] == 3
