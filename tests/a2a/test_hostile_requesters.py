"""Requesters that do what other A2A clients and hostile ones do: cancel, poll, pry."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
import pytest

from netarena.a2a_llm import purple_app
from netarena.common.serving.server import green_app
from tests.a2a.servers import serving
from tests.a2a.slow import SlowToyAgent
from tests.helpers.toy import ToyApp


def _send(request: dict[str, Any], *, blocking: bool = False, rpc_id: str = "s") -> dict:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": "message/send", "params": {
        "message": {"kind": "message", "role": "user", "messageId": f"m-{rpc_id}",
                    "parts": [{"kind": "text", "text": json.dumps(request)}]},
        "configuration": {"blocking": blocking}}}


async def _rpc(http: httpx.AsyncClient, url: str, method: str, params: dict) -> dict:
    reply = await http.post(url, json={"jsonrpc": "2.0", "id": method, "method": method,
                                       "params": params})
    return dict(reply.json())


async def _wait_for(http: httpx.AsyncClient, url: str, task_id: str, pattern: str) -> dict:
    for _ in range(100):
        task = (await _rpc(http, url, "tasks/get", {"id": task_id}))["result"]
        message = task["status"].get("message", {})
        if re.search(pattern, json.dumps(message)) or task["status"]["state"] not in (
                "submitted", "working"):
            return dict(task)
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {pattern!r} in time")


async def test_tasks_cancel_ends_the_task_canceled_with_the_finished_queries() -> None:
    slow = SlowToyAgent(0.1)
    apps: list = []

    def build(url: str):
        apps.append(green_app(ToyApp, url))
        return apps[-1]

    async with serving(build) as green, serving(lambda url: purple_app(slow, url)) as purple:
        request = {"participants": {"a": purple},
                   "config": {"num_queries": 40, "seed": 1, "concurrency": 1}}
        async with httpx.AsyncClient(timeout=30) as http:
            task = (await http.post(green, json=_send(request))).json()["result"]
            await _wait_for(http, green, task["id"], r"query \d+/40")
            canceled = await _rpc(http, green, "tasks/cancel", {"id": task["id"]})
            await asyncio.sleep(0.5)  # the evaluation winds down
            final = (await _rpc(http, green, "tasks/get", {"id": task["id"]}))["result"]
            calls = slow.calls
            await asyncio.sleep(0.5)
    assert canceled["result"]["status"]["state"] == "canceled", canceled
    assert final["status"]["state"] == "canceled", final["status"]
    assert "canceled by the requester" in json.dumps(final["status"]["message"])
    (entry,) = apps[0].state.board.entries.values()
    assert entry.state == "canceled" and "canceled by the requester" in entry.reason
    assert 0 < entry.done < 40 and slow.calls <= calls + 1  # no more work after the cancel
    (artifact,) = final["artifacts"]  # the finished queries, as a partial Result
    records = [json.loads(p["text"]) for p in artifact["parts"]]
    assert [r["kind"] for r in records] == ["query"] * entry.done + ["summary"]


async def test_the_public_pages_never_reveal_task_ids() -> None:
    """Task ids are the only capability A2A has: whoever knows one can read, cancel or
    resubscribe to that evaluation. The status page and its JSON are public."""
    slow = SlowToyAgent(0.1)
    async with serving(lambda url: green_app(ToyApp, url)) as green, \
            serving(lambda url: purple_app(slow, url)) as purple:
        request = {"participants": {"a": purple},
                   "config": {"num_queries": 20, "seed": 2, "concurrency": 1}}
        async with httpx.AsyncClient(timeout=30) as http:
            task = (await http.post(green, json=_send(request))).json()["result"]
            started = await _wait_for(http, green, task["id"], r"query \d+/20")
            public = [(await http.get(green + path)).text
                      for path in ("", "evaluations", "metrics")]
            listing = (await http.get(green + "evaluations")).json()
            (public_id,) = [e["id"] for e in listing]
            pages = [(await http.get(green + f"evaluations/{public_id}{tail}")).text
                     for tail in ("", "/report")]
            stranger = await _rpc(http, green, "tasks/cancel", {"id": public_id})
            own = (await http.get(green + f"evaluations/{task['id']}")).status_code
            await _rpc(http, green, "tasks/cancel", {"id": task["id"]})
    for text in public + pages:
        assert task["id"] not in text
    assert "error" in stranger  # the public id is not a task id
    assert own == 404  # and a task id is not a page
    history = json.dumps(started["history"])
    assert f"/evaluations/{public_id}/report" in history  # the owner is told where it is


async def test_no_method_lists_other_requesters_tasks() -> None:
    """``ListTasks`` (protocol 1.0) would hand every task id to anyone: it is refused."""
    async with serving(lambda url: green_app(ToyApp, url)) as green, \
            serving(lambda url: purple_app(SlowToyAgent(0.0), url)) as purple:
        request = {"participants": {"a": purple}, "config": {"num_queries": 2, "seed": 3}}
        async with httpx.AsyncClient(timeout=30) as http:
            task = (await http.post(green, json=_send(request, blocking=True))).json()["result"]
            listed = await http.post(green, json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                                                  "params": {}}, headers={"A2A-Version": "1.0"})
            legacy = await _rpc(http, green, "tasks/list", {})
    assert task["status"]["state"] == "completed"
    assert task["id"] not in listed.text and "error" in listed.json(), listed.text
    assert "not offered" in listed.json()["error"]["message"]
    assert "error" in legacy


async def test_the_task_store_is_bounded_in_bytes_not_only_in_tasks() -> None:
    """A finished task keeps its whole Result (about 1.3-1.9 KB per query): 128 tasks of
    1,000 queries would hold ~250 MB. The store also keeps a byte budget."""
    from a2a.server.context import ServerCallContext
    from a2a.types import Artifact, Part, Task, TaskState, TaskStatus

    from netarena.common.serving.a2a import BoundedTaskStore

    def task(task_id: str, state: int, size: int) -> Task:
        return Task(id=task_id, context_id="c", status=TaskStatus(state=state),
                    artifacts=[Artifact(artifact_id="a", parts=[Part(text="x" * size)])])

    store = BoundedTaskStore(100, max_bytes=50_000)
    context = ServerCallContext()
    await store.save(task("running", TaskState.TASK_STATE_WORKING, 30_000), context)
    for i in range(10):
        await store.save(task(f"done{i}", TaskState.TASK_STATE_COMPLETED, 8_000), context)
    assert store.total_bytes <= 50_000
    assert await store.get("running", context) is not None  # never evicted
    assert await store.get("done9", context) is not None
    assert await store.get("done0", context) is None
    assert len(store) == 3  # the running task and the two newest finished ones


async def test_a_stopping_server_starts_no_new_evaluation() -> None:
    app = green_app(ToyApp, "http://green/")
    app.state.board.cancel_all()  # what SIGTERM does first, before draining
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://green") as http:
        request = {"participants": {"a": "http://127.0.0.1:9/"}, "config": {"num_queries": 1}}
        task = (await http.post("/", json=_send(request, blocking=True))).json()["result"]
        ready = await http.get("/readyz")
    assert task["status"]["state"] == "rejected"
    assert "server stopping" in json.dumps(task["status"]["message"])
    assert ready.status_code == 503


class SlowOpeningToyApp(ToyApp):
    """Opens take 0.3 s (route builds namespaces then); counts opens and closes."""

    name = "toy-slowopen"
    opened = 0
    closed = 0

    def open(self, query):
        import time

        from tests.helpers.toy import ToyEpisode

        time.sleep(0.3)
        type(self).opened += 1
        app = type(self)

        class Counted(ToyEpisode):
            def close(self) -> None:
                app.closed += 1
                super().close()

        return Counted(query, self.config)


async def test_a_requester_leaving_while_episodes_open_leaks_no_episode() -> None:
    """Every episode opened is closed, even when the evaluation is cancelled while its
    emulator is being built (a leaked route episode is up to 73 network namespaces)."""
    async with serving(lambda url: green_app(SlowOpeningToyApp, url)) as green, \
            serving(lambda url: purple_app(SlowToyAgent(0.0), url)) as purple:
        request = {"participants": {"a": purple},
                   "config": {"num_queries": 20, "seed": 4, "concurrency": 4}}
        for delay in (0.2, 0.45, 0.7):
            body = {"jsonrpc": "2.0", "id": "x", "method": "message/stream", "params": {
                "message": {"kind": "message", "role": "user", "messageId": f"m{delay}",
                            "parts": [{"kind": "text", "text": json.dumps(request)}]}}}

            async def stream(body: dict = body) -> None:
                async with httpx.AsyncClient(timeout=30) as http, \
                        http.stream("POST", green, json=body) as reply:
                    async for _ in reply.aiter_lines():
                        pass

            try:
                await asyncio.wait_for(stream(), delay)  # then disconnect
            except TimeoutError:
                pass
        await asyncio.sleep(1.0)  # opens in progress finish, then close: up to seconds later
        await _all_closed(15.0)  # on a loaded machine
    # A cancellation the server had not yet seen (as many episodes open as the concurrency,
    # once, on a loaded CI machine) ends with the server: its episodes are closed then.
    await _all_closed(15.0)
    assert SlowOpeningToyApp.opened > 0
    assert SlowOpeningToyApp.closed == SlowOpeningToyApp.opened


async def _all_closed(within_s: float, settled_s: float = 2.0) -> None:
    """Wait until every episode opened is closed and the counts held for ``settled_s``, or
    ``within_s`` passed.

    Held, not merely equal: an evaluation still running opens more (its opens count when
    they finish, on another thread), and a fast-tier run once caught 17 closed of 18 opened
    right after the counts had been equal.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    seen, since = (-1, -1), loop.time()
    while loop.time() < deadline:
        counts = (SlowOpeningToyApp.opened, SlowOpeningToyApp.closed)
        if counts != seen:
            seen, since = counts, loop.time()
        elif counts[0] == counts[1] and loop.time() - since >= settled_s:
            return
        await asyncio.sleep(0.1)


