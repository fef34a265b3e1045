"""The kernel boundary around MALT answers (issue 11): each finding, as root and as uid 10001.

These attacks run with the audit hook switched off (``audit_hook=False``), so whatever stops
them is the kernel (seccomp, Landlock, namespaces, uids), not the hook; the harness in
``tests/helpers/sandbox_modes.py`` runs each in both modes: root, and uid 10001 without
capabilities as in the official images, where answers share the evaluator's uid. Agent code
reaches raw ``libc`` (``ctypes``) through the worker's own modules, which is strictly more
than the bytearray use-after-free gives: what that cannot do, the UAF cannot either.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from netarena.common.core.types import Query
from netarena.malt import MaltApp, base_topology
from netarena.malt.solver import parse_steps, write_program
from tests.helpers.sandbox_modes import (
    MODES,
    SECRET,
    Evaluator,
    RemoteEvaluator,
    open_evaluator,
)

Ev = Evaluator | RemoteEvaluator
APP = MaltApp({"timeout_s": 1.5})
pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the attacks use x86_64 system call numbers"
)
QUERY = APP.generate(3, 1, "count")
REFERENCE = write_program(parse_steps(QUERY.prompt))

# The worker's modules, ``os``, ``sys`` and raw libc, reached without importing anything.
PRELUDE = """
import traceback
sys = traceback.sys
os = sys.modules["os"]
main = sys.modules["__main__"]
libc = main.kernel._libc
ctypes = main.kernel.ctypes
def errno_of(call):
    try:
        result = call()
    except OSError as exc:
        return exc.errno
    if isinstance(result, int) and result < 0:
        return ctypes.get_errno()
    return "SUCCEEDED"
"""


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.strip("\n").splitlines()) + "\n"


def answer(body: str) -> str:
    """A ``process_graph`` that runs the prelude then ``body``."""
    return "def process_graph(graph_data):\n" + _indent(PRELUDE + body)


def play(ev: Ev, body: str, query: Query = QUERY) -> dict:
    return ev.malt(query.model_dump_json(), answer(body))


def reported(result: dict) -> object:
    """The value an answer raised as ``Exception(json)`` (its way of reporting here)."""
    reason = result["reason"]
    assert reason.startswith("code failed: Exception: "), result
    return json.loads(reason.removeprefix("code failed: Exception: "))


def assert_unharmed(ev: Ev) -> None:
    """The evaluator answers, every worker is alive, and the reference is still correct."""
    info = ev.info()
    assert all(info["workers_alive"]), info
    result = ev.malt(QUERY.model_dump_json(), REFERENCE)
    assert result["correct"] and result["safe"], result


@pytest.fixture(scope="module", params=MODES)
def bare(request: pytest.FixtureRequest) -> Iterator[Ev]:
    """MALT's sandbox without the audit hook (kernel layers only), two workers."""
    evaluator = open_evaluator(request.param, kind="malt", audit_hook=False, workers=2)
    yield evaluator
    evaluator.close()


def test_the_environment_holds_no_secret(bare: Ev) -> None:
    """Before: ``raise Exception(os.environ)`` put every API key into the query's reason."""
    evaluator = bare.info()["pid"]
    body = f"""
seen = {{"environ": dict(os.environ)}}
for pid in ("self", os.getppid(), {evaluator}, 1):
    path = f"/proc/{{pid}}/environ"
    seen[path] = errno_of(lambda: os.open(path, os.O_RDONLY))
raise Exception(sys.modules["json"].dumps(seen))
"""
    result = play(bare, body)
    assert SECRET not in result["reason"]
    seen = reported(result)
    assert seen.pop("environ") == {}
    assert set(seen.values()) == {1}, seen  # EPERM: no path can be opened at all
    assert_unharmed(bare)


