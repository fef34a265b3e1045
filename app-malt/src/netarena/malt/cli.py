"""``netarena malt ...``: MALT's own commands (fine-tuning data export)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from netarena.common.cli.options import parse_levels
from netarena.common.core.agents import Observation
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.malt import MaltApp

__all__ = ["app", "export_sft"]

app = typer.Typer(add_completion=False, no_args_is_help=True, help="MALT capacity-planning tools.")


@app.callback()
def _malt() -> None:
    """MALT capacity-planning tools (a group, so sub-commands keep their names)."""


def export_sft(
    n: int, levels: tuple[int, ...], seed: int, out: Path, prompt_style: str = "zeroshot_base"
) -> int:
    """Write ``n`` chat records (prompt -> reference program) to ``out``; return the count."""
    malt = MaltApp({"prompt_style": prompt_style})
    agent = malt.reference_agent()
    queries = plan_queries(malt, QueryPlan(num_queries=n, levels=levels, seed=seed))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as sink:
        for q in queries:
            answer = asyncio.run(agent.act(Observation(q.prompt, q.id)))
            record = {
                "messages": [
                    {"role": "user", "content": q.prompt},
                    {"role": "assistant", "content": answer},
                ],
                "metadata": {
                    "query_id": q.id,
                    "app": q.app,
                    "level": q.level,
                    "label": q.label,
                    "seed": q.seed,
                    "prompt_style": prompt_style,
                },
            }
            sink.write(json.dumps(record) + "\n")
    return len(queries)


@app.command("export-sft")
def export_sft_command(
    n: Annotated[int, typer.Option("--n", min=1, help="number of examples")] = 100,
    levels: Annotated[str, typer.Option(help="comma-separated levels")] = "1,2,3",
    seed: Annotated[int, typer.Option(help="base seed")] = 0,
    out: Annotated[Path, typer.Option(help="JSONL file to write")] = Path("malt-sft.jsonl"),
    prompt_style: Annotated[
        str, typer.Option(help="zeroshot_base, fewshot_base, zeroshot_cot, fewshot_cot")
    ] = "zeroshot_base",
) -> None:
    """Write a JSONL fine-tuning set: each record is a prompt and the reference program."""
    count = export_sft(n, parse_levels(levels), seed, out, prompt_style)
    typer.echo(f"wrote {count} records to {out}")
