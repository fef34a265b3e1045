"""What the owners require of the network, and the state that enforces it.

A healthy network is not "everything pings everything": it carries legitimate state that
a blind reset destroys. Each query draws one or more of:

* a **management subnet**: machines elsewhere must not reach its hosts (the router's
  FORWARD chain drops new traffic toward it after accepting established flows), while its
  hosts reach everything;
* **protected hosts** (a database, a licence server, ...): a host firewall accepts new
  traffic only from listed subnets (always its own, and the management subnet);
* a **restricted subnet** routed only to its peer subnets: its hosts have no default route,
  only static routes to the peers, so nothing else reaches them;
* **blocks** (``Block``): a host out of service, a subnet cut off (from the other subnets,
  or from the router too), two subnets kept apart, a quarantined range inside a subnet.
  They are enforced with the very objects faults are made of (``twins.py``), so a DROP
  rule, a refusing policy rule, an interface down or an empty queue may be the owners' own;
* a **default-deny** router: its FORWARD or INPUT policy is DROP, with rules accepting
  what must pass.

``intended_pairs`` is the pure model of which ordered pairs answer pings when the network
is healthy; ``open()`` checks the live network against it. The agent is told the intent in
an operator's words and the expected ping matrix, never the rules themselves.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, replace
from typing import Any

from netarena.route.emulator.blocking import draw_comment
from netarena.route.emulator.plan import ROUTER, NetworkPlan
from netarena.route.emulator.twins import Block, draw_blocks

__all__ = [
    "Protected",
    "Restricted",
    "Block",
    "Intent",
    "draw_intent",
    "intended_pairs",
    "opens_a_path",
    "reaches",
    "router_rules",
    "host_rules",
    "host_route_commands",
]

_PROTECTED_ROLES = (
    "database server",
    "payroll database",
    "licence server",
    "HR file server",
    "build cache",
    "log collector",
    "camera recorder",
    "finance server",
    "source-code server",
    "directory server",
)
_RESTRICTED_ROLES = (
    "backup network",
    "storage network",
    "lab network",
    "building-control network",
    "printer network",
)


@dataclass(frozen=True)
class Protected:
    """A host whose own firewall accepts new traffic only from some subnets."""

    host: str
    """The host (``h6``)."""
    role: str
    """What it is, as the owners call it (``payroll database``)."""
    allowed: tuple[int, ...]
    """Subnets whose machines may reach it (its own included)."""
    reject: bool
    """Refused traffic gets an ICMP error (REJECT) instead of silence (DROP)."""
    policy_drop: bool
    """The INPUT policy is DROP (else a final rule drops or rejects)."""
    note: str | None = None
    """The final rule's comment, if it has one."""


@dataclass(frozen=True)
class Restricted:
    """A subnet routed only to some peer subnets (its hosts have no default route)."""

    subnet: int
    """The restricted subnet."""
    peers: tuple[int, ...]
    """The subnets its hosts have routes to."""
    role: str
    """What it is, as the owners call it (``backup network``)."""


