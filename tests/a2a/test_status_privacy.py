"""What the public pages show: no participant credentials, no per-query detail without a token."""

from __future__ import annotations

import json

import httpx
import pytest

from netarena.a2a_llm import purple_app
from netarena.common.core.stats import summarize
from netarena.common.serving.outbound import public_text, public_url
from netarena.common.serving.server import green_app
from netarena.common.serving.status import Entry
from tests.a2a.servers import gateway_records, serving, stream_03
from tests.helpers.toy import ToyApp

SECRETS = ("alice", "s3cret", "k3y", "fr4g")


@pytest.mark.parametrize(("url", "shown"), [
    ("http://alice:s3cret@127.0.0.1:9019/a?key=k3y#fr4g", "http://127.0.0.1:9019/a?…#…"),
    ("https://alice@[::1]:8443/?token=k3y", "https://[::1]:8443/?…"),
    ("http://agent.example.org/", "http://agent.example.org/"),
    ("http://[bad", "<unparseable URL>"),
])
def test_public_url_drops_user_info_query_and_fragment(url: str, shown: str) -> None:
    assert public_url(url) == shown


def test_public_text_redacts_every_url_in_a_reason() -> None:
    text = public_text("cannot reach http://alice:s3cret@10.0.0.2:80/x?key=k3y; "
                       "then 'https://alice@h/y#fr4g'")
    assert not any(s in text for s in SECRETS)
    assert "http://10.0.0.2:80/x?…" in text and "https://h/y#…" in text


async def test_status_pages_never_show_participant_credentials() -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        secret_url = purple.replace("http://", "http://alice:s3cret@") + "?key=k3y#fr4g"
        events = await stream_03(green, {"participants": {"toy_operator": secret_url},
                                         "config": {"num_queries": 3, "seed": 2}})
        async with httpx.AsyncClient(timeout=10) as http:
            listing = (await http.get(green + "evaluations")).json()
            pages = [(await http.get(green)).text, json.dumps(listing)]
            public_id = listing[0]["id"]
            for path in (f"evaluations/{public_id}", f"evaluations/{public_id}/report"):
                pages.append((await http.get(green + path)).text)
    final = events[-1]
    assert final["status"]["state"] == "completed", final
    for page in pages:
        assert not any(s in page for s in SECRETS), page
    assert purple.removeprefix("http://") in pages[0]  # the host is shown, only the secrets not
    artifact = next(e for e in events if e.get("kind") == "artifact-update")
    records = gateway_records(artifact["artifact"]["parts"])
    assert records and not any(s in json.dumps(records) for s in SECRETS)
    assert all(r["correct"] for r in records if r["kind"] == "query")  # the agent was reached
    for event in events:  # status messages too
        assert not any(s in json.dumps(event.get("status", {})) for s in SECRETS)


@pytest.mark.parametrize("token", [None, "tok"])
async def test_per_query_detail_only_for_token_holders(token: str | None) -> None:
    api = green_app(ToyApp, "http://127.0.0.1:1/", token=token)
    board = api.state.board
    entry = board.start(Entry("task-1", "toy", "toy_operator", "http://u:p@127.0.0.1:5/"))
    summary = summarize([], app="toy", agent="http://127.0.0.1:5/", seed=1)
    board.finish(entry, "failed", "2 of 3 queries unscored", summary,
                 detail="query toy-7: emulator crashed at http://u:p@127.0.0.1:5/?key=k3y")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://green",
                                 headers=headers) as http:
        listing = (await http.get("/evaluations")).json()
        one = (await http.get(f"/evaluations/{entry.public_id}")).json()
        report = (await http.get(f"/evaluations/{entry.public_id}/report")).text
    assert listing[0]["reason"] == "2 of 3 queries unscored" and listing[0]["summary"]
    assert listing[0]["participant"] == "http://127.0.0.1:5/"
    if token is None:
        assert "detail" not in listing[0] and "detail" not in one
        assert "toy-7" not in report
    else:
        assert "toy-7" in listing[0]["detail"] and "toy-7" in one["detail"] and "toy-7" in report
    assert not any("k3y" in str(x) or "u:p" in str(x) for x in (listing, one, report))