async def test_a_rejection_does_not_echo_a_huge_request_back() -> None:
    app = green_app(ToyApp, "http://green/")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://green") as http:
        request = {"participants": {"a": "http://127.0.0.1:9/"},
                   "config": {"x" * 500_000: 1}}  # an unknown key is named back
        task = (await http.post("/", json=_send(request, blocking=True))).json()["result"]
    text = task["status"]["message"]["parts"][0]["text"]
    assert task["status"]["state"] == "rejected" and text.startswith("rejected: ")
    assert len(text) <= 2100, len(text)


@pytest.mark.parametrize("content_type, status", [
    ("text/plain", 415), ("application/x-www-form-urlencoded", 415),
    ("multipart/form-data; boundary=x", 415), (None, 415),
    ("application/json", 200), ("application/json; charset=utf-8", 200),
    ("Application/JSON", 200), ("application/a2a+json", 200),
])
async def test_json_rpc_needs_a_json_content_type(content_type: str | None, status: int) -> None:
    """A web page can POST text/plain or a form to a server on the visitor's machine without
    any CORS preflight; a JSON content type forces one (which this server never grants)."""
    app = green_app(ToyApp, "http://green/")
    transport = httpx.ASGITransport(app=app)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}})
    headers = {"content-type": content_type} if content_type else {}
    async with httpx.AsyncClient(transport=transport, base_url="http://green") as http:
        reply = await http.post("/", content=body, headers=headers)
    assert reply.status_code == status, reply.text
    if status == 415:
        assert "Content-Type: application/json" in reply.text


