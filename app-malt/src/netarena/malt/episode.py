"""One MALT query played out: the prompt, one sandboxed answer, its verdict.

``step`` extracts the agent's code (a fenced Python block, or bare code, defining
``process_graph``), runs it in a fresh fork of a warm sandbox worker that already holds the
topology, and judges the JSON that comes back: the returned value by answer type, the
resulting topology (as a diff) against the target, and the invariants on the result.
"""

from __future__ import annotations

import json
import logging
import math
import time
from typing import TYPE_CHECKING, Any

import networkx as nx

from netarena.common.core.app import Episode
from netarena.common.core.errors import SandboxError, SandboxTimeout, SandboxUnavailable
from netarena.common.core.replies import code_blocks, strip_reasoning
from netarena.common.core.types import Query, Score, StepResult
from netarena.common.sandbox import SandboxPool
from netarena.malt.checks import DiffView, answer_mismatch, state_mismatch, violations

if TYPE_CHECKING:
    from netarena.malt.config import MaltConfig

__all__ = ["MaltEpisode", "extract_code", "parse_output"]

log = logging.getLogger(__name__)

_BYTES_PER_CONTAINER = 12
"""An answer may hold one JSON array or object per this many bytes of its size limit. Honest
answers (node names with attributes, edges) need 25 or more; the bound keeps what parsing an
answer can cost the evaluator (~64 bytes per container) to a few times the size limit."""
_MAX_REASON_CHARS = 2_000


def extract_code(reply: str) -> str | None:
    """The code defining ``process_graph`` in a reply: the last such fenced block, or bare code."""
    for block in reversed(code_blocks(reply, ("python", "py", "python3"))):
        if "def process_graph" in block:
            return block
    text = strip_reasoning(reply)
    if "def process_graph" in text and "```" not in text:
        return text
    return None


