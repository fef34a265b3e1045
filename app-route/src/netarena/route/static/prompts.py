"""The fixed part of every route observation: role, network, intent, task, answer format.

The agent learns the network as an on-call operator knows it: the inventory (subnets,
gateways, host addresses), what the owners require (who must reach whom, what must stay
isolated) and the expected ping matrix; never the firewall rules or routes that enforce
it. Many purple agents are stateless LLM relays, so every observation carries everything;
the state and history that follow are laid out by ``ReactiveEpisode``.
"""

from __future__ import annotations

from netarena.common.core.app import PromptStyle, style_sections
from netarena.common.core.reactive import SAFETY_RULES
from netarena.route.base.config import COMMAND_LIMITS_NOTE
from netarena.route.emulator.intent import Block, Intent
from netarena.route.emulator.plan import ROUTER, NetworkPlan
from netarena.route.emulator.undisclosed import DEFAULT_PORTS
from netarena.route.judge.pingall import PingMatrix

__all__ = ["task_prompt", "describe_network", "describe_intent"]

_FEWSHOT = """\
## Examples
Example 1. Every host of s2 has lost contact with the other subnets. Look at the router:
{"machine": "r0", "command": "ip -br addr; ip route"}
The output shows r0-eth2 DOWN. Bring it up:
{"machine": "r0", "command": "ip link set r0-eth2 up"}

Example 2. No traffic crosses subnets, though hosts reach their gateway. Check forwarding:
{"machine": "r0", "command": "cat /proc/sys/net/ipv4/ip_forward"}
It prints 0. Enable it:
{"machine": "r0", "command": "echo 1 > /proc/sys/net/ipv4/ip_forward"}

Example 3. Look at filters and routes before changing them, and keep what the intent needs:
{"machine": "r0", "command": "iptables -S; iptables -t nat -S"}
{"machine": "h3", "command": "ip route | grep default || echo no default route"}
"""

_COT = (
    "Think step by step: compare the ping matrix with the expected one, decide which "
    "machine and which layer (link, address, route, filter, forwarding) is most likely "
    "wrong, check it, then fix it without touching what the intent requires. Write your "
    "reasoning first and end your reply with the JSON object."
)


def describe_network(plan: NetworkPlan) -> str:
    """The inventory: router, subnets with gateways, hosts with interfaces and addresses."""
    lines = [
        f"Router {ROUTER} (IP forwarding on) connects {len(plan.subnets)} switches, "
        "one subnet each:"
    ]
    for s in plan.subnets:
        hosts = ", ".join(f"{h.name} {h.ip} ({h.intf})" for h in plan.hosts_in(s.index))
        lines.append(
            f"- {s.switch}: {s.network}, gateway {s.gateway} on {s.router_intf}; hosts {hosts}"
        )
    lines.append(
        "Hosts use their subnet's gateway for every other subnet. "
        f"Mininet's pingall pings {ROUTER} at {plan.router_ip} ({plan.subnets[0].router_intf})."
    )
    return "\n".join(lines)


def _subnet(plan: NetworkPlan, index: int) -> str:
    s = plan.subnet(index)
    return f"{s.switch} ({s.network})"


def describe_intent(plan: NetworkPlan, intent: Intent) -> list[str]:
    """The owners' requirements, one sentence each, as an operator would write them."""
    lines = ["Every machine can ping every other machine, except:"]
    if intent.management is not None:
        lines.append(
            f"- {_subnet(plan, intent.management)} is the management network: machines "
            "in other subnets must not reach its hosts; its hosts reach everything "
            "(replies to them pass)."
        )
    for guard in intent.protected:
        host = plan.host(guard.host)
        others = [_subnet(plan, i) for i in guard.allowed if i != host.subnet]
        whence = f"its own subnet {plan.subnet(host.subnet).switch}"
        if others:
            whence += " and " + ", ".join(others)
        lines.append(
            f"- {guard.host} is the {guard.role}: it accepts new traffic only from "
            f"{whence}; replies to its own connections pass."
        )
    if intent.restricted is not None:
        r = intent.restricted
        peers = ", ".join(_subnet(plan, p) for p in r.peers)
        lines.append(
            f"- {_subnet(plan, r.subnet)} is the {r.role}, routed only to {peers}: its "
            "hosts have no default route, so only those subnets (and their own) exchange "
            "traffic with them."
        )
    lines += [_block(plan, block) for block in intent.blocks]
    return lines


