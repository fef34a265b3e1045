"""Attacks by MALT agent code on the sandbox and the evaluator (brief §9).

Every test is one attack that worked or was plausible; passing means it is refused and the
evaluator keeps working. Each runs in both modes (``tests/helpers/sandbox_modes.py``): as root
(network namespace, chroot, a uid per answer, plus the kernel layers) and as uid 10001 without
capabilities, as in the official images (the kernel layers only). The audit hook is on here,
so most refusals carry its clear message; ``test_malt_kernel.py`` runs the findings of issue 11
with the hook off, to show the kernel alone holds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from netarena.common.core.errors import SandboxError
from netarena.common.core.types import Query
from netarena.malt import MaltApp
from netarena.malt.episode import parse_output
from netarena.malt.solver import parse_steps, write_program
from tests.helpers.sandbox_modes import MODES, Evaluator, RemoteEvaluator, open_evaluator

Ev = Evaluator | RemoteEvaluator
APP = MaltApp({"timeout_s": 1.5})
PWNED = Path("/tmp/netarena-security-pwned")

# Reaching the worker's module, ``sys`` and ``os`` without importing them (already loaded).
PRELUDE = """
import traceback
sys = traceback.sys
os = sys.modules["os"]
main = sys.modules["__main__"]
"""


@pytest.fixture(scope="module", params=MODES)
def ev(request: pytest.FixtureRequest) -> Iterator[Ev]:
    """MALT's real sandbox (audit hook on) as root and as uid 10001."""
    evaluator = open_evaluator(request.param, kind="malt", workers=1)
    yield evaluator
    evaluator.close()


@pytest.fixture(scope="module")
def count_query() -> Query:
    """A read-only query whose answer is one number."""
    return APP.generate(3, 1, "count")


def play(ev: Ev, query: Query, body: str) -> tuple[bool, bool, str]:
    """Run ``process_graph`` with ``body`` (after the prelude) as one MALT answer."""
    code = "def process_graph(graph_data):\n" + _indent(PRELUDE + body)
    result = ev.malt(query.model_dump_json(), code)
    assert result["done"]
    return result["correct"], result["safe"], result["reason"]


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.strip("\n").splitlines()) + "\n"


def reference_still_works(ev: Ev, query: Query) -> None:
    result = ev.malt(query.model_dump_json(), write_program(parse_steps(query.prompt)))
    assert result["correct"], result


FILE_ATTACKS = {
    "rebind-deny-lists": (
        "main._DENY_PREFIXES = ()\nmain._DENY_EXACT = frozenset()\n"
        "return {'type': 'text', 'data': str(os.listdir('/'))}",
        "os.listdir '/' is not allowed",
    ),
    "rebind-builtins": (
        "import builtins\nbuiltins.str = lambda x: 'math'\n"
        "builtins.isinstance = lambda *a: False\nbuiltins.PermissionError = Warning\n"
        "return {'type': 'text', 'data': open('/etc/passwd').read()}",
        "open '/etc/passwd' is not allowed",
    ),
    "str-subclass-import": (
        "class S(str):\n    def __str__(self): return 'math'\n"
        "sys.path[:] = [os.path.dirname(os.__file__)]\n__import__(S('ctypes'))",
        "import by a non-str name is not allowed",
    ),
    "importlib": (
        "sys.path[:] = [os.path.dirname(os.__file__)]\n"
        "sys.modules['importlib'].import_module('ctypes')",
        "No module named 'ctypes'",  # the finder may not list directories
    ),
    "ctypes-via-the-worker": (  # past the hook (a bound libc function): the kernel refuses
        "libc = main.kernel._libc\n"
        "fd = libc.syscall(257, -100, b'/etc/passwd', 0)\n"
        "raise PermissionError(f'openat gave {fd}')",
        "openat gave -1",
    ),
    "io-fileio": ("import io\nreturn {'data': io.FileIO('/etc/passwd').read()}", "open"),
    "io-open-code": ("import io\nio.open_code('/etc/passwd')", "open"),
    "os-open": ("os.open('/etc/passwd', os.O_RDONLY)", "open"),
    "posix-open": ("sys.modules['posix'].open('/etc/passwd', 0)", "open"),
    "pathlib": ("import pathlib\npathlib.Path('/etc/passwd').read_text()", "is not allowed"),
    "subclasses-fileio": (
        "cls = [c for c in object.__subclasses__() if c.__name__ == '_IOBase'][0]\n"
        "fio = [c for c in cls.__subclasses__()[0].__subclasses__() if 'FileIO' in c.__name__]\n"
        "sys.modules['_io'].FileIO('/etc/passwd')",
        "open",
    ),
    "write-file": (f"open('{PWNED}', 'w').write('x')", "is not allowed"),
    "mmap": ("import mmap", "import of 'mmap' is not allowed"),
    "ctypes": ("import ctypes", "import of 'ctypes' is not allowed"),
    "os-system": ("os.system('id')", "is not allowed"),
    "posix-spawn": ("os.posix_spawn('/bin/sh', ['sh'], {})", "os.posix_spawn"),
    "execv": ("os.execv('/bin/sh', ['sh'])", "os.exec"),
    "gc-get-objects": (
        "import gc\nreturn {'data': len(gc.get_objects())}",
        "gc.get_objects",
    ),
    "code-new-bytecode": (
        "c = (lambda: 0).__code__.replace(co_consts=())\nreturn {'data': c}",
        "code.__new__",
    ),
    "settrace": ("sys.settrace(lambda *a: None)", "sys.settrace is not allowed"),
    "setprofile": ("sys.setprofile(lambda *a: None)", "sys.setprofile is not allowed"),
    "kill-parent": ("os.kill(os.getppid(), 9)", "os.kill"),
    "socket": (
        "import socket\nsocket.create_connection(('127.0.0.1', 9))",
        "is not allowed",
    ),
}


