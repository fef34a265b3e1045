"""The compose files' evaluation client: talks to a green agent exactly as AgentBeats does.

It checks that the green and purple agents serve their agent cards, sends one evaluation
request over A2A protocol 0.3 ``message/stream`` with plain httpx (as the AgentBeats gateway
does), collects the ``Result`` artifact's records (as the gateway keeps them) and writes
them in the leaderboard's results-file shape, ``{status, participants, results}``, whose
``participants`` name each role's AgentBeats id (``--agentbeats-id``, as the hosted
workflow copies ``metadata.agentbeats_ids``). It needs only httpx and ships in every
NetArena image (``python -m netarena.common.launch.smoke_client``), so a compose file
mounts nothing but the output folder.
``NETARENA_TOKEN``, when set, is sent as the green server's bearer token.

It exits 0 when the task completed with query records and one summary, whatever the scores
(a leaderboard ranks every agent; ``--expect-correctness`` makes it a smoke check), 1
otherwise; the results file is written in every case, a failed run's too.

    python -m netarena.common.launch.smoke_client --green URL --purple URL
        --role route_operator --agentbeats-id route_operator=ID
        --config '{"num_queries": 3}' --out /output/results.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

__all__ = ["gateway_records", "main"]

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
            card: dict[str, Any] = resp.json()
            if not card.get("name"):
                raise ValueError(f"card at {url} has no name: {card}")
            return card
        except (httpx.HTTPError, ValueError) as exc:
            last = exc
            time.sleep(0.5)
    raise SystemExit(f"smoke: no agent card at {url}{CARD_PATH} after {timeout_s:g}s ({last})")


def _events(resp: httpx.Response) -> Iterator[dict[str, Any]]:
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


def gateway_records(parts: list[dict[str, Any]]) -> list[Any]:
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
                records += gateway_records(event["artifact"].get("parts", []))
    return state, records


def participants(role: str, purple: str, ids: list[str]) -> dict[str, str]:
    """The results file's ``participants``: each ``ROLE=ID`` given, the role's URL otherwise.

    An empty id (an unset optional variable in a compose file) is left out.
    """
    named: dict[str, str] = {}
    for pair in ids:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"smoke: --agentbeats-id takes ROLE=ID, not {pair!r}")
        if value:
            named[key] = value
    if role not in named:
        log.warning("no AgentBeats id for %s: the results file names it by its URL, %s, "
                    "and a leaderboard pools every such run into one row", role, purple)
    return {**named, role: named.get(role, purple)}


def write_results(path: Path, document: dict[str, Any]) -> None:
    """Write the results file atomically; as root, give it the output folder's owner.

    Run as root (so it can write into a folder the engine created), the client hands the
    file to whoever owns the folder, so a folder made by its user stays theirs to use.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(document, indent=1), encoding="utf-8")
    folder = path.parent.stat()
    if os.geteuid() == 0 and folder.st_uid != 0:
        os.chown(temporary, folder.st_uid, folder.st_gid)
    temporary.replace(path)


def check_writable(path: Path) -> None:
    """Fail before the evaluation, not after it, when the results file cannot be written."""
    probe = path.with_name(f".{path.name}.probe-{os.getpid()}")
    try:
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise SystemExit(f"smoke: cannot write {path} ({exc}); run the client as a user who "
                         "may write that folder (compose: user: \"0:0\"), or make the folder "
                         "writable first") from exc


def main(argv: list[str] | None = None) -> int:
    """Run the evaluation; return the process exit code."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--green", required=True)
    ap.add_argument("--purple", required=True)
    ap.add_argument("--role", required=True)
    ap.add_argument("--agentbeats-id", action="append", default=[], metavar="ROLE=ID",
                    help="a participant's AgentBeats id for the results file (repeat)")
    ap.add_argument("--config", default="{}")
    ap.add_argument("--expect-correctness", type=float, default=None,
                    help="smoke checks: exit 1 below this correctness (leaderboards: unset)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="smoke: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)

    named = participants(args.role, args.purple, args.agentbeats_id)
    if args.out:
        check_writable(args.out)
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
        write_results(args.out, {"status": state, "participants": named, "results": records})
        log.info("wrote %s", args.out)
    if state != "completed" or not queries or len(summaries) != 1:
        log.error("FAIL: state %s, %d query records, %d summaries", state, len(queries),
                  len(summaries))
        return 1
    correctness = summaries[0]["correctness"]
    log.info("%s: %d queries in %.1fs, correctness %.3f %s, seed %s", args.role, len(queries),
             elapsed, correctness["rate"], correctness["ci95"], summaries[0].get("seed"))
    if args.expect_correctness is not None and correctness["rate"] < args.expect_correctness:
        failed = [(r["query_id"], r.get("error")) for r in queries if not r.get("correct")]
        log.error("FAIL: correctness %.3f < %.3f; failed: %s", correctness["rate"],
                  args.expect_correctness, failed[:5])
        return 1
    log.info("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
