"""Containerised smoke evaluation client: talks to a green agent exactly as AgentBeats does.

Run by ``scripts/containers.sh`` inside the purple image (it only needs httpx). It checks that
the green and purple agents serve their agent cards, sends one evaluation request over A2A
protocol 0.3 ``message/stream`` with plain httpx (as the AgentBeats gateway does), collects the
``Result`` artifact's records (as the gateway keeps them), writes them in the leaderboard's
results-file shape and exits non-zero unless the task completed with the expected correctness.
``NETARENA_TOKEN``, when set, is sent as the green server's bearer token.

    python smoke_client.py --green URL --purple URL --role malt_operator \
        --config '{"num_queries": 3, "seed": 1}' --expect-correctness 1.0 --out results.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

__all__ = ["main"]

log = logging.getLogger("smoke")
CARD_PATH = "/.well-known/agent-card.json"


def wait_for_card(url: str, timeout_s: float) -> dict[str, Any]:
    """Poll the agent card until it is served (containers take a moment to start)."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            resp = httpx.get(url.rstrip("/") + CARD_PATH, timeout=5)
            resp.raise_for_status()
            card = resp.json()
            if not card.get("name"):
                raise ValueError(f"card at {url} has no name: {card}")
            return card
        except (httpx.HTTPError, ValueError) as exc:
            last = exc
            time.sleep(0.5)
    raise SystemExit(f"smoke: no agent card at {url}{CARD_PATH} after {timeout_s:g}s ({last})")


def _events(resp: httpx.Response) -> Any:
    data: list[str] = []
    for line in resp.iter_lines():
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            payload = json.loads("\n".join(data))
            data = []
            if "error" in payload:
                raise SystemExit(f"smoke: JSON-RPC error {payload['error']}")
            yield payload["result"]


def _records(parts: list[dict[str, Any]]) -> list[Any]:
    """As the AgentBeats gateway keeps them: DataParts and text parts that parse as JSON."""
    records: list[Any] = []
    for part in parts:
        if part.get("kind") == "data":
            records.append(part["data"])
        elif part.get("kind") == "text":
            try:
                records.append(json.loads(part["text"]))
            except json.JSONDecodeError:
                continue
    return records


def evaluate(green: str, request: dict[str, Any], timeout_s: float) -> tuple[str, list[Any]]:
    """Send the request with ``message/stream``; return the final state and the data parts."""
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "message/stream", "params": {
        "message": {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
                    "parts": [{"kind": "text", "text": json.dumps(request)}]}}}
    state, records = "unknown", []
    token = os.environ.get("NETARENA_TOKEN", "")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.stream("POST", green, json=body, timeout=timeout_s, headers=headers) as resp:
        resp.raise_for_status()
        for event in _events(resp):
            kind = event.get("kind")
            if kind in ("task", "status-update"):
                state = event["status"]["state"]
                parts = (event["status"].get("message") or {}).get("parts", [])
                for part in parts:
                    if part.get("kind") == "text":
                        log.info("[%s] %s", state, part["text"])
            elif kind == "artifact-update":
                records += _records(event["artifact"].get("parts", []))
    return state, records


def main(argv: list[str] | None = None) -> int:
    """Run the smoke evaluation; return the process exit code."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--green", required=True)
    ap.add_argument("--purple", required=True)
    ap.add_argument("--role", required=True)
    ap.add_argument("--config", default="{}")
    ap.add_argument("--expect-correctness", type=float, default=1.0)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="smoke: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)

    green_card = wait_for_card(args.green, 90)
    purple_card = wait_for_card(args.purple, 90)
    log.info("green card: %s; purple card: %s", green_card["name"], purple_card["name"])
    request = {"participants": {args.role: args.purple}, "config": json.loads(args.config)}
    started = time.monotonic()
    state, records = evaluate(args.green, request, args.timeout)
    elapsed = time.monotonic() - started
    queries = [r for r in records if r.get("kind") == "query"]
    summaries = [r for r in records if r.get("kind") == "summary"]
    if args.out:
        args.out.write_text(json.dumps({"status": state, "participants": request["participants"],
                                        "results": records}, indent=1))
    if state != "completed" or not queries or len(summaries) != 1:
        log.error("FAIL: state %s, %d query records, %d summaries", state, len(queries),
                  len(summaries))
        return 1
    correctness = summaries[0]["correctness"]
    log.info("%s: %d queries in %.1fs, correctness %.3f %s", args.role, len(queries), elapsed,
             correctness["rate"], correctness["ci95"])
    if correctness["rate"] < args.expect_correctness:
        failed = [(r["query_id"], r.get("error")) for r in queries if not r.get("correct")]
        log.error("FAIL: correctness %.3f < %.3f; failed: %s", correctness["rate"],
                  args.expect_correctness, failed[:5])
        return 1
    log.info("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
