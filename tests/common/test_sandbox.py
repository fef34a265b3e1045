"""The generic sandbox: hostile code fails with a clear reason and the evaluator is unharmed."""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netarena.common.errors import SandboxError, SandboxTimeout
from netarena.common.sandbox import (
    KEEP_WARM,
    SandboxLimits,
    SandboxPool,
    SandboxSpec,
    shared_pool,
)

SETUP = """
import json

def setup(payload):
    return json.loads(payload)

def run(state, request):
    namespace = {}
    try:
        exec(compile(request.decode(), "<agent>", "exec"), namespace)
        return json.dumps({"ok": namespace["f"](state)}).encode()
    except BaseException as exc:
        return json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
"""


@pytest.fixture(scope="module", params=[None, False], ids=["auto", "unprivileged"])
def pool(request: pytest.FixtureRequest) -> Iterator[SandboxPool]:
    """The default pool, and one limited to the layers an unprivileged user gets."""
    spec = SandboxSpec(setup_source=SETUP, payload=b"[1, 2, 3]", preload=("networkx",))
    limits = SandboxLimits(wall_s=1.5, cpu_s=1)
    sandbox = SandboxPool(spec, limits, workers=2, privileged=request.param)
    yield sandbox
    sandbox.close()


def call(pool: SandboxPool, body: str) -> dict:
    return json.loads(pool.run(f"def f(state):\n{body}\n".encode()).output)


def test_preloaded_state_and_allowed_imports(pool: SandboxPool) -> None:
    assert call(pool, "    return sum(state)") == {"ok": 6}
    got = call(
        pool,
        "    import networkx as nx, math\n    return [len(nx.path_graph(3)), math.floor(2.5)]",
    )
    assert got == {"ok": [3, 2]}


def test_each_run_starts_from_the_pristine_state(pool: SandboxPool) -> None:
    assert call(pool, "    state.append(99)\n    return len(state)") == {"ok": 4}
    assert call(pool, "    return len(state)") == {"ok": 3}


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
    ],
)
def test_hostile_code_fails_with_a_clear_reason(pool: SandboxPool, body: str, reason: str) -> None:
    out = call(pool, body)
    assert "error" in out and reason in out["error"], out
    assert call(pool, "    return sum(state)") == {"ok": 6}  # the next answer is unaffected
    assert not Path("/tmp/netarena-sandbox-pwned").exists()


def test_infinite_loop_hits_the_limit_and_the_pool_recovers(pool: SandboxPool) -> None:
    with pytest.raises(SandboxTimeout, match="limit"):
        pool.run(b"def f(state):\n    while True:\n        pass\n")
    assert call(pool, "    return 1") == {"ok": 1}


def test_a_child_that_exits_or_crashes_is_reported(pool: SandboxPool) -> None:
    assert pool.run(b"import os\nos._exit(0)\n").output == b""
    crash = b"import os\nos.abort()\n"
    with pytest.raises(SandboxError, match="aborted"):
        pool.run(crash)
    assert call(pool, "    return 2") == {"ok": 2}


@pytest.mark.root
def test_workers_are_confined_as_root(pool: SandboxPool) -> None:
    if not pool.privileged:
        pytest.skip("the unprivileged pool has no namespace, chroot or uid change by design")
    assert call(pool, "    import os\n    return [os.getuid(), os.getcwd()]") == {
        "ok": [65534, "/"]
    }
    pid = pool.worker_pids()[0]
    assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")


def test_closed_pool_refuses_work() -> None:
    spec = SandboxSpec(setup_source=SETUP, payload=b"[]")
    sandbox = SandboxPool(spec, workers=1)
    sandbox.close()
    sandbox.close()
    with pytest.raises(SandboxError, match="closed"):
        sandbox.run(b"")


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _rogue_setup(frame: bytes) -> str:
    """A setup program that writes ``frame`` to the evaluator pipe before the zygote's own."""
    return SETUP + (
        "\nimport struct, sys\n"
        f"sys.stdout.buffer.write(struct.pack('>I', {len(frame)}) + {frame!r})\n"
        "sys.stdout.buffer.flush()\n"
    )


def test_close_kills_a_worker_that_is_busy() -> None:
    sandbox = SandboxPool(SandboxSpec(setup_source=SETUP, payload=b"[]"), workers=1)
    (pid,) = sandbox.worker_pids()
    assert call(sandbox, "    return 1") == {"ok": 1}  # the worker is warm
    results: list[dict] = []
    runner = threading.Thread(
        target=lambda: results.append(
            call(sandbox, "    import time\n    time.sleep(0.8)\n    return 2")
        )
    )
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
    ("frame", "reason"),
    [(b"oops", "failed to start"), (b"ready", "malformed")],
    ids=["failed-start", "desynchronised"],
)
def test_a_broken_worker_is_killed_and_replaced(frame: bytes, reason: str) -> None:
    sandbox = SandboxPool(SandboxSpec(setup_source=_rogue_setup(frame), payload=b"[]"), workers=1)
    try:
        (pid,) = sandbox.worker_pids()
        with pytest.raises(SandboxError, match=reason):
            sandbox.run(b"def f(state):\n    return 1\n")
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
    assert not held.closed and call(held, "    return state") == {"ok": [-1]}
    (held_pid,) = held.worker_pids()
    del held
    gc.collect()
    assert not _alive(held_pid)
