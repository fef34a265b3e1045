"""A slow purple agent and a green server process for the server-limit tests."""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from netarena.common.core.agents import Observation
from netarena.common.core.app import Episode
from netarena.common.core.types import Query
from netarena.common.serving.limits import ServerLimits
from netarena.common.serving.server import GreenOptions, green_app
from netarena.common.serving.web import serve
from tests.helpers.toy import ReferenceToyAgent, ToyApp, ToyEpisode


class SlowToyAgent(ReferenceToyAgent):
    """The toy reference solver, ``delay_s`` slower per answer; counts its calls."""

    name = "toy-slow"

    def __init__(self, delay_s: float = 0.2) -> None:
        self.delay_s = delay_s
        self.calls = 0

    async def act(self, observation: Observation) -> str:
        self.calls += 1
        await asyncio.sleep(self.delay_s)
        return await super().act(observation)


class SlowClosingEpisode(ToyEpisode):
    """Takes a second to close, as an episode tearing down namespaces does."""

    def close(self) -> None:
        time.sleep(1.0)
        super().close()


class SlowClosingToyApp(ToyApp):
    name = "toy-slowclose"

    def open(self, query: Query) -> Episode:
        return SlowClosingEpisode(query, self.config)


def main(argv: list[Any] | None = None) -> None:
    """``python -m tests.a2a.slow --port P [--slow-close]``: serve the toy green agent like
    ``netarena serve``."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--slow-close", action="store_true")
    args = ap.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.INFO)
    limits = ServerLimits.from_env()
    url = f"http://127.0.0.1:{args.port}/"
    app_cls = SlowClosingToyApp if args.slow_close else ToyApp
    serve(green_app(app_cls, url, GreenOptions(limits=limits)), "127.0.0.1", args.port, limits)


if __name__ == "__main__":
    main()
