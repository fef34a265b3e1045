"""The generic sandbox: hostile code fails with a clear reason and the evaluator is unharmed.

The behaviour tests run in both modes (``tests/helpers/sandbox_modes.py``): as root, and as
uid 10001 without capabilities like the official images. Pool mechanics (closing, sharing,
broken workers, start-up checks) run in this process.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netarena.common.core.errors import SandboxError, SandboxUnavailable
from netarena.common.sandbox import (
    KEEP_WARM,
    HostLayers,
    SandboxLimits,
    SandboxPool,
    SandboxSpec,
    host_layers,
    kernel,
    shared_pool,
)
from netarena.common.sandbox import host as host_module
from netarena.common.sandbox import pool as pool_module
from netarena.common.sandbox.confine import UID_BASE
from netarena.common.sandbox.worker import Worker, WorkerOptions
from tests.helpers.sandbox_modes import (
    GENERIC_SETUP,
    MODES,
    Evaluator,
    RemoteEvaluator,
    open_evaluator,
)

SETUP = GENERIC_SETUP


@pytest.fixture(scope="module", params=MODES)
def ev(request: pytest.FixtureRequest) -> Iterator[Evaluator | RemoteEvaluator]:
    """A generic pool in each mode (two workers)."""
    evaluator = open_evaluator(request.param, kind="generic", workers=2)
    yield evaluator
    evaluator.close()


def call(ev: Evaluator | RemoteEvaluator, body: str) -> dict:
    out = ev.raw(f"def f(state):\n{body}\n")
    assert out["error"] is None, out
    return json.loads(out["output"])


def test_preloaded_state_and_allowed_imports(ev: Evaluator | RemoteEvaluator) -> None:
    assert call(ev, "    return sum(state)") == {"ok": 6}
    got = call(
        ev,
        "    import networkx as nx, math\n    return [len(nx.path_graph(3)), math.floor(2.5)]",
    )
    assert got == {"ok": [3, 2]}


def test_each_run_starts_from_the_pristine_state(ev: Evaluator | RemoteEvaluator) -> None:
    assert call(ev, "    state.append(99)\n    return len(state)") == {"ok": 4}
    assert call(ev, "    return len(state)") == {"ok": 3}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("    return open('/etc/passwd').read()", "open '/etc/passwd' is not allowed"),
        ("    open('/tmp/netarena-sandbox-pwned', 'w').write('x')", "is not allowed"),
        ("    import socket\n    socket.socket().connect(('127.0.0.1', 9))", "socket"),
        ("    import os\n    while True:\n        os.fork()", "os.fork is not allowed"),
        ("    return len(bytearray(4 * 1024 ** 3))", "MemoryError"),
        (
            "    import netarena.malt.operations",
            "import of 'netarena.malt.operations' is not allowed",
        ),
        ("    import os\n    return os.listdir('/')", "os.listdir"),
        ("    import subprocess", "import of 'subprocess' is not allowed"),
        ("    import ctypes", "import of 'ctypes' is not allowed"),
        ("    import threading\n    threading.Thread(target=len).start()", "new thread"),
    ],
    ids=[
        "read-passwd",
        "write-file",
        "socket",
        "fork-loop",
        "alloc-4GB",
        "import-netarena",
        "listdir",
        "subprocess",
        "ctypes",
        "thread",
    ],
)
def test_hostile_code_fails_with_a_clear_reason(
    ev: Evaluator | RemoteEvaluator, body: str, reason: str
) -> None:
    out = call(ev, body)
    assert "error" in out and reason in out["error"], out
    assert call(ev, "    return sum(state)") == {"ok": 6}  # the next answer is unaffected
    assert not Path("/tmp/netarena-sandbox-pwned").exists()


def test_infinite_loop_hits_the_limit_and_the_pool_recovers(
    ev: Evaluator | RemoteEvaluator,
) -> None:
    out = ev.raw("def f(state):\n    while True:\n        pass\n")
    assert out["error"].startswith("SandboxTimeout") and "limit" in out["error"], out
    assert call(ev, "    return 1") == {"ok": 1}


def test_a_child_that_exits_or_crashes_is_reported(ev: Evaluator | RemoteEvaluator) -> None:
    assert ev.raw("import os\nos._exit(0)\n") == {"output": "", "error": None}
    assert "aborted" in ev.raw("import os\nos.abort()\n")["error"]
    assert call(ev, "    return 2") == {"ok": 2}


def test_every_answer_runs_under_the_kernel_layers(ev: Evaluator | RemoteEvaluator) -> None:
    info = ev.info()
    layers = set(info["layers"])
    assert {"rlimits", "seccomp", "audit-hook"} <= layers
    if kernel.landlock_abi():
        assert f"landlock-abi{kernel.landlock_abi()}" in layers
    who = "    import os\n    return [os.getuid(), os.getgid(), os.getcwd(), dict(os.environ)]"
    first, second = call(ev, who)["ok"], call(ev, who)["ok"]
    if info["uid"] == 0:
        assert {"netns", "chroot", "uid-per-answer"} <= layers
        # a uid of its own per answer, nobody else's: answers cannot signal each other
        assert first[0] >= UID_BASE and first[0] == first[1] and first[0] != second[0]
    else:
        assert first[0] == info["uid"] == second[0]
    assert first[2:] == ["/", {}]


def test_an_answer_cannot_pass_for_a_confinement_failure(ev: Evaluator | RemoteEvaluator) -> None:
    """The worker learns the child was confined before the code ran; exit codes prove nothing."""
    fake = (
        "import sys\nframe = sys._getframe()\n"
        "while frame.f_code.co_name != '_child':\n    frame = frame.f_back\n"
        "import os\nos.write(frame.f_locals['out_fd'], b'confinement failed: fake')\n"
        "os._exit(3)\n"
    )
    assert ev.raw(fake) == {"output": "confinement failed: fake", "error": None}


@pytest.mark.root
def test_a_confinement_failure_runs_no_code_and_says_why() -> None:
    spec = SandboxSpec(setup_source=SETUP, payload=b"[]")
    options = WorkerOptions(chroot="/nonexistent-netarena-chroot")
    worker = Worker(spec, SandboxLimits(), options)
    try:
        info, output = worker.run(b"def f(state):\n    return 1\n", 5.0)
    finally:
        worker.kill()
    assert info["confined"] is False and info["exit_code"] == 3, info
    assert output.startswith(b"confinement failed: FileNotFoundError"), output


def test_closed_pool_refuses_work() -> None:
    spec = SandboxSpec(setup_source=SETUP, payload=b"[]")
    sandbox = SandboxPool(spec, workers=1)
    sandbox.close()
    sandbox.close()
    with pytest.raises(SandboxError, match="closed"):
        sandbox.run(b"")


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _rogue_setup(message: bytes) -> str:
    """A setup program that sends ``message`` on the control socket before the worker does."""
    return SETUP + (
        "\nimport os, socket, sys\n"
        f"socket.socket(fileno=os.dup(int(sys.argv[1]))).send({message!r})\n"
    )


def test_close_kills_a_worker_that_is_busy() -> None:
    sandbox = SandboxPool(SandboxSpec(setup_source=SETUP, payload=b"[]"), workers=1)
    (pid,) = sandbox.worker_pids()
    assert json.loads(sandbox.run(b"def f(state):\n    return 1\n").output) == {"ok": 1}
    results: list[dict] = []
    slow = b"def f(state):\n    import time\n    time.sleep(0.8)\n    return 2\n"
    runner = threading.Thread(target=lambda: results.append(json.loads(sandbox.run(slow).output)))
    runner.start()
    deadline = time.monotonic() + 5
    while sandbox.worker_pids() and time.monotonic() < deadline:
        time.sleep(0.01)
    sandbox.close()
    runner.join(10)
    assert results == [{"ok": 2}]  # the answer in flight still completes
    assert not _alive(pid)
    assert sandbox.worker_pids() == []


@pytest.mark.parametrize(
    ("setup", "reason", "at_start"),
    [
        (_rogue_setup(b"oops"), "malformed message", True),
        (_rogue_setup(b'{"ready": true}'), "malformed status", False),
        (SETUP + "\nraise ValueError('no topology')\n", "failed to start: ValueError", True),
    ],
    ids=["garbage", "desynchronised", "setup-fails"],
)
def test_a_broken_worker_is_killed_and_replaced(setup: str, reason: str, at_start: bool) -> None:
    sandbox = SandboxPool(SandboxSpec(setup_source=setup, payload=b"[]"), workers=1)
    try:
        (pid,) = sandbox.worker_pids()
        with pytest.raises(SandboxError, match=reason) as raised:
            sandbox.run(b"def f(state):\n    return 1\n")
        # a worker that never became ready is the host's failure, not the answer's
        assert isinstance(raised.value, SandboxUnavailable) is at_start
        assert not _alive(pid)
        (replacement,) = sandbox.worker_pids()
        assert replacement != pid and _alive(replacement)
    finally:
        sandbox.close()


def _spec(n: int) -> SandboxSpec:
    return SandboxSpec(setup_source=SETUP, payload=json.dumps([n]).encode())


def test_shared_pools_are_bounded_and_never_closed_under_a_holder() -> None:
    held = shared_pool(_spec(-1), workers=1)
    assert shared_pool(_spec(-1), workers=1) is held
    bigger = shared_pool(_spec(-1), workers=3)
    assert bigger is not held and len(bigger.worker_pids()) == 3
    del bigger
    pids = [shared_pool(_spec(n), workers=1).worker_pids()[0] for n in range(KEEP_WARM + 2)]
    gc.collect()
    assert [_alive(pid) for pid in pids] == [False, False] + [True] * KEEP_WARM
    # ``held`` was pushed out of the warm set long ago, but its holder can still use it.
    assert not held.closed
    assert json.loads(held.run(b"def f(state):\n    return state\n").output) == {"ok": [-1]}
    (held_pid,) = held.worker_pids()
    del held
    gc.collect()
    assert not _alive(held_pid)


def test_without_seccomp_no_answer_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """No kernel boundary, no run: a clear error instead of code run behind the hook alone."""
    broken = HostLayers(
        seccomp="seccomp unavailable (RuntimeError: Unable to find libseccomp)",
        landlock_abi=0,
        root=False,
        netns=False,
        chroot=False,
        setuid=False,
    )
    monkeypatch.setattr(host_module, "host_layers", lambda: broken)
    with pytest.raises(SandboxError, match="cannot confine agent code: .*libseccomp"):
        SandboxPool(_spec(0), workers=1)


def test_start_up_check_names_every_missing_layer() -> None:
    notes = HostLayers(
        seccomp=None, landlock_abi=0, root=True, netns=False, chroot=False, setuid=False
    ).missing(privileged=True)
    text = "\n".join(notes)
    assert "no CAP_SYS_ADMIN" in text and "seccomp and Landlock only" in text
    assert "no Landlock" in text and "CAP_SYS_CHROOT" in text and "CAP_SETUID" in text
    assert HostLayers(
        seccomp=None, landlock_abi=7, root=False, netns=False, chroot=False, setuid=False
    ).missing(privileged=False) == [n for n in notes if "use-after-free" in n]


def test_host_layers_match_this_kernel() -> None:
    host = host_layers()
    assert host.seccomp is None
    assert host.landlock_abi == kernel.landlock_abi()
    assert host.root == (os.geteuid() == 0)


_NO_SYS_ADMIN = """
import json, logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
from netarena.common.sandbox import SandboxPool, SandboxSpec
from tests.helpers.sandbox_modes import GENERIC_SETUP
pool = SandboxPool(SandboxSpec(setup_source=GENERIC_SETUP, payload=b"[1, 2]"), workers=1)
out = pool.run(b"def f(state):\\n    import os\\n    return [sum(state), os.getuid()]\\n")
print(json.dumps({"layers": pool.layers, "answer": json.loads(out.output)}))
pool.close()
"""


@pytest.mark.root
def test_root_without_cap_sys_admin_still_scores_and_says_so() -> None:
    """Before: every query silently unscored (``unshare --net`` failed at each worker start)."""
    result = subprocess.run(
        ["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--",
         sys.executable, "-c", _NO_SYS_ADMIN],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["answer"]["ok"][0] == 3 and report["answer"]["ok"][1] >= UID_BASE
    assert "netns" not in report["layers"] and "seccomp" in report["layers"]
    assert "no CAP_SYS_ADMIN" in result.stderr
    assert "running with seccomp and Landlock only" in result.stderr


def test_the_start_up_report_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    pool_module._REPORTED.clear()
    with caplog.at_level(logging.INFO, logger="netarena.common.sandbox.pool"):
        sandbox = SandboxPool(_spec(1), workers=1)
        sandbox.close()
    assert any(
        r.message.startswith("sandbox layers: rlimits, seccomp") for r in caplog.records
    ), caplog.text


_LANDLOCK_ALONE = """
import json, os, signal, sys, sysconfig
from netarena.common.sandbox import kernel
stdlib = sysconfig.get_paths()["stdlib"]
ruleset = kernel.landlock_ruleset([stdlib])
kernel.landlock_restrict(ruleset)
def errno_of(call):
    try:
        call()
    except OSError as exc:
        return exc.errno
    return 0
