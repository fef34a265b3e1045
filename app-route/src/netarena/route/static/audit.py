"""The audit's reader for static networks (``netarena audit route``).

Each query's network is built, read on every machine with ``readings.NODE_READ`` (the
command any agent could send) once healthy and once faulted, and every statement of the
faulted reading becomes an ``AuditObject``: its kind and fields as ``readings.py`` gives
them (classes of addresses, interfaces and ports from the prompt's inventory, positions,
priorities, metrics, comments, counters), labelled ``fault`` when the injection made it or
changed it (its identity is new, or its value differs from the healthy reading).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from netarena.common.core.app import App
from netarena.common.core.errors import EmulatorError
from netarena.common.core.evidence import AuditObject
from netarena.common.core.types import Query
from netarena.route.base.config import RouteConfig
from netarena.route.emulator.network import Network
from netarena.route.emulator.topology import topology_of
from netarena.route.emulator.undisclosed import Undisclosed
from netarena.route.judge.measure import ProbeTiming
from netarena.route.static.addressbook import AddressBook
from netarena.route.static.injection import build_faulted
from netarena.route.static.inventory import read_inventory
from netarena.route.static.readings import NODE_READ, Reading, read_objects

__all__ = ["audit_objects", "read_network"]


def read_network(net: Network, book: AddressBook) -> dict[str, list[Reading]]:
    """Every machine's readings, by machine.

    Raises:
        EmulatorError: A machine's read failed.
    """

    def one(node: str) -> list[Reading]:
        result = net.exec(node, ["bash", "-c", NODE_READ])
        if result.returncode != 0:
            raise EmulatorError(f"{node}: reading failed: {result.output[-300:]}")
        return read_objects(node, result.output, book)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(net.plan.nodes, pool.map(one, net.plan.nodes), strict=True))


def label(
    healthy: dict[str, list[Reading]], faulted: dict[str, list[Reading]]
) -> list[AuditObject]:
    """The faulted readings as audit objects; a fault is new or changed since healthy."""
    before = {(node, r.identity): r.value for node, found in healthy.items() for r in found}
    return [
        AuditObject(
            kind=r.kind,
            fields=r.fields,
            fault=before.get((node, r.identity)) != r.value
            or (node, r.identity) not in before,
        )
        for node, found in faulted.items()
        for r in found
    ]


def audit_objects(app: App, query: Query) -> list[AuditObject]:
    """Every object an agent can read in ``query``'s faulted network, labelled by the truth.

    Raises:
        EmulatorError: The network could not be built, faulted or read.
    """
    config = app.config
    timeout_s = config.probe_timeout_s if isinstance(config, RouteConfig) else ProbeTiming.timeout_s
    plan, intent, topo = topology_of(query)
    book = AddressBook(read_inventory(query.prompt))
    healthy: dict[str, list[Reading]] = {}

    def look(net: Network) -> None:
        healthy.update(read_network(net, book))

    injected = build_faulted(
        plan,
        intent,
        topo,
        [slot["candidates"] for slot in query.truth["faults"]],
        ProbeTiming(timeout_s=timeout_s),
        Undisclosed.from_dict(query.truth.get("undisclosed")),
        on_healthy=look,
    )
    try:
        faulted = read_network(injected.net, book)
    finally:
        injected.net.close()
    return label(healthy, faulted)
