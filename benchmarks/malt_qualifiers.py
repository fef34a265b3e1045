"""How often each MALT label states each qualifier and bound, what misreading one costs there,
how often the generator redraws, and what generating a query costs.

For every label, generates ``--per-label`` queries and prints, per qualifier and per bound,
the share of the label's queries that state it (``Query.qualifiers``) and the share a
careless reader gets wrong: the task read blind to the qualifier, or with the bound misread
in each of its ways (``netarena.malt.audit.MISREAD``), run by our own operations and compared
with the truth (answer and resulting topology). The generator redraws a query until every
stated detail is load-bearing, so the two columns agree. Then the redraw rate (draws beyond
the first, and which kind of idle detail caused them) and the median generation time per
query, wall clock and CPU (target <= 10 ms, BRIEF §12; on a loaded machine the wall clock
also counts waiting for a core). ``--agents`` also runs the blind and misreading
baselines through the sandbox and prints their rate on the queries that state what they
misread.

Usage: ``python benchmarks/malt_qualifiers.py [--per-label 60] [--seed 1] [--agents]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import Counter
from typing import Any

from netarena.common.core.app import find_baseline
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.core.types import Query
from netarena.malt import LABELS, MaltApp, base_topology, generator
from netarena.malt.audit import MISREAD, checks_of
from netarena.malt.baselines import BLIND, MISREADERS
from netarena.malt.bounds import BOUNDS
from netarena.malt.qualifiers import QUALIFIERS


def _is_wrong(app: MaltApp, query: Query, detail: str) -> bool:
    base = base_topology(app.config.topology_params())
    ops = query.truth["ops"]
    return all(
        generator.misses_truth(base, MISREAD[check](ops), query.truth)
        for check in checks_of(detail)
    )


class _Draws:
    """Counts the generator's draws and why it rejected them (``generator._settle``)."""

    def __init__(self) -> None:
        self.draws = 0
        self.idle: Counter[str] = Counter()
        self._settle = generator._settle

    def __call__(self, base: Any, ops: list[dict[str, Any]]) -> Any:
        self.draws += 1
        ops, unused = self._settle(base, ops)
        self.idle.update({"qualifier" if d in QUALIFIERS else "bound" for d, _ in unused})
        return ops, unused


def _table(app: MaltApp, by_label: dict[str, list[Query]], details: tuple[str, ...]) -> None:
    width = max(12, *(len(d) + 1 for d in details))
    print("label            " + "".join(f"{d:>{width}}" for d in details))
    print("                 " + "".join(f"{'stated/cost':>{width}}" for _ in details))
    for label, queries in by_label.items():
        n = len(queries)
        stated = Counter(d for query in queries for d in query.qualifiers)
        cells = []
        for d in details:
            wrong = sum(_is_wrong(app, query, d) for query in queries if d in query.qualifiers)
            cell = f"{stated[d] / n:.2f}/{wrong / n:.2f}" if stated[d] else ""
            cells.append(f"{cell:>{width}}")
        print(f"{label:<17}" + "".join(cells))


def _agents(app: MaltApp, everything: list[Query]) -> None:
    print("\nblind and misreading baselines, on the queries stating what they misread (sandbox):")
    for spec in (*BLIND, *MISREADERS):
        what = {m.removeprefix("by_qualifier:") for m in spec.expected if ":" in m} or {
            spec.name.removesuffix("-blind")
        }
        stating = [query for query in everything if what & set(query.qualifiers)]
        agent = find_baseline(app, spec.name).make()
        results = asyncio.run(Runner(app, agent, RunConfig(concurrency=2)).run(stating))
        wrong = sum(not (r.correct and r.safe) for r in results)
        print(f"  {spec.name}: wrong on {wrong}/{len(stating)} "
              f"({wrong / max(1, len(stating)):.1%})")


def main() -> None:
    """Print the per-label tables, the redraw rate and the generation cost."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-label", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agents", action="store_true", help="also run the baselines")
    args = parser.parse_args()
    app = MaltApp()
    app.generate(0, 1)  # build the topology once, outside the timings
    planned = {
        label: plan_queries(
            app,
            QueryPlan(num_queries=args.per_label, levels=(level,), labels=(label,), seed=args.seed),
        )
        for level, labels in LABELS.items()
        for label in labels
    }
    draws = _Draws()
    generator._settle = draws  # type: ignore[assignment]
    by_label: dict[str, list[Query]] = {}
    gen_s: list[float] = []
    cpu_s: list[float] = []
    for label, queries in planned.items():
        by_label[label] = []
        for query in queries:
            started, cpu = time.perf_counter(), time.process_time()
            by_label[label].append(app.generate(query.seed, query.level, query.label))
            gen_s.append(time.perf_counter() - started)
            cpu_s.append(time.process_time() - cpu)
    generator._settle = draws._settle  # type: ignore[assignment]
    everything = [q for queries in by_label.values() for q in queries]
    _table(app, by_label, QUALIFIERS)
    print()
    _table(app, by_label, BOUNDS)
    total = Counter(d for query in everything for d in query.qualifiers)
    print(f"\nall {len(everything)} queries: "
          + ", ".join(f"{d} {total[d]}" for d in (*QUALIFIERS, *BOUNDS)))
    n = len(everything)
    print(f"redraws: {(draws.draws - n) / n:.3f} per query beyond the first draw "
          f"(rejected draws with an idle qualifier {draws.idle['qualifier']}, "
          f"with an idle bound {draws.idle['bound']})")
    p90 = statistics.quantiles(gen_s, n=10)[-1]
    print(f"generation: median {statistics.median(gen_s) * 1e3:.2f} ms per query, "
          f"p90 {p90 * 1e3:.2f} ms, max {max(gen_s) * 1e3:.1f} ms (wall clock); "
          f"CPU median {statistics.median(cpu_s) * 1e3:.2f} ms (what load does not inflate)")
    if args.agents:
        _agents(app, everything)


if __name__ == "__main__":
    main()