def _block(plan: NetworkPlan, block: Block) -> str:
    """One block of the intent in an operator's words."""
    if block.kind == "host_off":
        return (f"- {block.host} ({block.role}) is out of service: nothing may reach it and "
                "it reaches nothing; leave it so.")
    if block.kind == "subnet_cut":
        where = "only each other" if block.router else "only each other and the router"
        return (f"- {_subnet(plan, block.subnet)} is the {block.role}, cut off: its hosts "
                f"reach {where}, and nothing else reaches them.")
    if block.kind == "pair_block" and block.other is not None:
        return (f"- {_subnet(plan, block.subnet)} and {_subnet(plan, block.other)} must never "
                "exchange traffic, in either direction.")
    switch = plan.subnet(block.subnet).switch
    return (f"- {block.network} (part of {switch}) is quarantined: no machine uses it and "
            "nothing may reach it.")


def task_prompt(
    plan: NetworkPlan,
    intent: Intent,
    expected: PingMatrix,
    style: PromptStyle,
    command_timeout_s: float = 5.0,
    ports: tuple[int, int] = DEFAULT_PORTS,
) -> str:
    """The fixed part of every observation (``ports``: the TCP and UDP service ports)."""
    machines = ", ".join(plan.nodes)
    parts = [
        "You are the on-call network engineer for a Mininet network: a Linux router and "
        "hosts, each a network namespace, joined by Linux-bridge switches. Users report "
        "connectivity problems.",
        "## Network (from the inventory)\n" + describe_network(plan),
        "## Intent (what the network's owners require)\n"
        + "\n".join(describe_intent(plan, intent))
        + "\nExpected ping matrix when healthy (Mininet's pingall; X = must not answer):\n"
        + expected.text()
        + f"\nEvery machine runs a TCP service on port {ports[0]} and a UDP service on port "
        f"{ports[1]}; the same matrix holds for them: a pair that answers pings must also "
        "reach the other's TCP and UDP service, and an X pair must reach neither. The judge "
        "also probes TCP and UDP ports it does not announce: a pair that answers must reach "
        "those too (repair paths, not ports).",
        "## Task\nOne or more faults were injected (disabled routing, interfaces down, "
        "missing or wrong addresses, traffic filters, wrong routes). Restore the intended "
        "connectivity: every pair of the expected matrix that answers must answer again, "
        "and every X must stay X, for ICMP, TCP and UDP alike. The firewall rules and "
        "routes that enforce the intent are legitimate: keep them (a blind reset breaks "
        "the intent). Other configuration is in use on these machines and is not "
        "described here (services, NAT, extra routes and addresses, policy routing, "
        "queueing, kernel settings...): change only what is broken and leave everything "
        "else exactly as it is; damage to it counts against you.",
        "## How you work\nEach turn you run one shell command on one machine, as "
        "`bash -c` in that machine's shell (like `mininet> h1 <command>`): pipes, `&&`, "
        "redirections and `echo 1 > /proc/sys/net/...` work; ip, ifconfig, route, arp, "
        "iptables, iptables-save, sysctl, tc, ping, traceroute, ethtool, ss, bridge and "
        "the usual shell tools are installed, and machine names resolve (`ping h2`). You "
        "have network-administrator rights (sudo is accepted, not needed). "
        + COMMAND_LIMITS_NOTE.format(timeout=command_timeout_s)
        + ". After each command the ping matrix is "
        "measured again; the episode ends when it matches the expected matrix.",
        SAFETY_RULES,
        "## Answer format\nReply with one JSON object, nothing after it:\n"
        '{"machine": "r0", "command": "ip route"}\n'
        f"machine: one of {machines}. command: one shell command line.",
    ]
    return "\n\n".join(parts + style_sections(style, _FEWSHOT, _COT))
