"""``netarena audit`` at several seeds: is a change to a generator beyond the seeds' spread?

Usage: .venv/bin/python benchmarks/audit_seeds.py APP [N] [SEEDS] [LABELS]
(defaults: 400 queries at seeds 43,44,45,46,47; k8s takes about 1.5 CPU-minutes a seed)

One audit judges its 400 instances out of fold, and a kind's AUC still moves by a few
hundredths from one seed to the next: two audits cannot tell a change of 0.02 from the
seed's. This runs the
audit at every seed (one process per core) and prints each kind's AUC per seed, their mean
and worst, and at how many seeds the kind is over the line (``-``: no AUC at that seed, a class
missing). Compare two versions of the code by
their means over the same seeds (docs/k8s.md has such comparisons).
"""

from __future__ import annotations

import os
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from netarena.common.audit import run_audit
from netarena.common.audit.classify import TELL_AUC
from netarena.common.core.app import load_app


def _audit(app: str, n: int, seed: int, labels: tuple[str, ...] = ()) -> dict[str, float]:
    """Each kind's AUC in ``app``'s audit at ``seed`` (a kind missing a class has none)."""
    report = run_audit(load_app(app), queries=n, seed=seed, labels=labels, concurrency=2)
    return {k.kind: k.auc for k in report.kinds if k.auc is not None}


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    app = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    seeds = [int(s) for s in (sys.argv[3] if len(sys.argv) > 3 else "43,44,45,46,47").split(",")]
    labels = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else ()
    with ProcessPoolExecutor(max_workers=min(len(seeds), os.cpu_count() or 1)) as pool:
        found = dict(zip(seeds, pool.map(partial(_audit, app, n, labels=labels), seeds),
                         strict=True))
    kinds = sorted({kind for seed_aucs in found.values() for kind in seed_aucs})
    width = max(map(len, kinds), default=0)
    print(f"{app}: {n} queries at seeds {','.join(map(str, seeds))}; a tell above {TELL_AUC}")
    for kind in kinds:
        aucs = [found[seed][kind] for seed in seeds if kind in found[seed]]
        per_seed = ", ".join(f"{found[seed][kind]:.3f}" if kind in found[seed] else "-"
                             for seed in seeds)
        over = sum(auc > TELL_AUC for auc in aucs)
        print(f"  {kind:{width}s} mean {statistics.mean(aucs):.3f}  worst {max(aucs):.3f}  "
              f"over at {over}/{len(aucs)}  [{per_seed}]")

if __name__ == "__main__":
    main()
