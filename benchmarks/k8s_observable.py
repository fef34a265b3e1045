"""Is every fault visible to an operator? Symptoms in callers' logs, else in their probes.

Usage: .venv/bin/python benchmarks/k8s_observable.py [N]
For each fault type, N level-1 queries (seeds 0..N-1): a query counts under ``logs`` when
a caller whose call the fault blocks logs an error naming the callee (``kubectl logs``),
under ``probes`` when, failing that, ``kubectl exec SRC -- nc -zv -w 1`` (to the Service
name, then the pod IP) reproduces one mismatch of the report, and under ``report only``
otherwise (the agent's account may not exec in the source's namespace).
"""

from __future__ import annotations

import re
import sys
from typing import Any

from netarena.k8s import K8sApp
from netarena.k8s.episode import K8sEpisode

_ERROR = re.compile(r"rror|ERROR|Can't access|timed out|refused")


def _pods(ep: K8sEpisode, source: str) -> list[dict[str, Any]]:
    namespace, _, app = source.rpartition("/")
    if namespace:
        return [p for p in ep.store.list("Pod", namespace)
                if app in (p["metadata"].get("labels") or {}).values()]
    return ep.store.list("Pod", "default", f"app={source}")


def _in_logs(ep: K8sEpisode) -> bool:
    assert ep.kubectl is not None
    for r in ep.initial.mismatches:
        pods = _pods(ep, r.source) if r.expected and "/" not in r.source else []
        if not pods:
            continue
        text = ep.kubectl.run(["logs", pods[0]["metadata"]["name"]]).stdout
        ip = ep.store.get("Service", "default", r.dest)["spec"]["clusterIP"] \
            if r.dest in ep.model.names else r.dest
        names = (ip, f"{r.dest}:", f"lookup {r.dest} ", f"'{r.dest}'")
        if any(_ERROR.search(ln) and any(n in ln for n in names) for ln in text.splitlines()):
            return True
    return False


def _in_probes(ep: K8sEpisode) -> bool:
    assert ep.kubectl is not None
    for r in ep.initial.mismatches[:3]:
        pods = _pods(ep, r.source)
        if not pods:
            continue
        dest = ep.store.list("Pod", "default", f"app={r.dest}")
        for host in [r.dest] + [p["status"]["podIP"] for p in dest[:1]]:
            meta = pods[0]["metadata"]
            out = ep.kubectl.run(["exec", "-n", meta["namespace"], meta["name"], "--", "nc",
                                  "-zv", "-w", "1", host, str(r.port)]).stderr
            if out.startswith("error:"):
                break  # no exec rights there
            if ("open" in out or "refused" in out) == r.actual:
                return True
    return False


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    app = K8sApp()
    for label in ("RI", "AI", "CP", "CPR", "AE"):
        counts = {"logs": 0, "probes": 0, "report only": 0}
        for seed in range(n):
            ep = app.open(app.generate(seed, 1, label))
            try:
                where = "logs" if _in_logs(ep) else "probes" if _in_probes(ep) else "report only"
                counts[where] += 1
            finally:
                ep.close()
        print(f"{label:4} {n} queries: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
