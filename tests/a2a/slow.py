"""A slow purple agent and a green server process for the server-limit tests."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from netarena.common.agents import Observation
from netarena.common.limits import ServerLimits
from netarena.common.server import GreenOptions, green_app
from netarena.common.web import serve
from tests.helpers.toy import ReferenceToyAgent, ToyApp


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


def main(argv: list[Any] | None = None) -> None:
    """``python -m tests.a2a.slow --port P``: serve the toy green agent like ``netarena serve``."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.INFO)
    limits = ServerLimits.from_env()
    url = f"http://127.0.0.1:{args.port}/"
    serve(green_app(ToyApp, url, GreenOptions(limits=limits)), "127.0.0.1", args.port, limits)


if __name__ == "__main__":
    main()
