"""The fixed part of every route observation: role, network, task, answer format, examples.

Many purple agents are stateless LLM relays, so every observation carries everything; the
state and history that follow this prompt are laid out by
``netarena.common.reactive.ReactiveEpisode`` (``[turn N] r0 $ ip route`` headers,
``[exit 0]`` trailers) so models and the reference solver can read them back.
"""

from __future__ import annotations

from netarena.common.app import PromptStyle
from netarena.route.actions import ALLOWED_TOOLS
from netarena.route.topology import TopologySpec

__all__ = ["task_prompt"]

_FEWSHOT = """\
## Examples
Example 1. Every host in subnet 2 is unreachable. Check the router's interfaces:
{"machine": "r0", "command": "ip addr show"}
The output shows r0-eth2 with state DOWN. Bring it up:
{"machine": "r0", "command": "ip link set r0-eth2 up"}

Example 2. No traffic crosses subnets, though hosts reach their gateway. Check forwarding:
{"machine": "r0", "command": "sysctl net.ipv4.ip_forward"}
It prints net.ipv4.ip_forward = 0. Enable it:
{"machine": "r0", "command": "sysctl -w net.ipv4.ip_forward=1"}

Example 3. Inspect packet filters and routes the same way:
{"machine": "r0", "command": "iptables-save"}
{"machine": "h3", "command": "ip route"}
"""

_COT = (
    "Think step by step: from the ping matrix, decide which machine and which layer "
    "(link, address, route, filter, forwarding) is most likely wrong, check it, then fix it. "
    "Write your reasoning first and end your reply with the JSON object."
)


def task_prompt(spec: TopologySpec, style: PromptStyle) -> str:
    """The fixed part of every observation: role, network, task, rules, answer format."""
    parts = [
        "You are a network engineer troubleshooting an emulated network, Mininet-style "
        "(hosts and a router are Linux network namespaces; switches are Linux bridges).",
        "## Intended configuration (the healthy target state)\n" + spec.describe(),
        "## Task\nOne or more faults were injected (disabled routing, interfaces down, "
        "missing or wrong IP addresses, traffic filters, wrong routes). Find and fix them "
        "so that every machine can ping every other machine again (0% dropped). You run "
        "one command per turn on one machine; after each command the ping matrix is "
        "measured again and the episode ends when nothing is dropped. Never make "
        "connectivity worse: a command that breaks a working pair counts as unsafe.",
        "## Answer format\nReply with one JSON object, nothing after it:\n"
        '{"machine": "r0", "command": "ip route"}\n'
        f"machine: one of {', '.join(spec.nodes)}.\n"
        f"command: one plain command using {', '.join(ALLOWED_TOOLS)} "
        "(sysctl only for net.* keys). No shell: no pipes, ;, &&, redirections, $(...), "
        "backticks, sudo is not needed; no ip netns / nsenter. Rejected commands still "
        "cost a turn.",
    ]
    if style.startswith("fewshot"):
        parts.append(_FEWSHOT)
    if style.endswith("cot"):
        parts.append(_COT)
    return "\n\n".join(parts)