def _is_attrs(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def _shape_error(out: dict[str, Any]) -> str | None:
    """Why the sandbox's JSON does not have the shape ``worker.run`` writes, or ``None``.

    The child process runs the agent's code, which can write anything to the result pipe:
    the evaluator trusts nothing in it beyond this shape (and never runs agent objects).
    """
    for key in ("error", "answer_error", "note"):
        if out.get(key) is not None and not isinstance(out[key], str):
            return f"{key!r} is not a string"
    code_s = out.get("code_s")
    if code_s is not None and (isinstance(code_s, bool) or not isinstance(code_s, (int, float))):
        return "'code_s' is not a number"
    if out.get("error"):
        return None
    answer = out.get("answer")
    if answer is not None and not isinstance(answer, dict):
        return "'answer' is not an object"
    diff = out.get("diff")
    if not isinstance(diff, dict):
        return "'diff' is not an object"
    nodes, edges = diff.get("nodes", {}), diff.get("edges", [])
    if not isinstance(nodes, dict) or not all(_is_attrs(v) for v in nodes.values()):
        return "'diff.nodes' is not an object of node attributes"
    if not isinstance(edges, list) or not all(
        isinstance(e, list)
        and len(e) == 3
        and isinstance(e[0], str)
        and isinstance(e[1], str)
        and _is_attrs(e[2])
        for e in edges
    ):
        return "'diff.edges' is not a list of [source, target, attributes]"
    return None


def parse_output(output: bytes, limit_bytes: int = 8 << 20) -> dict[str, Any]:
    """Decode and validate what the sandboxed child wrote.

    Args:
        output: The child's answer, already capped at ``limit_bytes`` by the sandbox.
        limit_bytes: The sandbox's answer size limit, which also bounds how many arrays
            and objects the answer may hold (one per ``_BYTES_PER_CONTAINER`` bytes).

    Raises:
        SandboxError: Empty, not JSON, too deeply nested, too many containers, or not the
            shape ``worker.run`` produces.
    """
    if not output:
        raise SandboxError("the code ended without producing an answer")
    most = limit_bytes // _BYTES_PER_CONTAINER
    if len(output) > limit_bytes:
        raise SandboxError(f"answer larger than {limit_bytes} bytes")
    if output.count(b"[") + output.count(b"{") > most:
        raise SandboxError(f"answer holds more than {most} lists and objects")
    try:
        out = json.loads(output)
    except RecursionError as exc:
        raise SandboxError("answer is nested too deeply") from exc
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, huge ints
        raise SandboxError(f"answer is not valid JSON: {str(exc)[:200]}") from exc
    if not isinstance(out, dict):
        raise SandboxError("the code ended without producing an answer")
    reason = _shape_error(out)
    if reason:
        raise SandboxError(f"malformed answer from the sandbox: {reason}")
    return out


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_REASON_CHARS else text[:_MAX_REASON_CHARS] + "..."


class MaltEpisode(Episode):
    """A one-turn constructive episode (more turns only if earlier replies were unreadable)."""

    def __init__(
        self, query: Query, base: nx.DiGraph, pool: SandboxPool, config: MaltConfig
    ) -> None:
        """Play ``query`` on ``base`` with answers run in ``pool``, rewarded per ``config``."""
        super().__init__(query)
        self._config = config
        self._base = base
        self._pool = pool
        self._notes: list[str] = []
        self._details: dict[str, Any] = {
            "reason": "no answer",
            "violations": "",
            "violation_count": 0,
        }
        self._correct = False
        self._safe = True
        self._changed = False

    def _observe(self) -> str:
        if not self._notes:
            return self.query.prompt
        history = "\n".join(f"- attempt {i}: {note}" for i, note in enumerate(self._notes, 1))
        return f"{self.query.prompt}\n\nYour previous replies were rejected:\n{history}"

    def _step(self, action: str) -> StepResult:
        code = extract_code(action)
        if code is None:
            reason = "no Python code defining process_graph(graph_data) found in the reply"
            self._notes.append(reason)
            self._details["reason"] = reason
            return StepResult(observation=reason, valid=False, reward=self._config.reward_invalid)
        started = time.perf_counter()
        try:
            result = self._pool.run(code.encode("utf-8", "surrogatepass"))
            out = parse_output(result.output, self._pool.limits.max_output_bytes)
        except SandboxUnavailable:
            raise  # the host's failure, not the answer's: the runner leaves it unscored
        except SandboxTimeout as exc:
            return self._finish(f"sandbox timeout: {exc}", started)
        except SandboxError as exc:
            return self._finish(f"sandbox: {exc}", started)
        self._details["sandbox_s"] = round(result.run_s, 6)
        code_s = float(out.get("code_s") or 0.0)
        self._details["code_s"] = code_s if math.isfinite(code_s) else 0.0
        if out.get("error"):
            return self._finish(f"code failed: {out['error']}", started)
        return self._judge(out, started)

    def _judge(self, out: dict[str, Any], started: float) -> StepResult:
        truth = self.query.truth
        diff = out["diff"]
        broken = violations(DiffView(self._base, diff))
        self._safe = not broken
        self._changed = bool(diff.get("nodes") or diff.get("edges"))
        self._details["violations"] = "; ".join(broken[:10])
        self._details["violation_count"] = len(broken)
        answer = out.get("answer")
        self._details["answer_type"] = (
            str(answer.get("type"))[:100] if isinstance(answer, dict) else ""
        )
        reason = (
            out.get("answer_error")
            or answer_mismatch(truth["answer"], answer)
            or state_mismatch(truth["diff"], diff)
            or out.get("note")
        )
        return self._finish(reason, started, correct=reason is None)

    def _finish(self, reason: str | None, started: float, correct: bool = False) -> StepResult:
        reason = _cut(reason) if reason else reason
        self._correct = correct
        self._details["reason"] = reason or ""
        self._details["eval_s"] = round(time.perf_counter() - started, 6)
        text = "correct" if correct else f"incorrect: {reason}"
        return StepResult(
            observation=text,
            done=True,
            reward=self._config.reward_correct if correct else self._config.reward_incorrect,
            info={"reason": reason or ""},
        )

    def _score(self) -> Score:
        return Score(
            correct=self._correct,
            safe=self._safe,
            changed=self._changed,
            details=dict(self._details),
        )