@dataclass(frozen=True)
class Intent:
    """The owners' requirements beyond "everything reaches everything"."""

    management: int | None
    """The management subnet, if any."""
    management_reject: bool
    """Traffic toward management is rejected with an ICMP error rather than dropped."""
    state_module: bool
    """Firewalls match established flows with ``-m state`` (else ``-m conntrack``)."""
    protected: tuple[Protected, ...]
    """Hosts with their own firewall."""
    restricted: Restricted | None
    """A subnet routed only to its peers, if any."""
    blocks: tuple[Block, ...] = ()
    """Traffic kept apart on purpose."""
    forward_deny: bool = False
    """The router's FORWARD policy is DROP, with rules accepting what must pass."""
    input_deny: bool = False
    """The router's INPUT policy is DROP, with rules accepting what must reach it."""
    management_note: str | None = None
    """The comment of the router's rule toward management, if it has one."""
    management_form: str = "dest"
    """How the router refuses traffic toward management: one rule for its destination
    (``dest``), one for everyone but itself (``others``), or one per other subnet
    (``pairs``)."""
    stateful: bool = False
    """The router's FORWARD chain accepts established flows first, management or not."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form (for ``Query.truth``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Intent:
        """Inverse of ``to_dict``."""
        restricted = data["restricted"]
        return cls(
            management=data["management"],
            management_reject=data["management_reject"],
            state_module=data["state_module"],
            protected=tuple(
                Protected(**{**p, "allowed": tuple(p["allowed"])}) for p in data["protected"]
            ),
            restricted=(
                Restricted(**{**restricted, "peers": tuple(restricted["peers"])})
                if restricted
                else None
            ),
            blocks=tuple(Block(**b) for b in data.get("blocks", ())),
            forward_deny=data.get("forward_deny", False),
            input_deny=data.get("input_deny", False),
            management_note=data.get("management_note"),
            management_form=data.get("management_form", "dest"),
            stateful=data.get("stateful", False),
        )

    @property
    def cut_subnets(self) -> frozenset[int]:
        """The subnets the owners cut off (``subnet_cut`` blocks)."""
        return frozenset(b.subnet for b in self.blocks if b.kind == "subnet_cut")

    def protection(self, host: str) -> Protected | None:
        """The firewall of ``host``, if it has one."""
        return next((p for p in self.protected if p.host == host), None)


def draw_intent(rng: random.Random, plan: NetworkPlan) -> Intent:
    """Draw the owners' requirements for ``plan``: at least one of the three kinds."""
    indices = [s.index for s in plan.subnets]
    management = rng.choice(indices) if rng.random() < 0.7 else None
    restricted = None
    if len(indices) >= 3 and rng.random() < 0.4:
        subnet = rng.choice([i for i in indices if i != management])
        others = [i for i in indices if i != subnet]
        peers = tuple(sorted(rng.sample(others, rng.randint(1, max(1, len(others) - 1)))))
        restricted = Restricted(subnet, peers, rng.choice(_RESTRICTED_ROLES))
    protected: list[Protected] = []
    count = rng.choice((0, 1, 1, 2))
    if management is None and restricted is None:
        count = max(count, 1)
    roles = rng.sample(_PROTECTED_ROLES, count)
    for host, role in zip(rng.sample(list(plan.hosts), count), roles, strict=True):
        # at least one subnet other than its own and management's must be kept out
        others = [i for i in indices if i not in (host.subnet, management)]
        if not others:
            continue
        allowed = {host.subnet, *rng.sample(others, rng.randint(0, len(others) - 1))}
        if management is not None:
            allowed.add(management)
        protected.append(
            Protected(
                host.name,
                role,
                tuple(sorted(allowed)),
                reject=rng.random() < 0.4,
                policy_drop=rng.random() < 0.5,
                note=draw_comment(rng),
            )
        )
    if not (protected or restricted or management is not None):
        management = rng.choice(indices)
    busy = {management, restricted.subnet if restricted else None}
    if restricted is not None:
        busy |= set(restricted.peers)  # its only way out stays open
    intent = Intent(
        management=management,
        management_reject=rng.random() < 0.4,
        state_module=rng.random() < 0.3,
        protected=tuple(sorted(protected, key=lambda p: plan.nodes.index(p.host))),
        restricted=restricted,
        blocks=draw_blocks(rng, plan, busy, {p.host for p in protected}),
        forward_deny=rng.random() < 0.25,
        input_deny=rng.random() < 0.25,
        management_note=draw_comment(rng),
        management_form=rng.choice(("dest", "dest", "others", "pairs")),
        stateful=rng.random() < 0.5,
    )
    if not any(_crosses(plan, s, d) for s, d in intended_pairs(plan, intent)):
        # something must cross the router, or a fault in its forwarding breaks nothing
        kept = tuple(b for b in intent.blocks if b.kind in ("host_off", "quarantine"))
        intent = replace(intent, blocks=kept)
    return intent


