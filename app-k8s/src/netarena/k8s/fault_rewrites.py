"""Faults that rewrite a policy's whole direction rather than one item of it.

A default deny's policy types, the public entry point's open rule, and an open egress
locked down: each leaves a shape the design has too (``design``). ``faults`` chooses when
to draw them, a lock rarely, since it writes many new entries at once.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Any

from netarena.k8s.fault_spots import lone_side_weight
from netarena.k8s.manifests import locked_egress
from netarena.k8s.model import ANYONE, AppModel

__all__ = ["Candidate", "Policy", "default_deny", "lock", "open_rule", "unlock"]

Policy = dict[str, Any]
Candidate = tuple[str, str, str, dict[str, Any]]  # (policy, method, description, new spec)


def default_deny(policies: Sequence[Policy], rng: random.Random, add: str | None
                  ) -> Candidate | None:
    """The default deny's types changed: ``add`` a missing one, or (``None``) drop one.

    Clusters deny ingress only, egress only or both by default: every result is a shape
    the design has too.
    """
    for pol in policies:
        spec = pol.get("spec") or {}
        if spec.get("podSelector") or "podSelector" not in spec:
            continue
        types = list(spec.get("policyTypes") or [])
        if (add is None and len(types) < 2) or (add is not None and add in types):
            return None
        new = copy.deepcopy(spec)
        if add is None:
            what = new["policyTypes"].pop(rng.randrange(2))
        else:
            what = add
            new["policyTypes"] = sorted([*types, add], key=("Ingress", "Egress").index)
        name = pol["metadata"]["name"]
        return name, "default_deny", f"{name}: policy type {what} " \
            f"{'dropped' if add is None else 'added'}", new
    return None


def open_rule(model: AppModel, policies: Sequence[Policy], rng: random.Random,
               narrow: bool) -> Candidate | None:
    """The public entry point's open rule narrowed to its port, or its port rule opened."""
    for pol in policies:
        name = pol["metadata"]["name"]
        if name not in model.names or ANYONE not in model.service(name).sources:
            continue
        spec = copy.deepcopy(pol["spec"])
        rules = spec.get("ingress") or []
        port = model.service(name).container_port
        if narrow and {} in rules:
            rules[rules.index({})] = {"ports": [{"port": port, "protocol": "TCP"}]}
        elif not narrow and [r for r in rules if r and "from" not in r]:
            rules[rules.index(next(r for r in rules if r and "from" not in r))] = {}
        else:
            return None
        return name, "narrow_open" if narrow else "open_port", \
            f"{name}: the open rule {'narrowed to' if narrow else 'opened beyond'} {port}", spec
    return None


def lock(model: AppModel, policies: Sequence[Policy], rng: random.Random) -> Candidate | None:
    """An open egress locked down as the design locks one (``design._draw_locks``).

    To callees and DNS, to DNS, or closed; the public entry point is never locked, and a
    client keeps its callees. A server that dials others may lose them (the design keeps
    a dialer's callees because its application works; a lockdown template applied to the
    wrong service does not). A lock is the only fault that leaves a DNS rule of the
    design's kind (any other change to one writes a rule no design has,
    ``fault_spots.dns_rule_unlike_design``): with locks a sixteenth of AE's draws, a dialer
    always keeping its callees and DNS-only locks at the design's 12%, DNS rules were 26%
    of the egress rules AE changed against 46% of the design's.
    """
    open_ = [p for p in policies if p["metadata"]["name"] in model.names
             and ANYONE not in model.service(p["metadata"]["name"]).sources
             and (p.get("spec") or {}).get("egress") == [{}]]
    if not open_:
        return None
    pol = rng.choice(open_)
    name = pol["metadata"]["name"]
    lock = rng.choices(("callees", "dns", "none"), (0.26, 0.24, 0.12))[0]
    if model.service(name).port is None:
        lock = "callees"  # a client's egress-only policy has two rules, as the design's
    spec = copy.deepcopy(pol["spec"])
    if "Egress" not in spec.setdefault("policyTypes", ["Ingress"]):
        spec["policyTypes"].append("Egress")
    spec["egress"] = locked_egress(model, name, lock)
    return name, f"lock_{lock}", f"{name}: egress locked to {lock}", spec


def unlock(model: AppModel, policies: Sequence[Policy], rng: random.Random
           ) -> Candidate | None:
    """A locked-down egress opened, as the design leaves half the services' (``lock``'s undoing).

    A client's policy whose egress is open is the one look no other fault leaves: it has
    no ingress to fault and nothing in its open egress to change (4% of the design's
    policies, none of the faulted ones, ``netarena audit k8s``). Opening a lock lets its
    pods reach what they must not (addresses outside, ports beside their callees'); a
    client is drawn three times as often as a server (``fault_spots.lone_side_weight``).
    Only a lock to one callee and DNS over both protocols is opened: the runbook's calls
    and cluster DNS (``repair_search.lock_calls``) are then exactly what the lock let
    through, so an operator who reads the runbook and the notes can lock it again (a lock
    to several callees pairs each with every callee's port, which neither says).
    """
    if model.detail is None:
        return None
    locked = [p for p in policies if model.detail.locks.get(p["metadata"]["name"]) == "callees"
              and p["metadata"]["name"] not in model.detail.dns_udp_only
              and len(model.callees(p["metadata"]["name"])) == 1
              and (p.get("spec") or {}).get("egress") == locked_egress(
                  model, p["metadata"]["name"], "callees")]
    if not locked:
        return None
    pol = rng.choices(locked, [lone_side_weight(p, "egress") for p in locked])[0]
    name = pol["metadata"]["name"]
    spec = copy.deepcopy(pol["spec"])
    spec["egress"] = [{}]
    return name, "unlock", f"{name}: egress opened", spec
