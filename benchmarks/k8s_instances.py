"""How fresh are k8s instances? Distinct prompts per run and overlap between two seeds.

Usage: .venv/bin/python benchmarks/k8s_instances.py [N] [SEED_A] [SEED_B]
Prints, overall and per label, how many of N generated prompts are distinct and how many
of seed A's prompts also appear in seed B's run.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict

from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.k8s import K8sApp


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    seed_a = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    seed_b = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    app = K8sApp()
    start = time.perf_counter()
    a = plan_queries(app, QueryPlan(num_queries=n, seed=seed_a))
    per_query_ms = (time.perf_counter() - start) / n * 1000
    b = plan_queries(app, QueryPlan(num_queries=n, seed=seed_b))
    other = {q.prompt for q in b}
    by_label: dict[str, list[str]] = defaultdict(list)
    for q in a:
        by_label[q.label].append(q.prompt)
    print(f"k8s: {n} queries per seed, generation {per_query_ms:.1f} ms/query (mean)")
    prompts = [q.prompt for q in a]
    print(f"all: distinct {len(set(prompts))}/{n}, shared with seed {seed_b}: "
          f"{len(set(prompts) & other)}")
    for label, texts in sorted(by_label.items()):
        shared = len(set(texts) & other)
        print(f"{label:8} distinct {len(set(texts)):4}/{len(texts):<4} shared {shared}")


if __name__ == "__main__":
    main()