SIGNALS = """
import signal
targets = [os.getppid(), {evaluator}, *{workers}, -1, 0]
outcome = {{}}
for pid in targets:
    outcome[f"kill {{pid}}"] = errno_of(lambda: os.kill(pid, signal.SIGKILL))
    outcome[f"libc kill {{pid}}"] = errno_of(lambda: libc.syscall(62, pid, 9))
    outcome[f"tgkill {{pid}}"] = errno_of(lambda: libc.syscall(234, pid, pid, 9))
    outcome[f"tkill {{pid}}"] = errno_of(lambda: libc.syscall(200, pid, 9))
    outcome[f"rt_sigqueueinfo {{pid}}"] = errno_of(lambda: libc.syscall(129, pid, 9, None))
    outcome[f"pidfd_open {{pid}}"] = errno_of(lambda: os.pidfd_open(pid))
    outcome[f"ptrace {{pid}}"] = errno_of(lambda: libc.syscall(101, 16, pid, None, None))
    if pid > 0:  # glibc refuses killpg(-1) and killpg(0) itself
        outcome[f"killpg {{pid}}"] = errno_of(lambda: os.killpg(pid, signal.SIGKILL))
for fd in range(16):
    outcome[f"pidfd_send_signal {{fd}}"] = errno_of(
        lambda: signal.pidfd_send_signal(fd, signal.SIGKILL))
outcome["self"] = errno_of(lambda: os.kill(os.getpid(), 0))
raise Exception(sys.modules["json"].dumps(outcome))
"""


def _signal_outcome(result: dict) -> dict:
    outcome = reported(result)
    assert outcome.pop("self") == "SUCCEEDED"  # signalling itself is allowed (os.abort)
    assert {k: v for k, v in outcome.items() if v != 1} == {}  # EPERM for every other
    return outcome


def test_no_signal_reaches_the_worker_or_the_evaluator(bare: Ev) -> None:
    """Before (uid 10001): ``signal.pidfd_send_signal`` SIGKILLed the green server."""
    info = bare.info()
    body = SIGNALS.format(evaluator=info["pid"], workers=info["workers"])
    _signal_outcome(play(bare, body))
    assert sorted(bare.info()["workers"]) == sorted(info["workers"])
    assert_unharmed(bare)


def test_concurrent_answers_cannot_kill_each_other(bare: Ev) -> None:
    """Before (root): every answer ran as ``nobody`` and killed another evaluation's answer."""
    victim = REFERENCE.replace(
        "def process_graph(graph_data):\n",
        "def process_graph(graph_data):\n    import time\n    time.sleep(0.7)\n",
        1,
    )
    assert victim != REFERENCE
    killer = answer(SIGNALS.replace("targets = [", "targets = [{victim}, ", 1))
    result = bare.race(QUERY.model_dump_json(), victim, killer)
    outcome = _signal_outcome(result["killer"])
    assert outcome[f"kill {result['victim_pid']}"] == 1  # the victim was aimed at, and missed
    assert result["victim"]["correct"] and result["victim"]["safe"], result["victim"]
    assert all(result["workers_alive"])


@pytest.fixture()
def plant_dir() -> Iterator[Path]:
    """A directory anyone may write to: only the sandbox keeps answers from planting here."""
    with tempfile.TemporaryDirectory(prefix="netarena-plant-") as path:
        os.chmod(path, 0o777)
        yield Path(path)


def test_no_fifo_node_or_file_can_be_planted(bare: Ev, plant_dir: Path) -> None:
    """Before: a FIFO planted at a predictable results path hung ``run --out`` and servers."""
    target = plant_dir / "summary.json"
    body = f"""
import stat
p = {str(target)!r}
outcome = {{
    "mkfifo": errno_of(lambda: os.mkfifo(p)),
    "mknod fifo": errno_of(lambda: os.mknod(p, stat.S_IFIFO | 0o666)),
    "mknod chr": errno_of(lambda: os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))),
    "libc mkfifo": errno_of(lambda: libc.mkfifo(p.encode(), 0o666)),
    "libc mknodat": errno_of(lambda: libc.syscall(259, -100, p.encode(), 0o10666, 0)),
    "create": errno_of(lambda: os.open(p, os.O_WRONLY | os.O_CREAT, 0o666)),
    "libc open": errno_of(lambda: libc.open(p.encode(), 0o101, 0o666)),
    "symlink": errno_of(lambda: os.symlink("/etc/passwd", p)),
    "mkdir": errno_of(lambda: os.mkdir(p)),
    "read passwd": errno_of(lambda: os.open("/etc/passwd", os.O_RDONLY)),
    "socket": errno_of(lambda: sys.modules["socket"].socket()),
    "unix socket": errno_of(lambda: libc.socket(1, 1, 0)),
    "io_uring": errno_of(lambda: libc.syscall(425, 8, None)),
    "execve": errno_of(lambda: os.execv("/bin/sh", ["sh"])),
    "fork": errno_of(lambda: libc.fork()),
    "memfd": errno_of(lambda: os.memfd_create("x")),
    "a fresh posix module": errno_of(lambda: sys.modules["_imp"].create_builtin(
        sys.modules["importlib.machinery"].ModuleSpec("posix", None)).open(p, 0o101)),
}}
raise Exception(sys.modules["json"].dumps(outcome))
"""
    outcome = reported(play(bare, body))
    assert {k: v for k, v in outcome.items() if v != 1} == {}, outcome
    assert list(plant_dir.iterdir()) == []
    assert_unharmed(bare)


