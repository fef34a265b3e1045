"""The sandbox in both of its modes from one test: root (this process) and uid 10001.

CI runs as root; the official images run as uid 10001 with no capabilities. For the second
mode ``open_evaluator("uid10001")`` starts this module as a subprocess with uid and gid 10001
and no capabilities; it builds the same pools there and answers the same calls as JSON lines.
``open_evaluator("root")`` runs them in this process. Tests call one API (``Evaluator``) and
do not know which side answers. The evaluator process holds ``SECRET`` in its environment
(an API key stand-in) so tests can check that no answer ever sees it.
"""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
import sysconfig
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

MODES = ("root", "uid10001")
NONROOT_UID = 10001
SECRET_VAR = "NETARENA_TEST_API_KEY"
SECRET = "sk-netarena-secret-4f1d9a7c"
ROOT = Path(__file__).resolve().parents[2]

#: A generic setup program: ``run`` execs the request and returns ``f(state)`` as JSON.
GENERIC_SETUP = """
import functools
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


def _children_of(pids: list[int]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            if int(status.split("PPid:")[1].split()[0]) in pids:
                found.append(int(entry.name))
    return found


class Evaluator:
    """Pools built in this process, with the calls the tests make."""

    def __init__(
        self, kind: str = "malt", audit_hook: bool = True, workers: int = 1, wall_s: float = 1.5
    ) -> None:
        from netarena.common.sandbox import SandboxLimits, SandboxPool, SandboxSpec

        os.environ.setdefault(SECRET_VAR, SECRET)
        self.kind = kind
        if kind == "malt":
            from netarena.malt import MaltApp, _answer_limit_bytes, _spec, base_topology

            app = MaltApp({"timeout_s": wall_s})
            self.base = base_topology(app.config.topology_params())
            spec = _spec(app.config.topology_params()).model_copy(update={"audit_hook": audit_hook})
            limit = _answer_limit_bytes(spec)
        else:
            spec = SandboxSpec(
                setup_source=GENERIC_SETUP,
                payload=b"[1, 2, 3]",
                preload=("networkx",),
                audit_hook=audit_hook,
            )
            limit = 8 << 20
        limits = SandboxLimits(wall_s=wall_s, cpu_s=math.ceil(wall_s), max_output_bytes=limit)
        self.pool = SandboxPool(spec, limits, workers=workers)

    def raw(self, code: str) -> dict[str, Any]:
        """Run ``code`` as one request: the output text, or the SandboxError's message."""
        from netarena.common.core.errors import SandboxError

        try:
            return {"output": self.pool.run(code.encode()).output.decode(), "error": None}
        except SandboxError as exc:
            return {"output": None, "error": f"{type(exc).__name__}: {exc}"}

    def malt(self, query_json: str, code: str) -> dict[str, Any]:
        """Play ``code`` as the answer to a MALT query: correct, safe and the reason."""
        from netarena.common.core.types import Query
        from netarena.malt.config import MaltConfig
        from netarena.malt.episode import MaltEpisode

        query = Query.model_validate_json(query_json)
        with MaltEpisode(query, self.base, self.pool, MaltConfig()) as episode:
            step = episode.step(f"```python\n{code}\n```")
            score = episode.score()
        return {
            "done": step.done,
            "correct": score.correct,
            "safe": score.safe,
            "reason": str(score.details["reason"]),
        }

    def peak(self, query_json: str, code: str) -> dict[str, Any]:
        """``malt`` with the evaluator's peak Python memory and wall time around it."""
        tracemalloc.start()
        started = time.perf_counter()
        try:
            result = self.malt(query_json, code)
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        return {**result, "peak_bytes": peak, "wall_s": time.perf_counter() - started}

    def info(self) -> dict[str, Any]:
        """This process, its workers and their live children (answers in flight)."""
        workers = self.pool.worker_pids()
        return {
            "pid": os.getpid(),
            "uid": os.getuid(),
            "workers": workers,
            "workers_alive": [Path(f"/proc/{pid}").exists() for pid in workers],
            "children": _children_of(workers),
            "layers": list(self.pool.layers),
        }

    def race(self, query_json: str, victim: str, killer: str) -> dict[str, Any]:
        """Start ``victim``; once its child runs, play ``killer`` formatted with the pids.

        ``killer`` may use ``{victim}`` (the victim answer's pid), ``{workers}`` (the warm
        workers' pids) and ``{evaluator}`` (this process's pid).
        """
        workers = self.pool.worker_pids()
        results: dict[str, Any] = {}
        thread = threading.Thread(
            target=lambda: results.update(victim=self.malt(query_json, victim))
        )
        thread.start()
        deadline = time.monotonic() + 5
        children: list[int] = []
        while not children and time.monotonic() < deadline:
            children = _children_of(workers)
            time.sleep(0.005)
        assert len(children) == 1, children
        code = killer.format(victim=children[0], workers=workers, evaluator=os.getpid())
        results["victim_pid"] = children[0]
        results["killer"] = self.malt(query_json, code)
        thread.join(10)
        results["workers_alive"] = [Path(f"/proc/{pid}").exists() for pid in workers]
        return results

    def close(self) -> None:
        """Stop the pool's workers."""
        self.pool.close()