async def test_a_rejection_is_logged_on_one_short_line(caplog: pytest.LogCaptureFixture) -> None:
    app = green_app(ToyApp, "http://green/")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://green") as http:
        request = {"participants": {"a": "http://127.0.0.1:9/"},
                   "config": {"x\n" * 200_000 + "FORGED LOG LINE": 1}}
        with caplog.at_level("INFO", logger="netarena.common.serving.server"):
            await http.post("/", json=_send(request, blocking=True))
    (line,) = [r.getMessage() for r in caplog.records if "rejected request" in r.getMessage()]
    assert len(line) < 4200 and "\n" not in line  # cut at 2,000 chars, then escaped


_BAD_ROLES = ['malt_operator""', "MALT_OPERATOR", "1st", "a-b", "a.b", "$.x", "", " a",
              "x" * 65, "role\n", "ä"]


async def test_role_names_that_are_not_names_are_refused_with_400() -> None:
    """Before any task exists, for 0.3 and 1.0 calls, as text or as a DataPart; the
    executor refuses them too, wherever a request comes from."""
    from netarena.common.core.errors import ConfigError
    from netarena.common.serving.request import EvalRequest, parse_request

    async with serving(lambda url: green_app(ToyApp, url)) as green:
        async with httpx.AsyncClient(timeout=10) as http:
            for i, role in enumerate(_BAD_ROLES):
                request = {"participants": {role: "http://127.0.0.1:9/"}, "config": {}}
                stream = {**_send(request, rpc_id=f"r{i}"), "method": "message/stream"}
                data = _send({}, rpc_id=f"d{i}")
                data["params"]["message"]["parts"] = [{"kind": "data", "data": request}]
                v1 = {"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {
                    "message": {"messageId": f"v{i}", "role": "ROLE_USER",
                                "parts": [{"text": json.dumps(request)}]}}}
                for body in (_send(request, rpc_id=f"s{i}"), stream, data, v1):
                    reply = await http.post(green, json=body)
                    assert reply.status_code == 400, (role, body["method"], reply.text)
                    error = reply.json()
                    assert error["id"] == body["id"] and error["error"]["code"] == -32602
                    assert "is not a role name" in error["error"]["message"]
                with pytest.raises(ConfigError, match="is not a role name"):
                    parse_request(EvalRequest.model_validate(request), ToyApp)
            # Names pass the screen: the request reaches the executor (and runs).
            for role in ("a", "malt_operator", "r" + "0" * 63):
                request = {"participants": {role: "http://127.0.0.1:9/"},
                           "config": {"num_queries": 1, "max_turns": 1}}
                reply = await http.post(green, json=_send(request))
                assert reply.status_code == 200 and "result" in reply.json(), reply.text
                task = await _wait_for(http, green, reply.json()["result"]["id"], "queries for")
                assert task["status"]["state"] != "rejected", task
