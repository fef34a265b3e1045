"""A fake OpenAI-compatible chat-completions server on loopback, for LiteLLM's ``api_base``.

It answers like an imperfect model: for most prompts it asks the app's reference solver
(text in, text out, as a model would see it), for some it writes nonsense, and for some it
fails with HTTP 400, all decided by a hash of the prompt, so a run mixes successes,
failures and agent errors deterministically. It counts the requests it served and reports
token usage, so recordings carry real usage and LiteLLM can price the model. The start-up
check (``LiteLLMAgent.check``) is answered ``OK`` and counted apart, in ``checks``. With
``refuse`` set, every other completion fails with that HTTP status (a key revoked mid-run);
``refuse_checks`` does the same to the checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from netarena.common.core.agents import MODEL_CHECK_PROMPT, Agent, Observation
from netarena.common.serving.a2a import listen_socket


class FakeLLM:
    """The server's behaviour; ``requests`` counts the completions asked for."""

    def __init__(self, solver: Agent) -> None:
        self.solver = solver
        self.requests = 0
        self.checks = 0
        self.refuse: int | None = None
        self.refuse_checks: int | None = None

    async def complete(self, request: Request) -> JSONResponse:
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        if prompt == MODEL_CHECK_PROMPT and body.get("max_tokens") == 1:
            self.checks += 1
            return _refusal(self.refuse_checks) if self.refuse_checks else _reply(body, "OK", 0)
        self.requests += 1
        if self.refuse is not None:
            return _refusal(self.refuse)
        kind = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 6
        if kind == 0:
            refusal = {"message": "fake refusal", "type": "invalid_request_error", "code": "x"}
            return JSONResponse({"error": refusal}, status_code=400)
        if kind == 1:
            text = "I am not sure what to do here."
        else:
            text = await self.solver.act(Observation(prompt, "fake", 0))
        return _reply(body, text, self.requests)


def _refusal(status: int) -> JSONResponse:
    error = {"message": f"fake: refused with {status}", "type": "fake_error", "code": "x"}
    return JSONResponse({"error": error}, status_code=status)


def _reply(body: dict[str, Any], text: str, number: int) -> JSONResponse:
    prompt = body["messages"][-1]["content"]
    usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return JSONResponse({
        "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0,
        "model": body["model"], "usage": usage,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
    })


@contextlib.contextmanager
def fake_llm_server(solver: Agent) -> Iterator[tuple[str, FakeLLM]]:
    """Serve a ``FakeLLM`` on 127.0.0.1 in a thread; yield its ``api_base`` and the fake.

    The server is stopped when the block ends (later calls get connection errors).
    """
    fake = FakeLLM(solver)
    app = Starlette(routes=[Route("/v1/chat/completions", fake.complete, methods=["POST"])])
    sock = listen_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                           timeout_graceful_shutdown=1))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])),
                              daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("fake LLM server did not start")
        threading.Event().wait(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1", fake
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
