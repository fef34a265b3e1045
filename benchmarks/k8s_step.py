"""Benchmark of one k8s episode step: exact judging and the kubectl round trip.

Targets: the exact judge (every source, destination, port and protocol any object names,
compared with the healthy policies) after a policy change ≤ 10 ms for Online Boutique and
≤ 100 ms for 100 services (issue 19); kubectl round trip ≤ 300 ms (brief §12), shown beside
``kubectl version --client`` (no server). Run: ``python benchmarks/k8s_step.py
[--repeats N]``. Prints medians.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

from netarena.k8s import K8sApp
from netarena.k8s.apiserver import ObjectStore
from netarena.k8s.generator import K8sConfig, build_model
from netarena.k8s.judge import StateCache
from netarena.k8s.manifests import render_all
from netarena.k8s.model import AppModel


def _store(model: AppModel) -> ObjectStore:
    store = ObjectStore(seed=1)
    existing = {ns["metadata"]["name"] for ns in store.list("Namespace")}
    for obj in render_all(model):
        if not (obj["kind"] == "Namespace" and obj["metadata"]["name"] in existing):
            store.create(obj)
    return store


def _matrix_ms(model: AppModel, repeats: int) -> tuple[float, int]:
    """Median ms to judge exactly after a port change (store read + universe + engine)."""
    store = _store(model)
    ns = model.namespace
    cache = StateCache(model, lambda: store.revision, lambda: (
        store.list("Pod"), store.list("Namespace"), store.list("NetworkPolicy", ns)))
    target = next(p for p in store.list("NetworkPolicy", ns)
                  if any(r.get("ports") for r in p["spec"].get("ingress") or []))
    index = next(i for i, r in enumerate(target["spec"]["ingress"]) if r.get("ports"))
    path = f"/spec/ingress/{index}/ports/0/port"
    times = []
    for i in range(repeats):
        store.patch("NetworkPolicy", ns, target["metadata"]["name"],
                    [{"op": "replace", "path": path, "value": 20000 + i % 2}], "json")
        t0 = time.perf_counter()
        state = cache.get()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), state.connectivity.checked or 0


def _kubectl_ms(repeats: int) -> dict[str, float]:
    """Median ms of kubectl commands an agent types, in an episode's cluster (HTTPS, RBAC)."""
    app = K8sApp()
    episode = app.open(app.generate(2, 1, "CP"))  # its fault is off the probe's path
    kubectl = episode.kubectl
    assert kubectl is not None
    commands = {
        "get networkpolicy": ["get", "networkpolicy"],
        "get networkpolicy -o json": ["get", "networkpolicy", "-o", "json"],
        "describe networkpolicy": ["describe", "networkpolicy", "adservice"],
        "patch --type json": ["patch", "networkpolicy", "adservice", "--type", "json", "-p",
                              '[{"op":"replace","path":"/spec/ingress/0/ports/0/port","value":9555}]'],
        # recommendationservice runs on Alpine (BusyBox nc); frontend is distroless (no nc)
        "exec nc probe": ["exec", "deploy/recommendationservice", "--", "nc", "-zv", "-w", "1",
                          "productcatalogservice", "3550"],
    }
    out = {}
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([kubectl.binary, "version", "--client"], capture_output=True, check=True)
        times.append((time.perf_counter() - t0) * 1000)
    out["version --client (no server)"] = statistics.median(times)
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
    for label, config, target in [("online-boutique (12 services)", K8sConfig(), 10),
                                  ("synthetic 50 services", K8sConfig(num_services=50), 100),
                                  ("synthetic 100 services", K8sConfig(num_services=100), 100)]:
        ms, probes = _matrix_ms(build_model(config, 1), args.repeats)
        print(f"exact judge after a policy change, {label}, {probes} probes: "
              f"median {ms:.1f} ms (target <= {target} ms)")
    round_trips = _kubectl_ms(args.repeats)
    client = round_trips["version --client (no server)"]
    for name, ms in round_trips.items():
        print(f"kubectl round trip, {name}: median {ms:.0f} ms (target <= 300 ms), "
              f"{ms / client:.2f}x version --client (target <= 1.5x)")


if __name__ == "__main__":
    main()
