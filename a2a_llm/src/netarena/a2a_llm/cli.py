"""``netarena purple``: serve a purple agent over A2A (registered as a ``netarena`` command)."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

import typer
from rich.markup import escape

from netarena.a2a_llm.server import purple_app
from netarena.a2a_llm.strategies import from_env
from netarena.common.cli.console import err, setup_logging
from netarena.common.core.agents import Agent, NullAgent
from netarena.common.core.app import load_app
from netarena.common.core.errors import AgentUnavailable, ConfigError
from netarena.common.serving.a2a import card_url_warning, default_card_url
from netarena.common.serving.agent_spec import make_agent
from netarena.common.serving.limits import ServerLimits
from netarena.common.serving.web import serve as serve_web

__all__ = ["purple"]


def purple(
    solver: Annotated[str, typer.Option(
        envvar="NETARENA_SOLVER",
        help="reference, litellm, null or baseline:NAME (with --app)")] = "litellm",
    app_name: Annotated[str | None, typer.Option(
        "--app", envvar="NETARENA_APP", help="app whose reference solver to serve")] = None,
    strategy: Annotated[str, typer.Option(
        envvar="NETARENA_STRATEGY", help="zeroshot, fewshot, cot or react")] = "zeroshot",
    model: Annotated[str | None, typer.Option(help="LiteLLM model (default: $MODEL_NAME)")] = None,
    host: Annotated[str, typer.Option(help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 9019,
    card_url: Annotated[str | None, typer.Option(help="URL advertised in the agent card")] = None,
    model_check: Annotated[bool, typer.Option(
        envvar="NETARENA_MODEL_CHECK",
        help="before serving, check the model with one one-token call (exit 2 when it "
             "cannot be used)")] = True,
) -> None:
    """Serve a purple agent over A2A: a LiteLLM model, an app's reference or baseline, or null.

    Runners that pass only --host/--port/--card-url choose the agent with NETARENA_SOLVER,
    NETARENA_APP and NETARENA_STRATEGY.
    """
    setup_logging(logging.INFO)
    try:
        agent: Agent
        if solver == "reference" or solver.startswith("baseline:"):
            if not app_name:
                raise ConfigError(f"--solver {solver} needs --app (one server per app)")
            agent = make_agent(solver, load_app(app_name))
        elif solver == "litellm":
            llm = agent = from_env(strategy, model)
            if model_check:  # a missing key fails here, not on every query of a run
                asyncio.run(llm.check())
        elif solver == "null":
            agent = NullAgent()
        else:
            raise ConfigError(
                f"unknown solver {solver!r}: use reference, litellm, null or baseline:NAME"
            )
        limits = ServerLimits.from_env()
    except (ConfigError, AgentUnavailable) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    url = card_url or default_card_url(host, port)
    err.print(f"netarena purple agent ({agent.name}) at {url}")
    if warning := card_url_warning(host, url):
        err.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)
    serve_web(purple_app(agent, url, limits), host, port, limits)
