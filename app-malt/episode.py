"""One MALT query played out: the prompt, one sandboxed answer, its verdict.

``step`` extracts the agent's code (a fenced Python block, or bare code, defining
``process_graph``), runs it in a fresh fork of a warm sandbox worker that already holds the
topology, and judges the JSON that comes back: the returned value by answer type, the
resulting topology (as a diff) against the target, and the invariants on the result.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import networkx as nx

from netarena.common.app import Episode
from netarena.common.errors import SandboxError, SandboxTimeout
from netarena.common.replies import MAX_REPLY_CHARS, code_blocks
from netarena.common.sandbox import SandboxPool
from netarena.common.types import Query, Score, StepResult
from netarena.malt.checks import DiffView, answer_mismatch, state_mismatch, violations

__all__ = ["MaltEpisode", "extract_code"]

log = logging.getLogger(__name__)


def extract_code(reply: str) -> str | None:
    """The code defining ``process_graph`` in a reply: the last such fenced block, or bare code."""
    for block in reversed(code_blocks(reply, ("python", "py", "python3"))):
        if "def process_graph" in block:
            return block
    text = reply[:MAX_REPLY_CHARS]
    if "def process_graph" in text and "```" not in text:
        return text
    return None


class MaltEpisode(Episode):
    """A one-turn constructive episode (more turns only if earlier replies were unreadable)."""

    def __init__(self, query: Query, base: nx.DiGraph, pool: SandboxPool) -> None:
        """Play ``query`` on ``base`` with answers run in ``pool``."""
        super().__init__(query)
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
            return StepResult(observation=reason, valid=False, reward=-1.0)
        started = time.perf_counter()
        try:
            result = self._pool.run(code.encode())
            out = json.loads(result.output) if result.output else None
            if not isinstance(out, dict):
                raise SandboxError("the code ended without producing an answer")
        except SandboxTimeout as exc:
            return self._finish(f"sandbox timeout: {exc}", started)
        except (SandboxError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            return self._finish(f"sandbox: {exc}", started)
        self._details["sandbox_s"] = round(result.run_s, 6)
        self._details["code_s"] = float(out.get("code_s") or 0.0)
        if out.get("error"):
            return self._finish(f"code failed: {out['error']}", started)
        return self._judge(out, started)

    def _judge(self, out: dict[str, Any], started: float) -> StepResult:
        truth = self.query.truth
        diff = out.get("diff") if isinstance(out.get("diff"), dict) else {"nodes": {}, "edges": []}
        broken = violations(DiffView(self._base, diff))
        self._safe = not broken
        self._details["violations"] = "; ".join(broken[:10])
        self._details["violation_count"] = len(broken)
        answer = out.get("answer")
        self._details["answer_type"] = str(answer.get("type")) if isinstance(answer, dict) else ""
        reason = (
            out.get("answer_error")
            or answer_mismatch(truth["answer"], answer)
            or state_mismatch(truth["diff"], diff)
            or out.get("note")
        )
        return self._finish(reason, started, correct=reason is None)

    def _finish(self, reason: str | None, started: float, correct: bool = False) -> StepResult:
        self._correct = correct
        self._details["reason"] = reason or ""
        self._details["eval_s"] = round(time.perf_counter() - started, 6)
        text = "correct" if correct else f"incorrect: {reason}"
        return StepResult(
            observation=text,
            done=True,
            reward=100.0 if correct else 0.0,
            info={"reason": reason or ""},
        )

    def _score(self) -> Score:
        return Score(correct=self._correct, safe=self._safe, details=dict(self._details))