def _crosses(plan: NetworkPlan, src: str, dst: str) -> bool:
    """Whether traffic from ``src`` to ``dst`` is forwarded by the router."""
    if ROUTER in (src, dst):
        return False
    return plan.host(src).subnet != plan.host(dst).subnet


def _has_route(plan: NetworkPlan, intent: Intent, node: str, ip: str) -> bool:
    """Whether ``node`` has a route toward ``ip`` in the healthy network."""
    if node == ROUTER:
        return plan.subnet_of_ip(ip) is not None
    host = plan.host(node)
    target = plan.subnet_of_ip(ip)
    if target is not None and target.index == host.subnet:
        return True
    if intent.restricted is not None and intent.restricted.subnet == host.subnet:
        return target is not None and target.index in intent.restricted.peers
    return True


def _source_ip(plan: NetworkPlan, node: str, dst_ip: str) -> str:
    """The address ``node`` sends from toward ``dst_ip`` (the router: its egress side)."""
    if node != ROUTER:
        return plan.host(node).ip
    subnet = plan.subnet_of_ip(dst_ip)
    return subnet.gateway if subnet is not None else plan.router_ip


def reaches(
    plan: NetworkPlan, intent: Intent, src: str, dst: str, via: str | None = None
) -> bool:
    """Whether new traffic from ``src`` reaches ``dst`` in the healthy network.

    Args:
        plan: The addressing plan.
        intent: The owners' requirements.
        src: The sending machine.
        dst: The receiving machine.
        via: The address ``src`` sends to when the router forwards it to ``dst`` (a
            port-forward's public address); ``dst``'s own address by default.
    """
    dst_ip = plan.address(dst)
    src_ip = _source_ip(plan, src, via or dst_ip)
    if not (_has_route(plan, intent, src, via or dst_ip) and _has_route(plan, intent, dst, src_ip)):
        return False
    if any(block.separates(plan, src, dst) for block in intent.blocks):
        return False
    if src != ROUTER and dst != ROUTER:
        src_net, dst_net = plan.host(src).subnet, plan.host(dst).subnet
        if src_net != dst_net and dst_net == intent.management != src_net:
            return False  # the router drops new traffic toward management
    guard = intent.protection(dst)
    if guard is not None:
        source = plan.subnet_of_ip(src_ip)
        return source is not None and source.index in guard.allowed
    return True


def opens_a_path(plan: NetworkPlan, intent: Intent, node: str, address: str) -> bool:
    """Whether a port-forward at ``address`` lets a machine reach ``node`` it cannot reach.

    A restricted subnet's hosts reach their own gateway, and a DNAT there would carry them
    to a host they have no route to: a path the intent closes and no pingable pair uses,
    so a fault cutting only it would have no symptom.
    """
    return any(reaches(plan, intent, src, node, address) and not reaches(plan, intent, src, node)
               for src in plan.nodes if src not in (node, ROUTER))


def intended_pairs(plan: NetworkPlan, intent: Intent) -> frozenset[tuple[str, str]]:
    """Ordered ``(src, dst)`` pairs that answer pings in the healthy network."""
    return frozenset(
        (s, d) for s in plan.nodes for d in plan.nodes if s != d and reaches(plan, intent, s, d)
    )


def _established(intent: Intent, chain: str) -> str:
    if intent.state_module:
        return f"-A {chain} -m state --state RELATED,ESTABLISHED -j ACCEPT"
    return f"-A {chain} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"