def test_stat_of_etc_shadow_reveals_nothing(bare: Ev) -> None:
    """Before: ``stat``, ``access`` and ``readlink`` were unaudited (sizes, cwd, open files)."""
    body = """
outcome = {}
for path in ("/etc/shadow", "/etc/no-such-file-here", "/proc/self/cwd", "/"):
    outcome[path] = [
        errno_of(lambda: os.stat(path)),
        errno_of(lambda: os.lstat(path)),
        errno_of(lambda: libc.syscall(21, path.encode(), 0)),  # access
        errno_of(lambda: libc.syscall(439, -100, path.encode(), 0, 0)),  # faccessat2
        errno_of(lambda: libc.syscall(332, -100, path.encode(), 0, 0xFFF, None)),  # statx
        errno_of(lambda: os.readlink(path)),
        errno_of(lambda: os.listdir(path)),
        os.access(path, os.F_OK),
        os.path.exists(path),
        os.path.isfile(path),
    ]
raise Exception(sys.modules["json"].dumps(outcome))
"""
    outcome = reported(play(bare, body))
    # an existing file, a missing one, a symlink and a directory all look alike: refused
    assert len({json.dumps(v) for v in outcome.values()}) == 1, outcome
    assert outcome["/etc/shadow"] == [1] * 7 + [False] * 3


PLANT = """
secret = {secret!r}
import builtins, functools
import networkx as nx
jsonmod = sys.modules["json"]
jsonmod.planted = builtins.planted = nx.planted = nx.DiGraph.planted = main.planted = secret
sys.modules["planted"] = type(sys)(secret)
graph_data.graph["planted"] = secret
graph_data.nodes["ju1"]["planted"] = secret
os.environ["PLANTED"] = secret
def keep():
    here = secret
    yield here
main.kept = keep()
next(main.kept)
main.cache = functools.lru_cache()(lambda x: x)
main.cache(secret)
sys.modules["gc"].freeze()
return {{"type": "text", "data": secret}}
"""

# Looks for the secret without ever building it: the halves are joined only in memory that
# belongs to someone else (a previous answer), never by the hunter itself.
HUNT = """
head, tail = {head!r}, {tail!r}
import gc
import networkx as nx
hits = []
def holds(value):
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if isinstance(value, str):
        at = value.find(head)
        return at >= 0 and value[at + len(head):].startswith(tail)
    return False
for name, module in list(sys.modules.items()):
    if holds(name) or any(holds(v) for v in list(vars(module).values())):
        hits.append("module " + name)
for value in (nx.DiGraph.__dict__.get("planted"), graph_data.graph, graph_data.nodes["ju1"]):
    if holds(value) or holds(repr(value)):
        hits.append("graph or class: " + repr(value)[:80])
if holds(repr(dict(os.environ))):
    hits.append("environ")
frame = sys._getframe()
while frame:
    if any(holds(v) or holds(repr(v)[:10000]) for v in frame.f_locals.values()):
        hits.append("frame " + frame.f_code.co_name)
    frame = frame.f_back
for obj in gc.get_objects():
    for ref in gc.get_referents(obj):
        if holds(ref):
            hits.append("gc " + type(obj).__name__)
# Raw memory: every obmalloc arena holding a live object (freed blocks included) and the
# whole brk heap, probed with madvise (ENOMEM when unmapped) before reading.
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.sbrk.restype = ctypes.c_void_p
block = 1 << 16
def mapped(address):
    return libc.madvise(address, block, 0) == 0
starts = {{id(o) & ~(block - 1) for o in gc.get_objects()}}
top = libc.sbrk(0) & ~(block - 1)
while len(starts) < 8000 and mapped(top - block):
    top -= block
    starts.add(top)
needle_head = head.encode()
scanned = 0
control = {control!r}.encode()
seen_control = False
for start in sorted(starts):
    if not mapped(start):
        continue
    data = ctypes.string_at(start, block)
    scanned += 1
    seen_control = seen_control or control in data
    at = data.find(needle_head)
    while at >= 0:
        if data[at + len(needle_head):].startswith(tail.encode()):
            hits.append(f"memory {{start + at:#x}}")
        at = data.find(needle_head, at + 1)
raise Exception(sys.modules["json"].dumps({{"hits": hits, "scanned": scanned,
                                            "control": seen_control}}))
"""


