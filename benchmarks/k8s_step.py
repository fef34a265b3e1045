"""Benchmark of one k8s episode step: matrix recomputation and the kubectl round trip.

Targets (brief §12): connectivity matrix after a policy change ≤ 100 ms; kubectl round
trip ≤ 300 ms. Run: ``python benchmarks/k8s_step.py [--repeats N]``. Prints medians.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from netarena.k8s import K8sApp
from netarena.k8s.apiserver import ObjectStore
from netarena.k8s.manifests import render_all
from netarena.k8s.model import AppModel, online_boutique, synthetic_app
from netarena.k8s.policy_matrix import ConnectivityCache


def _store(model: AppModel) -> ObjectStore:
    store = ObjectStore(seed=1)
    existing = {ns["metadata"]["name"] for ns in store.list("Namespace")}
    for obj in render_all(model):
        if not (obj["kind"] == "Namespace" and obj["metadata"]["name"] in existing):
            store.create(obj)
    return store


def _matrix_ms(model: AppModel, repeats: int) -> tuple[float, int]:
    """Median ms to recompute the matrix after a port change (store read + engine)."""
    store = _store(model)
    ns = model.namespace
    cache = ConnectivityCache(model, lambda: store.revision, lambda: (
        store.list("Pod", ns), store.list("Namespace"), store.list("NetworkPolicy", ns)))
    target = model.servers[1]
    times = []
    for i in range(repeats):
        port = target.container_port + (i % 2)
        store.patch("NetworkPolicy", ns, target.name,
                    [{"op": "replace", "path": "/spec/ingress/0/ports/0/port", "value": port}],
                    "json")
        t0 = time.perf_counter()
        conn = cache.get()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), len(conn.results)


def _kubectl_ms(repeats: int) -> dict[str, float]:
    """Median ms of kubectl commands an agent types, in an episode's cluster (HTTPS, RBAC)."""
    app = K8sApp()
    episode = app.open(app.generate(1, 1, "CP"))
    kubectl = episode.kubectl
    assert kubectl is not None
    commands = {
        "get networkpolicy": ["get", "networkpolicy"],
        "get networkpolicy -o json": ["get", "networkpolicy", "-o", "json"],
        "describe networkpolicy": ["describe", "networkpolicy", "adservice"],
        "patch --type json": ["patch", "networkpolicy", "adservice", "--type", "json", "-p",
                              '[{"op":"replace","path":"/spec/ingress/0/ports/0/port","value":9555}]'],
        "exec nc probe": ["exec", "deploy/frontend", "--", "nc", "-zv", "-w", "1", "adservice",
                          "9555"],
    }
    out = {}
    try:
        for name, argv in commands.items():
            kubectl.run(argv)  # warm the discovery cache
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                result = kubectl.run(argv)
                times.append((time.perf_counter() - t0) * 1000)
                assert result.exit_code == 0, result.stderr
            out[name] = statistics.median(times)
    finally:
        episode.close()
    return out


def main() -> None:
    """Print median figures against the brief's targets."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    for label, model in [("online-boutique (12 services)", online_boutique()),
                         ("synthetic 50 services", synthetic_app(50, random.Random(1))),
                         ("synthetic 100 services", synthetic_app(100, random.Random(1)))]:
        ms, probes = _matrix_ms(model, args.repeats)
        print(f"matrix after a policy change, {label}, {probes} probes: "
              f"median {ms:.1f} ms (target <= 100 ms)")
    for name, ms in _kubectl_ms(args.repeats).items():
        print(f"kubectl round trip, {name}: median {ms:.0f} ms (target <= 300 ms)")


if __name__ == "__main__":
    main()