print(json.dumps({
    "read stdlib": errno_of(lambda: open(os.path.join(stdlib, "os.py")).read(1)),
    "read passwd": errno_of(lambda: open("/etc/passwd").read(1)),
    "write tmp": errno_of(lambda: open(sys.argv[1] + "/x", "w")),
    "mkfifo": errno_of(lambda: os.mkfifo(sys.argv[1] + "/fifo")),
    "signal parent": errno_of(lambda: os.kill(os.getppid(), 0)),
    "signal self": errno_of(lambda: os.kill(os.getpid(), 0)),
}))
"""


@pytest.mark.skipif(kernel.landlock_abi() < 6, reason="needs Landlock ABI 6 (kernel >= 6.12)")
def test_the_landlock_layer_holds_on_its_own(tmp_path: Path) -> None:
    """Without seccomp: only the runtime is readable, nothing writable, no signal out."""
    os.chmod(tmp_path, 0o777)
    result = subprocess.run(
        [sys.executable, "-c", _LANDLOCK_ALONE, str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=True,
    )
    assert json.loads(result.stdout) == {
        "read stdlib": 0,
        "read passwd": 13,  # EACCES: Landlock's answer (seccomp's is EPERM)
        "write tmp": 13,
        "mkfifo": 13,
        "signal parent": 1,  # EPERM: outside this Landlock domain
        "signal self": 0,
    }
    assert list(tmp_path.iterdir()) == []


def test_a_new_chroot_removes_those_whose_process_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pool whose process was killed outright left its empty chroot; the next one removes it."""
    monkeypatch.setattr(pool_module.tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()
    prefix = pool_module.CHROOT_PREFIX
    stale = tmp_path / f"{prefix}{gone.pid}-a1"
    live = tmp_path / f"{prefix}{os.getpid()}-b2"
    not_empty = tmp_path / f"{prefix}{gone.pid}-c3"
    unnamed = tmp_path / f"{prefix}d4e5"
    for path in (stale, live, not_empty, unnamed):
        path.mkdir()
    (not_empty / "kept").write_text("x")
    new = Path(pool_module.empty_root())
    assert not stale.exists()
    assert live.exists() and not_empty.exists() and unnamed.exists()
    assert new.parent == tmp_path and new.name.startswith(f"{prefix}{os.getpid()}-")
    assert not any(new.iterdir()) and new.stat().st_mode & 0o777 == 0o555