@pytest.fixture(scope="module", params=MODES)
def single(request: pytest.FixtureRequest) -> Iterator[Ev]:
    """One warm worker without the audit hook: every answer is a fork of the same process."""
    evaluator = open_evaluator(
        request.param, kind="malt", audit_hook=False, workers=1, wall_s=6.0
    )
    yield evaluator
    evaluator.close()


def test_an_answer_cannot_read_the_previous_one(single: Ev) -> None:
    """Before: the warm worker's loop kept the previous output in its frame."""
    secret = f"netarena-planted-{secrets.token_hex(12)}"
    planted = play(single, PLANT.format(secret=secret))
    assert secret in planted["reason"], planted  # it ran and planted everywhere it could
    control = next(n for n in base_topology(APP.config.topology_params()) if n.endswith(".p8"))
    hunt = HUNT.format(head=secret[:20], tail=secret[20:], control=control)
    for _ in range(2):
        found = reported(play(single, hunt))
        assert found["hits"] == [], found
        assert found["scanned"] > 100 and found["control"], found  # the scan does see memory
    assert_unharmed(single)


def test_a_60_mb_answer_is_refused_unread(bare: Ev) -> None:
    """Before: one 60 MB answer cost the evaluator 0.7-1.1 GB and 5-8 s of CPU to parse."""
    forged = (
        "frame = sys._getframe()\n"
        "while frame.f_code.co_name != '_child':\n"
        "    frame = frame.f_back\n"
        "chunk = b'[' * (1 << 20)\n"
        "for _ in range(60):\n"
        "    os.write(frame.f_locals['out_fd'], chunk)\n"
    )
    for body in (
        forged,  # straight to the result pipe: 60 MB of nesting, the worst thing to parse
        "return {'type': 'text', 'data': 'x' * (60 * 1024 * 1024)}",
        "return {'type': 'list', 'data': [[]] * (20 * 1024 * 1024)}",
    ):
        result = bare.peak(QUERY.model_dump_json(), answer(body))
        assert not result["correct"], result
        # refused after the first ~3 MB; or, if serialising 60 MB took the answer past its
        # own time limit first, a timeout: either way nothing big reaches the evaluator
        assert "refused unread" in result["reason"] or "limit" in result["reason"], result
        assert result["peak_bytes"] < 32 * 1024 * 1024, result  # the limit is ~3 MB
        assert result["wall_s"] < 10, result
    assert_unharmed(bare)


UAF = """
victim = bytearray(b"A" * 1)
class Evil:
    def __index__(self):
        victim.clear()
        return 65
counts = [victim.count(Evil())]
for size in (16, 512, 4096, 1 << 16, 1 << 20):
    victim = bytearray(b"A" * size)
    counts.append(victim.count(Evil()))
    victim = bytearray(b"A" * size)
    counts.append(victim.find(Evil()))
return {"type": "text", "data": counts}
"""


def test_the_bytearray_use_after_free_fails_safely(bare: Ev) -> None:
    """CPython < 3.13.12 / 3.14.3 reads freed memory here (gh-142560); it stays in the child."""
    result = play(bare, UAF)
    assert result["done"] and not result["correct"] and result["safe"], result
    reason = result["reason"]
    # fixed interpreters refuse, affected ones return stale counts or crash: all contained
    assert (
        "BufferError" in reason or "expected the number" in reason or "crashed" in reason
    ), reason
    assert_unharmed(bare)