def _subnet_flows(plan: NetworkPlan, intent: Intent) -> list[tuple[int, int]]:
    """Ordered subnet pairs a default-deny router accepts.

    All but those the intent keeps apart as subnets (toward management, a pair kept
    apart, a cut subnet). Hosts kept out by their own firewall, hosts out of service and
    restricted subnets are left to their own objects, as on an accepting router.
    """
    cut = intent.cut_subnets
    apart = {frozenset((b.subnet, b.other)) for b in intent.blocks if b.kind == "pair_block"}
    return [
        (a.index, o.index)
        for a in plan.subnets
        for o in plan.subnets
        if a.index != o.index and not {a.index, o.index} & cut
        and frozenset((a.index, o.index)) not in apart
        and not (o.index == intent.management != a.index)
    ]


def _note(comment: str | None) -> str:
    return f' -m comment --comment "{comment}"' if comment else ""


def router_rules(plan: NetworkPlan, intent: Intent) -> str | None:
    """``iptables-restore`` input for the router, or ``None`` when it needs no rules."""
    if intent.management is None and not (intent.forward_deny or intent.input_deny
                                          or intent.stateful):
        return None
    lines = [
        "*filter",
        f":INPUT {'DROP' if intent.input_deny else 'ACCEPT'} [0:0]",
        f":FORWARD {'DROP' if intent.forward_deny else 'ACCEPT'} [0:0]",
        ":OUTPUT ACCEPT [0:0]",
    ]
    if intent.input_deny:
        lines += ["-A INPUT -i lo -j ACCEPT", _established(intent, "INPUT")]
        lines += [
            f"-A INPUT -s {s.network} -j ACCEPT"
            for s in plan.subnets
            if any(reaches(plan, intent, h.name, ROUTER) for h in plan.hosts_in(s.index))
        ]
    lines.append(_established(intent, "FORWARD"))
    if intent.management is not None:
        net = plan.subnet(intent.management).network
        reject = "REJECT --reject-with icmp-admin-prohibited"
        verdict = f"{_note(intent.management_note)} -j " + (
            reject if intent.management_reject else "DROP")
        if intent.management_form == "pairs":
            lines += [f"-A FORWARD -s {s.network} -d {net}{verdict}" for s in plan.subnets
                      if s.index != intent.management]
        elif intent.management_form == "others":
            lines.append(f"-A FORWARD ! -s {net} -d {net}{verdict}")
        else:
            lines.append(f"-A FORWARD -d {net}{verdict}")
    if intent.forward_deny:
        lines += [
            f"-A FORWARD -s {plan.subnet(a).network} -d {plan.subnet(o).network} -j ACCEPT"
            for a, o in _subnet_flows(plan, intent)
        ]
    return "\n".join([*lines, "COMMIT", ""])


def host_rules(plan: NetworkPlan, intent: Intent, guard: Protected) -> str:
    """``iptables-restore`` input for a protected host's firewall."""
    lines = [
        "*filter",
        f":INPUT {'DROP' if guard.policy_drop else 'ACCEPT'} [0:0]",
        ":FORWARD ACCEPT [0:0]",
        ":OUTPUT ACCEPT [0:0]",
        "-A INPUT -i lo -j ACCEPT",
        _established(intent, "INPUT"),
    ]
    lines += [f"-A INPUT -s {plan.subnet(i).network} -j ACCEPT" for i in guard.allowed]
    if not guard.policy_drop or guard.reject:
        lines.append(f"-A INPUT{_note(guard.note)} -j " + ("REJECT" if guard.reject else "DROP"))
    return "\n".join([*lines, "COMMIT", ""])


def host_route_commands(plan: NetworkPlan, intent: Intent, host: str) -> list[list[str]]:
    """Route changes that make ``host`` follow the intent (restricted subnets only)."""
    restricted = intent.restricted
    info = plan.host(host)
    if restricted is None or restricted.subnet != info.subnet:
        return []
    gateway = plan.subnet(info.subnet).gateway
    commands = [["ip", "route", "del", "default"]]
    for peer in restricted.peers:
        net = plan.subnet(peer).network
        commands.append(["ip", "route", "add", net, "via", gateway, "dev", info.intf])
    return commands