@pytest.mark.parametrize("attack", sorted(FILE_ATTACKS))
def test_escape_attempts_are_refused(ev: Ev, count_query: Query, attack: str) -> None:
    body, reason = FILE_ATTACKS[attack]
    correct, safe, got = play(ev, count_query, body)
    assert not correct and safe
    assert reason in got, got
    assert "root:" not in got
    assert not PWNED.exists()


def test_hook_makes_no_global_lookups() -> None:
    """The audit hook reads nothing agent code could rebind (module globals, builtins)."""
    import dis

    from netarena.common.sandbox import confine

    (hook,) = [
        c for c in confine.arm_audit_hook.__code__.co_consts if getattr(c, "co_name", "") == "hook"
    ]
    lookups = [i.argval for i in dis.get_instructions(hook) if "GLOBAL" in i.opname]
    assert lookups == []


RUNTIME_ATTACKS = {
    "system-exit": ("raise SystemExit(0)", "code failed: SystemExit"),
    "keyboard-interrupt": ("raise KeyboardInterrupt", "code failed: KeyboardInterrupt"),
    "base-exception": (
        "class E(BaseException): pass\nraise E('x')",
        "code failed: E",
    ),
    "os-exit-silent": ("os._exit(0)", "without producing an answer"),
    "sleep-forever": ("import time\ntime.sleep(60)", "wall-clock limit"),
    "ignore-sigxcpu-and-spin": (
        "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True: pass",
        "limit",
    ),
    "threads-outliving-the-answer": (
        "import threading, time\nfor _ in range(200):\n"
        "    threading.Thread(target=time.sleep, args=(60,)).start()\n"
        "return {'type': 'text', 'data': -1}",
        "",  # refused (rlimits) or judged wrong at once: the exit takes every thread along
    ),
    "memory-4GB": ("return {'data': bytearray(4 * 1024 ** 3)}", "MemoryError"),
    "recursion-unbounded": (
        "sys.setrecursionlimit(10 ** 7)\ndef f(n): return f(n + 1)\nf(0)",
        "sandbox",
    ),
    "huge-answer": ("return {'type': 'text', 'data': 'x' * (8 * 1024 ** 2)}", "larger than"),
}


@pytest.mark.parametrize("attack", sorted(RUNTIME_ATTACKS))
def test_runtime_attacks_cost_only_the_query(
    ev: Ev, count_query: Query, attack: str
) -> None:
    body, reason = RUNTIME_ATTACKS[attack]
    correct, _, got = play(ev, count_query, body)
    assert not correct
    assert reason in got, got
    reference_still_works(ev, count_query)


def test_closing_the_pipe_and_lingering_is_a_timeout_and_leaves_no_process(
    ev: Ev, count_query: Query
) -> None:
    """Before the fix the worker blocked in waitpid, was killed, and orphaned the child."""
    body = (
        "fr = sys._getframe()\nwhile fr.f_code.co_name != '_child':\n    fr = fr.f_back\n"
        "fd = fr.f_locals['out_fd']\n"
        'os.write(fd, b\'{"error": null, "answer": {"type": "text", "data": 1}, '
        '"diff": {"nodes": {}, "edges": []}}\')\n'
        "os.close(fd)\nimport time\ntime.sleep(30)"
    )
    workers = ev.info()["workers"]
    correct, _, got = play(ev, count_query, body)
    assert not correct and "wall-clock limit" in got, got
    info = ev.info()
    assert info["workers"] == workers  # the worker survived
    assert info["children"] == []


def _forge(payload: str) -> str:
    """Agent code that writes ``payload`` straight to the result pipe and exits."""
    return (
        "fr = sys._getframe()\nwhile fr.f_code.co_name != '_child':\n    fr = fr.f_back\n"
        f"data = {payload}\n"
        "os.write(fr.f_locals['out_fd'], data)\nos._exit(0)"
    )


