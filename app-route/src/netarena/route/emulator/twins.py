"""The design's own blocks, enforced with the objects faults are made of.

A healthy network keeps some traffic apart on purpose (``Block``: a host out of service, a
subnet cut off, two subnets kept apart, a quarantined range), and each block is enforced
by objects drawn with ``targets.draw_record``, exactly as faults are: one *primary* object
that realises the block on every protocol by itself, and up to two *extra* ones that
repeat part of it (a small MTU on a host also kept off by a filter, an ICMP drop for a pair
also kept apart by a policy rule). Besides the blocks, a network may hold harmless objects
of faults' shapes (``harmless.py``): a backup route to a subnet through another interface
behind the connected one, a service address inside a subnet, an address with another
prefix length that still reaches everything it must, a host that forwards. An agent that
removes what looks like a fault removes these too; only an object's effect on what must
work tells them apart.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import dataclass
from typing import Any

from netarena.route.emulator.blocking import Record, refusing_everything
from netarena.route.emulator.harmless import add_harmless
from netarena.route.emulator.plan import ROUTER, NetworkPlan
from netarena.route.emulator.targets import (
    METHOD_TYPE,
    Policy,
    Target,
    draw_range,
    draw_record,
    unassigned,
)

__all__ = ["Block", "REPEATS", "draw_blocks", "draw_twins", "apply_order", "keeps_gateways"]

_OFF_ROLES = ("old camera recorder", "retired print server", "spare workstation",
              "decommissioned build agent", "broken kiosk", "old test box")
_CUT_ROLES = ("lab network", "quarantine network", "staging network", "guest network")


@dataclass(frozen=True)
class Block:
    """Traffic the owners keep apart on purpose (enforced by ``twins.py``)."""

    kind: str
    """``host_off`` (a host out of service: nothing reaches it, it reaches nothing),
    ``subnet_cut`` (a subnet's hosts reach only each other, and the router unless
    ``router``), ``pair_block`` (two subnets' hosts never reach each other), or
    ``quarantine`` (a range inside a subnet, where no machine lives, that nothing reaches)."""
    subnet: int
    """The host's subnet, the cut subnet, the pair's first subnet, or the range's subnet."""
    host: str | None = None
    """The host out of service."""
    other: int | None = None
    """The pair's second subnet."""
    network: str | None = None
    """The quarantined range."""
    router: bool = True
    """A cut subnet: whether it is cut off from the router too."""
    role: str = ""
    """What the owners call it (``lab network``)."""

    def separates(self, plan: NetworkPlan, src: str, dst: str) -> bool:
        """Whether this block stops new traffic from ``src`` to ``dst``."""
        if self.kind == "host_off":
            return self.host in (src, dst)
        nets = {n: None if n == ROUTER else plan.host(n).subnet for n in (src, dst)}
        if self.kind == "subnet_cut":
            inside = [n for n in (src, dst) if nets[n] == self.subnet]
            if len(inside) != 1:
                return False
            outside = dst if inside[0] == src else src
            return outside != ROUTER or self.router
        if self.kind == "pair_block":
            pair = {nets[src], nets[dst]}
            return pair == {self.subnet, self.other} and None not in pair
        return False


def draw_blocks(
    rng: random.Random, plan: NetworkPlan, busy: set[int | None], guarded: set[str]
) -> tuple[Block, ...]:
    """Blocks for ``plan``, drawn from ``rng``.

    Subnets in ``busy`` (management, restricted) and hosts in ``guarded`` (protected) are
    left alone, and every subnet keeps a host in service.
    """
    blocks: list[Block] = []
    free = [s.index for s in plan.subnets if s.index not in busy]
    if len(plan.subnets) >= 3 and free and rng.random() < 0.55:
        blocks.append(Block("subnet_cut", rng.choice(free), router=rng.random() < 0.5,
                            role=rng.choice(_CUT_ROLES)))
    cut = {b.subnet for b in blocks}
    free = [i for i in free if i not in cut]
    if len(plan.subnets) >= 3 and len(free) >= 2 and rng.random() < 0.3:
        a, o = rng.sample(free, 2)
        blocks.append(Block("pair_block", a, other=o))
    hosts = [h for h in plan.hosts if h.name not in guarded and h.subnet not in cut
             and len(plan.hosts_in(h.subnet)) > 1]
    if hosts and rng.random() < 0.7:
        host = rng.choice(hosts)
        blocks.append(Block("host_off", host.subnet, host=host.name, role=rng.choice(_OFF_ROLES)))
    for _ in range(rng.choice((0, 1, 1, 2))):
        subnet = rng.choice(plan.subnets).index
        network = draw_range(rng, plan, subnet, with_hosts=False)
        if network is not None and all(b.network != network for b in blocks):
            blocks.append(Block("quarantine", subnet, network=network))
    return tuple(blocks)


_PRIMARY = {
    ("host_off", True): ("link_down", "ifconfig_down", "tc_zero_queue", "flush",
                         "iptables_drop", "iptables_reject", "forward_policy_drop"),
    ("subnet_cut", True): ("link_down", "ifconfig_down", "tc_zero_queue", "flush",
                           "wrong_interface", "unreachable_gateway", "loop", "refusing_route",
                           "rule_prohibit"),
    ("subnet_cut", False): ("ip_forward_off", "iptables_drop", "iptables_reject",
                            "rule_prohibit"),
    ("pair_block", True): ("iptables_drop", "iptables_reject", "rule_prohibit"),
    ("quarantine", True): ("refusing_route", "rule_prohibit", "forward_drop_subnet",
                           "iptables_drop", "iptables_reject", "wrong_interface",
                           "unreachable_gateway", "loop"),
}
"""Methods that realise a block exactly, on every protocol, by themselves."""
_SPOT = {
    "host_off": {"ifconfig_down", "link_down", "mtu_too_small", "flush", "wrong_ip",
                 "wrong_prefix", "iptables_drop", "iptables_reject", "icmp_drop",
                 "tc_zero_queue", "tcp_service_drop", "udp_reject", "forward_drop_subnet",
                 "rule_prohibit", "forward_policy_drop", "unreachable_gateway", "duplicate_ip"},
    "subnet_cut": {"ip_forward_off", "rule_prohibit", "forward_drop_subnet", "ifconfig_down",
                   "link_down", "mtu_too_small", "flush", "wrong_ip", "wrong_prefix",
                   "iptables_drop", "iptables_reject", "icmp_drop", "tc_zero_queue",
                   "tcp_service_drop", "udp_reject", "wrong_interface", "unreachable_gateway",
                   "metric_loses", "loop"},
    "subnet_open": {"ip_forward_off", "rule_prohibit", "forward_drop_subnet", "iptables_drop",
                    "iptables_reject", "icmp_drop", "tcp_service_drop", "udp_reject"},
    "pair_block": {"rule_prohibit", "forward_drop_subnet", "iptables_drop", "iptables_reject",
                   "icmp_drop", "tcp_service_drop", "udp_reject"},
    "quarantine": {"rule_prohibit", "forward_drop_subnet", "iptables_drop", "iptables_reject",
                   "icmp_drop", "tcp_service_drop", "udp_reject", "wrong_interface",
                   "unreachable_gateway", "metric_loses", "loop"},
}
"""Blocks (a cut subnet the router still reaches: ``subnet_open``) each method can repeat
part of without touching anything that must pass."""
_BY_TYPE = {code: sorted(m for m in _SPOT["subnet_cut"] | _SPOT["host_off"]
                         | {"forward_policy_drop"} if METHOD_TYPE[m] == code)
            for code in ("DR", "DI", "RI", "DT", "WR")}
"""Fault methods by type, as faults draw them."""
_POLICY = Policy(share=0.3)
"""A block's route objects sit in a policy table of their own as often as faults' do."""
_ROUTER_TOO = 0.4
"""Share of an out-of-service machine's router ACLs kept beside its INPUT rules (else only
faults' router rules named one machine)."""
_LINKISH = {"link_down", "ifconfig_down", "flush"}
_BARS = {"mtu_too_small": {"link_down", "ifconfig_down"},
         "link_down": {"mtu_too_small"}, "ifconfig_down": {"mtu_too_small"}}
"""Methods a block's object of another method keeps out (besides its own): no fault leaves
a down link with a small MTU (31 of the design's 454 link objects did, none of 400 faults;
link AUC 0.602 → 0.577 without them)."""
_EXCLUSIVE = {"wrong_interface", "unreachable_gateway", "loop", "refusing_route", "flush",
              "metric_loses", "link_down", "ifconfig_down", "wrong_ip", "wrong_prefix"}
"""Changes to one interface's link, addresses or routes: at most one per block."""

def _target(block: Block) -> Target:
    kinds = {"host_off": "host", "subnet_cut": "subnet", "pair_block": "pair",
             "quarantine": "range"}
    return Target(kinds[block.kind], block.subnet, block.host, block.other, block.network,
                  block.router)


def _enforce(rng: random.Random, plan: NetworkPlan, block: Block, ports: tuple[int, int],
             avoid: frozenset[int]) -> list[Record]:
    key = (block.kind, block.router or block.kind != "subnet_cut")
    target = _target(block)
    methods = tuple(m for m in _PRIMARY[key] if _fits(plan, block, m))
    primary = draw_record(rng, plan, target, rng.choice(methods), ports, avoid, _POLICY)
    found = []  # the router's ACL for an out-of-service machine, kept as well
    if block.kind == "host_off" and primary["node"] == ROUTER and "rules" in primary:
        found += [primary] if rng.random() < _ROUTER_TOO else []
    if block.kind == "host_off" and "rules" in primary:  # the host refuses everything
        rules = refusing_everything(rng, primary["rules"][0])
        primary = {**primary, "node": block.host, "rules": rules}
    if primary["method"] == "forward_policy_drop":
        primary = {**primary, "node": block.host, "chain": "INPUT"}
    return [*found, primary]


_ADDRESSING = {"link_down", "ifconfig_down", "flush", "wrong_ip", "wrong_prefix"}


def _fits(plan: NetworkPlan, block: Block, method: str) -> bool:
    """Whether ``method`` may touch ``block``'s interface without cutting more than it."""
    if block.kind != "subnet_cut" or block.subnet != plan.subnets[0].index:
        return True
    return method not in _ADDRESSING  # the router answers pings at that subnet's gateway


def _spot(block: Block) -> str:
    return "subnet_open" if block.kind == "subnet_cut" and not block.router else block.kind


def _holds(method: str, mine: list[Record]) -> bool:
    """Whether a block's objects hold ``method`` or one that keeps it out (``_BARS``)."""
    barred = {method} | _BARS.get(method, set())
    return any(r["method"] in barred for r in mine)


def _mirror(rng: random.Random, plan: NetworkPlan, blocks: tuple[Block, ...],
            ports: tuple[int, int], avoid: frozenset[int], records: list[Record]
            ) -> Record | None:
    """One more object for a block, of a method drawn as faults draw theirs.

    A fault type, then one of its methods: the design holds each method's objects about as
    often as faults do. ``None`` when no block takes that method.
    """
    code = rng.choice(sorted(_BY_TYPE))
    method = rng.choice(_BY_TYPE[code])
    fits = [b for b in blocks if method in _SPOT[_spot(b)] and _fits(plan, b, method)]
    if not fits:
        return None
    block = rng.choice(fits)
    mine = [r for r in records if r.get("target") == _target(block).to_dict()]
    if method in _EXCLUSIVE and any(r["method"] in _EXCLUSIVE for r in mine):
        return None  # two changes of one interface's addresses or routes would clash
    if _holds(method, mine):
        return None  # one object of a method per block
    if method == "duplicate_ip" and block.kind != "host_off":
        return None  # only an out-of-service machine's address may be held elsewhere
    extra = draw_record(rng, plan, _target(block), method, ports, avoid, _POLICY)
    if method == "duplicate_ip":
        extra |= _held_address(rng, plan, block, method)
    if method == "unreachable_gateway" and block.kind == "subnet_cut":
        host = rng.choice(plan.hosts_in(block.subnet))
        extra |= {"node": host.name, "intf": host.intf,
                  "value": unassigned(rng, plan, block.subnet)}
    if block.kind == "quarantine" and method == "metric_loses":
        extra["replace"] = False  # the range holds nothing: the subnet's route stays
    if method == "forward_policy_drop":
        extra |= {"node": block.host, "chain": "INPUT"}
    return extra


def _held_address(rng: random.Random, plan: NetworkPlan, block: Block, method: str
                  ) -> dict[str, Any]:
    """An out-of-service host's address held by the router (or a spare one by the host)."""
    assert block.host is not None
    if method == "duplicate_ip":
        subnet = plan.subnet(block.subnet)
        return {"node": ROUTER, "intf": subnet.router_intf, "keep_own": True,
                "value": plan.host(block.host).ip}
    return {"keep_own": True}


def _held(rng: random.Random, plan: NetworkPlan, off: set[str], public: set[str]
          ) -> list[Record]:
    """A host holding an address another machine is known by, harmlessly.

    An out-of-service host's, or the gateway of another subnet than its own and the
    router's first (and not one a service is published at).
    """
    hosts = [h for h in plan.hosts if h.name not in off]
    if not hosts or rng.random() < 0.4:
        return []
    holder = rng.choice(hosts)
    taken = [plan.host(h).ip for h in off if h != holder.name]
    if not taken or rng.random() < 0.25:
        taken += [s.gateway for s in plan.subnets[1:] if s.index != holder.subnet
                  and s.gateway not in public]
    if not taken:
        return []
    return [{"type": "RI", "method": "duplicate_ip", "node": holder.name, "intf": holder.intf,
             "subnet": holder.subnet, "other": None, "value": rng.choice(taken),
             "keep_own": True}]


def draw_twins(rng: random.Random, plan: NetworkPlan, blocks: tuple[Block, ...],
               ports: tuple[int, int], restricted: int | None = None,
               public: set[str] | None = None) -> list[Record]:
    """The objects of the design's blocks and its harmless fault-shaped objects.

    Args:
        rng: Where everything comes from.
        plan: The addressing plan.
        blocks: The intent's blocks.
        ports: The judged TCP and UDP service ports.
        restricted: The restricted subnet, if any (its hosts have no default route).
        public: Addresses services are published at (no other machine may hold them).
    """
    public = public or set()
    off = {b.host for b in blocks if b.kind == "host_off" and b.host}
    cut = {b.subnet for b in blocks if b.kind == "subnet_cut"}
    avoid = frozenset(cut)
    records = [r for block in blocks for r in _enforce(rng, plan, block, ports, avoid)]
    for _ in range(rng.choice((1, 2, 2, 3)) if blocks else 0):
        extra = _mirror(rng, plan, blocks, ports, avoid, records)
        if extra is not None:
            records.append(extra)
    for block in blocks:
        for method, share in REPEATS.get(_spot(block), ()):
            mine = [r for r in records if r.get("target") == _target(block).to_dict()]
            if rng.random() < share and not _holds(method, mine):
                records.append(draw_record(rng, plan, _target(block), method, ports, avoid,
                                               _POLICY))
    records += _held(rng, plan, off, public)
    quiet = [h for h in plan.hosts if h.name not in off and h.subnet not in cut
             and h.subnet != restricted]
    records = add_harmless(rng, plan, records, quiet, cut, ports)
    for record in records:
        if record.get("forwarding_host") and rng.random() >= _HOST_FORWARDS:
            del record["forwarding_host"]
    return records


_HOST_FORWARDS = 0.2
"""Share of the design's routes through a host (loops, backups) whose host forwards (faults'
loops: half, but faults are rarer; at a half, audit AUC 0.964 over 40 instances)."""
REPEATS = {
    "host_off": (("mtu_too_small", 0.02), ("tc_zero_queue", 0.3), ("rule_prohibit", 0.35),
                 ("forward_drop_subnet", 0.3), ("icmp_drop", 0.4), ("udp_reject", 0.4)),
    "subnet_cut": (("mtu_too_small", 0.02), ("tc_zero_queue", 0.3), ("ip_forward_off", 0.5),
                   ("icmp_drop", 0.3)),
    "subnet_open": (("ip_forward_off", 0.5), ("icmp_drop", 0.3), ("udp_reject", 0.3)),
    "pair_block": (("icmp_drop", 0.3), ("udp_reject", 0.3)),
}
"""Objects a block of each sort repeats now and then, with the chance of each. An
out-of-service host's ping and UDP drops: without the ICMP one and with UDP at 0.2, ICMP and
UDP rules on a host's INPUT were 10% and 13% of faults' blocking rules against 3% and 6% of
the design's (audit, seed 21); 8% and 7% of the design's now."""


def apply_order(records: tuple[Record, ...]) -> list[Record]:
    """The order to apply twins in.

    Address changes first (they drop routes through their interface), routes before policy
    rules (a refusing rule can make a gateway invalid), interfaces taken down last (a route
    through them could not be added).
    """

    def phase(record: Record) -> int:
        if record["method"] == "wrong_prefix":
            return 0
        if record["method"] == "rule_prohibit":
            return 2
        return 3 if record["method"] in _LINKISH else 1

    return sorted(records, key=phase)


def keeps_gateways(record: Record, plan: NetworkPlan, lines: list[str]) -> bool:
    """Whether a narrowed prefix keeps its node's gateways in that subnet on the link."""
    if record["method"] != "wrong_prefix":
        return True
    own = plan.subnet(record["subnet"])
    address = own.gateway if record["node"] == ROUTER else plan.host(record["node"]).ip
    link = ipaddress.ip_network(f"{address}/{record['value']}", strict=False)
    words = [line.split() for line in lines]
    gateways = [w[k + 1] for w in words for k, word in enumerate(w[:-1]) if word == "via"]
    return all(ipaddress.ip_address(g) in link for g in gateways if own.contains(g))
