"""How often ``netarena audit`` calls a kind a tell when looks say nothing at all.

Usage: .venv/bin/python benchmarks/audit_null.py APP [N] [SEED] [LABELS] [REPS]
(defaults: 400 queries at seed 0, the app's default plan, 20 shuffles)

The audit's own instances are read once; then, in each shuffle, the fault labels of every
kind are dealt again at random among that kind's objects (so each kind keeps its counts).
No look can then tell a fault, and every AUC over the line is chance. Per kind this prints
its faults, the median AUC,
how often the AUC is over ``TELL_AUC`` (what a verdict on the bare AUC would call a tell)
and how often the audit calls it a tell (over the line and settled, ``MIN_FAULTS``).
"""

from __future__ import annotations

import random
import statistics
import sys
from collections import defaultdict

from netarena.common.audit import MIN_FAULTS, TELL_AUC, classify_kinds, collect_objects
from netarena.common.audit.run import audit_queries
from netarena.common.core.app import load_app
from netarena.common.core.evidence import AuditObject


def _shuffled(objects: list[AuditObject], rng: random.Random) -> list[AuditObject]:
    """``objects`` with each kind's fault labels dealt again among its objects."""
    by_kind: dict[str, list[int]] = defaultdict(list)
    for index, obj in enumerate(objects):
        by_kind[obj.kind].append(index)
    out = list(objects)
    for indices in by_kind.values():
        labels = [objects[i].fault for i in indices]
        rng.shuffle(labels)
        for i, fault in zip(indices, labels, strict=True):
            out[i] = objects[i].model_copy(update={"fault": fault})
    return out


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    app = load_app(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    labels = tuple(x for x in (sys.argv[4] if len(sys.argv) > 4 else "").split(",") if x)
    reps = int(sys.argv[5]) if len(sys.argv) > 5 else 20
    objects = collect_objects(app, audit_queries(app, n, seed, labels), concurrency=2)[0]
    found: dict[str, list[tuple[int, float, bool]]] = defaultdict(list)
    rng = random.Random(seed)
    for _ in range(reps):
        for k in classify_kinds(_shuffled(objects, rng)):
            if k.auc is not None and k.auc_ci95 is not None:
                found[k.kind].append((k.faults, k.auc, k.tell))
    print(f"{sys.argv[1]} {','.join(labels) or 'default plan'}: {n} queries, seed {seed}, "
          f"{reps} shuffles; over: AUC > {TELL_AUC}; tell: over and settled "
          f"({MIN_FAULTS} faults or the interval)")
    width = max(map(len, found), default=0)
    over_sum = tell_sum = 0.0
    for kind, rows in sorted(found.items(), key=lambda item: item[1][0][0]):
        over = sum(auc > TELL_AUC for _, auc, _ in rows) / len(rows)
        tell = sum(t for _, _, t in rows) / len(rows)
        over_sum, tell_sum = over_sum + over, tell_sum + tell
        print(f"  {kind:{width}s} faults {rows[0][0]:4d}  median AUC "
              f"{statistics.median(auc for _, auc, _ in rows):.3f}  over {over:.2f}  "
              f"tell {tell:.2f}")
    print(f"kinds over the line per audit: {over_sum:.2f}; called tells: {tell_sum:.2f}")


if __name__ == "__main__":
    main()