class RemoteEvaluator:
    """The same calls, answered by an ``Evaluator`` in a subprocess running as uid 10001."""

    def __init__(self, command: list[str], options: dict[str, Any]) -> None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), SECRET_VAR: SECRET}
        self.proc = subprocess.Popen(
            [*command, json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=env,
            user=NONROOT_UID,
            group=NONROOT_UID,
            extra_groups=[],
            text=True,
        )

    def _call(self, op: str, *args: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"op": op, "args": args}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the uid {NONROOT_UID} evaluator died ({self.proc.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise AssertionError(f"uid {NONROOT_UID} evaluator: {reply['error']}")
        return reply["ok"]

    def __getattr__(self, op: str) -> Any:
        if op.startswith("_"):
            raise AttributeError(op)
        return lambda *args: self._call(op, *args)

    def close(self) -> None:
        """Stop the subprocess (its pools close with it)."""
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_BOOT = (
    "import runpy, site, sys; site.addsitedir(sys.argv[1]); sys.path.insert(0, sys.argv[2]); "
    "del sys.argv[1:3]; runpy.run_module('tests.helpers.sandbox_modes', run_name='__main__')"
)


@functools.lru_cache(maxsize=1)
def _nonroot_command() -> list[str] | None:
    """How uid 10001 can run this module: the test interpreter, or the system's interpreter of
    the same version with this environment's packages (when the test one lives under /root)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = sysconfig.get_paths()["purelib"]
    candidates = (
        [sys.executable, "-m", "tests.helpers.sandbox_modes"],
        [f"/usr/bin/{version}", "-c", _BOOT, packages, str(ROOT)],
    )
    for command in candidates:
        try:
            probe = subprocess.run(
                [*command, "--probe"],
                cwd=ROOT,
                user=NONROOT_UID,
                group=NONROOT_UID,
                extra_groups=[],
                capture_output=True,
                timeout=60,
                check=False,
            )
        except OSError:
            continue
        if probe.returncode == 0:
            return command
    return None


def open_evaluator(mode: str, **options: Any) -> Evaluator | RemoteEvaluator:
    """An evaluator in ``mode`` (``root`` or ``uid10001``); skips when the mode is impossible."""
    root = os.geteuid() == 0
    if mode == "root":
        if not root:
            pytest.skip("root mode needs root (CI runs as root)")
        return Evaluator(**options)
    if not root:
        return Evaluator(**options)  # already unprivileged
    command = _nonroot_command()
    if command is None:
        pytest.skip(f"no Python interpreter uid {NONROOT_UID} may run with these packages")
    return RemoteEvaluator(command, options)


def _serve(options: dict[str, Any]) -> None:
    evaluator = Evaluator(**options)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = {"ok": getattr(evaluator, request["op"])(*request["args"])}
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    evaluator.close()


if __name__ == "__main__":
    if sys.argv[1:] == ["--probe"]:
        import netarena.common.sandbox  # noqa: F401 - the probe: can this user import it?
    else:
        _serve(json.loads(sys.argv[1]))
