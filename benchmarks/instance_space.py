"""How fresh are generated instances? Distinct queries per run and overlap between seeds.

For every registered app, plans two runs of ``--queries`` queries with different seeds (the
runner's own plan: levels and labels cycled evenly) and prints, overall and per label:

- ``distinct prompts``: share of the run's prompts that are not repeats of an earlier one;
- ``distinct instances``: the same for the whole instance (prompt *and* hidden truth: for
  reactive apps the prompt is fixed and the instance is the injected faults);
- ``shared with seed B``: share of the second run's instances that also occur in the first
  (a model tuned on one seed's queries has seen this share of the next);
- ``edits`` / ``shared``: the same two figures on the injected edits alone (policy, type,
  method and the values written, from ``truth["faults"]``), the seeded detail around
  them left out: the stricter view of how often a fault repeats.

An instance is what ``App.instance_key`` says (k8s: every policy as the faults leave it,
not the prompt's wording).

Plans draw without replacement (``plan_queries`` redraws a repeated instance), so
``instances`` is 100% wherever a label has enough instances; ``shared`` shows how large
the space behind each label is (about n / effective number of instances).

Usage: ``python benchmarks/instance_space.py [--queries 500] [--seeds 1 2] [--apps malt]``
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict

from netarena.common.core.app import App, app_names, load_app
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.types import Query


def _edit(q: Query) -> str:
    """The injected edits alone, where the truth lists faults (detail left out)."""
    faults = q.truth.get("faults") if isinstance(q.truth, dict) else None
    if not isinstance(faults, list):
        return ""
    return ";".join(f"{f.get('policy') or f.get('target')}|{f.get('code')}|{f.get('method')}|"
                    f"{f.get('description')}" for f in faults if isinstance(f, dict))


def _distinct(items: list[str]) -> float:
    return len(set(items)) / len(items) if items else 1.0


def _row(app: App, name: str, a: list[Query], b: list[Query]) -> str:
    prompts = _distinct([q.prompt for q in a])
    instances = _distinct([app.instance_key(q) for q in a])
    seen = {app.instance_key(q) for q in a}
    shared = sum(app.instance_key(q) in seen for q in b) / len(b) if b else 0.0
    edits = _distinct([_edit(q) for q in a])
    seen_edits = {_edit(q) for q in a}
    shared_edits = sum(_edit(q) in seen_edits for q in b) / len(b) if b else 0.0
    return (
        f"  {name:<18} {len(a):>5}  {100 * prompts:>7.1f}%  {100 * instances:>9.1f}%  "
        f"{100 * shared:>9.2f}%  {100 * edits:>7.1f}%  {100 * shared_edits:>7.2f}%"
    )


def report(app_name: str, queries: int, seeds: tuple[int, int]) -> None:
    """Print one app's figures."""
    app = load_app(app_name)
    started = time.perf_counter()
    runs = [plan_queries(app, QueryPlan(num_queries=queries, seed=s)) for s in seeds]
    took = (time.perf_counter() - started) / (2 * queries)
    print(
        f"{app_name}: {queries} queries, seeds {seeds[0]} and {seeds[1]} "
        f"(generation {1000 * took:.1f} ms per query)"
    )
    print(f"  {'label':<18} {'n':>5}  {'prompts':>8}  {'instances':>10}  {'shared':>10}"
          f"  {'edits':>8}  {'shared':>8}")
    print(_row(app, "all", *runs))
    by_label: dict[str, list[list[Query]]] = defaultdict(lambda: [[], []])
    for i, run in enumerate(runs):
        for q in run:
            by_label[f"L{q.level} {q.label}"][i].append(q)
    for label, (a, b) in sorted(by_label.items()):
        print(_row(app, label, a, b))
    repeats = Counter(app.instance_key(q) for q in runs[0])
    print(f"  most repeated instance in seed {seeds[0]}: {max(repeats.values())}x")
    print()


def main() -> None:
    """Print the figures for every app (or ``--apps``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--seeds", type=int, nargs=2, default=(1, 2))
    parser.add_argument("--apps", nargs="*", default=None)
    args = parser.parse_args()
    for name in args.apps or app_names():
        report(name, args.queries, tuple(args.seeds))


if __name__ == "__main__":
    main()