FORGED = {
    "deep-nesting": ("b'[' * 200000", "nested too deeply"),
    "huge-int": ("b'{\"answer\": ' + b'9' * 10000 + b'}'", "not valid JSON"),
    "not-json": ("b'correct'", "not valid JSON"),
    "bare-list": ("b'[1, 2]'", "without producing an answer"),
    "nodes-as-list": (
        'b\'{"answer": {}, "diff": {"nodes": [1, 2], "edges": []}}\'',
        "diff.nodes",
    ),
    "edges-unhashable": (
        'b\'{"answer": {}, "diff": {"nodes": {}, "edges": [[[1], {}, null]]}}\'',
        "diff.edges",
    ),
    "error-as-object": ('b\'{"error": {"x": 1}}\'', "'error' is not a string"),
    "code-s-text": (
        'b\'{"code_s": "fast", "diff": {"nodes": {}, "edges": []}}\'',
        "'code_s' is not a number",
    ),
    "many-containers": ("b'[' + b'[],' * 2500000 + b'[]]'", "refused unread"),
    # under the ~3 MB size limit, but a million lists would cost the evaluator ~64 MB
    "many-containers-small": ("b'[' + b'[],' * 1000000 + b'[]]'", "lists and objects"),
}


@pytest.mark.parametrize("attack", sorted(FORGED))
def test_forged_result_pipe_is_judged_safely(
    ev: Ev, count_query: Query, attack: str
) -> None:
    payload, reason = FORGED[attack]
    correct, _, got = play(ev, count_query, _forge(payload))
    assert not correct and reason in got, got


def _answer_json(data: object) -> str:
    out = {"error": None, "answer": {"type": "text", "data": data}, "answer_error": None}
    out["diff"] = {"nodes": {}, "edges": []}
    return repr(json.dumps(out).encode())


def test_a_forged_verdict_without_the_answer_is_never_correct(
    ev: Ev, count_query: Query
) -> None:
    """Shotgun answers (every number at once, NaN, infinity, nested lists) stay wrong."""
    truth = count_query.truth["answer"]["data"]
    shotgun = [
        " ".join(str(n) for n in range(0, 20000)),
        list(range(0, 20000)),
        [[truth - 1]],
        "NaN",
        "Infinity",
        {"value": truth},
        [str(truth), str(truth + 1)],
    ]
    for data in shotgun:
        correct, _, got = play(ev, count_query, _forge(_answer_json(data)))
        assert not correct, (data, got)
    # The same channel with the true value is judged correct: the judge does read it.
    correct, _, got = play(ev, count_query, _forge(_answer_json(truth)))
    assert correct, got


def test_hostile_objects_never_run_in_the_evaluator(ev: Ev, count_query: Query) -> None:
    """Objects with lying __eq__/__hash__/__str__/__float__/__del__ reach us only as text."""
    body = (
        "class Liar(float):\n"
        "    def __eq__(self, other): return True\n"
        "    def __ne__(self, other): return False\n"
        "    def __hash__(self): return 0\n"
        "    def __str__(self): return '{}'\n"
        "    def __repr__(self): raise SystemExit\n"
        "    def __del__(self): os._exit(0)\n"
        "class Any(dict):\n"
        "    def __eq__(self, other): return True\n"
        "    def items(self): return iter([('type', ['EK_PORT'])])\n"
        "a = []\na.append(a)\n"
        "graph_data.nodes['ju1'].update(Any())\n"
        "return {'type': 'text', 'data': Liar(-1.0), 'cycle': a, 'updated_graph': Any()}"
    )
    correct, safe, got = play(ev, count_query, body)
    assert not correct, got
    reference_still_works(ev, count_query)


def test_worker_holds_no_ground_truth(ev: Ev, count_query: Query) -> None:
    """No NetArena module is loaded and nothing the worker holds carries this query's id."""
    body = (
        "names = [m for m in sys.modules if 'netarena' in m or 'malt' in m]\n"
        f"secret = {count_query.id[::-1]!r}[::-1]\n"
        "values = list(vars(main).values())\n"
        "fr = sys._getframe()\n"
        "while fr:\n"
        "    values += list(fr.f_locals.values())\n"
        "    fr = fr.f_back\n"
        "hits = [type(v).__name__ for v in values if isinstance(v, (str, bytes)) and v != secret"
        " and secret.encode() in (v if isinstance(v, bytes) else v.encode('utf-8', 'replace'))]\n"
        "raise Exception(repr(names + hits))"
    )
    _, _, got = play(ev, count_query, body)
    assert got == "code failed: Exception: []", got


def test_parse_output_refuses_hostile_bytes() -> None:
    for raw in (b"", b"[" * 100000, b"1" * 5000, b"\xff\xfe", b'{"diff": 3}', b"null"):
        with pytest.raises(SandboxError):
            parse_output(raw)
    ok = parse_output(b'{"error": null, "answer": {"data": NaN}, "diff": {}}')
    assert ok["answer"]["data"] != ok["answer"]["data"]


def test_unencodable_reply_is_an_answer_not_a_crash(count_query: Query) -> None:
    """Lone surrogates in the reply used to raise UnicodeEncodeError out of step()."""
    with APP.open(count_query) as episode:
        step = episode.step("```python\ndef process_graph(g):\n    return '\ud800'\n```")
        assert step.done
        assert not episode.score().correct


def test_no_leftover_files() -> None:
    assert not PWNED.exists()
    assert os.path.exists("/etc/passwd")
