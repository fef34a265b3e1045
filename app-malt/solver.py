"""The MALT reference agent: reads the task from the prompt text and writes a real program.

It never sees ``Query.truth`` (it is also served as a remote purple agent that receives only
text). It parses each task step back into an operation with the phrasings of ``prompts.py``
and emits a self-contained ``process_graph`` that performs it with networkx; that program runs
through the same sandbox as any agent's code, so solving every query proves every query is
solvable under the real contract.
"""

from __future__ import annotations

import re
from typing import Any

from netarena.common.agents import Observation
from netarena.common.errors import AgentError

__all__ = ["MaltReferenceAgent", "parse_steps", "write_program"]

_Q = r'"([^"]+)"'
_KIND = r".*?\((EK_\w+)\)"
_SIMPLE: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    (
        "add_switch",
        re.compile(
            rf"^Add a new packet switch {_Q} to {_Q}: type \[\"EK_PACKET_SWITCH\"\], switch_loc "
            r"\{\"stage\": (\d+)\}, (\d+) ports .*? with physical_capacity_bps (\d+)"
        ),
        ("name", "parent", "stage", "ports", "capacity_bps"),
    ),
    (
        "add_port",
        re.compile(
            rf"^Add a new port {_Q} of type \[\"EK_PORT\"\] with physical_capacity_bps (\d+) "
            rf"to switch {_Q}"
        ),
        ("name", "capacity_bps", "switch"),
    ),
    ("remove", re.compile(rf"^Remove {_Q} and every node it contains"), ("node",)),
    (
        "update",
        re.compile(rf"^Set the physical_capacity_bps of port {_Q} to (\d+)"),
        ("port", "capacity_bps"),
    ),
    ("list", re.compile(rf"^List the{_KIND} directly contained in {_Q}"), ("kind", "parent")),
    ("rank", re.compile(rf"^Rank the{_KIND} directly contained in {_Q}"), ("kind", "parent")),
    (
        "count",
        re.compile(rf"^Count the{_KIND} contained \(directly or indirectly\) in {_Q}"),
        ("kind", "node"),
    ),
    (
        "capacity",
        re.compile(
            r"^Compute the total physical_capacity_bps of the ports contained "
            rf"\(directly or indirectly\) in {_Q}"
        ),
        ("node",),
    ),
    (
        "capacity_table",
        re.compile(
            rf"^Make a table with one row .*? for each of the{_KIND} directly contained in {_Q}"
        ),
        ("kind", "parent"),
    ),
]
_LOOP = re.compile(
    rf"^For each of the{_KIND} directly contained in {_Q}, in name order, call it X and do: (.*)$"
)
_BRANCH = re.compile(r"^(.*); if the result is greater than (-?\d+), then: (.*?) Otherwise: (.*)$")
_INTS = {"stage", "ports", "capacity_bps"}


def _parse(sentence: str) -> dict[str, Any]:
    sentence = sentence.strip()
    if m := _LOOP.match(sentence):
        return {"op": "for_each", "kind": m[1], "parent": m[2], "do": _parse(m[3])}
    if m := _BRANCH.match(sentence):
        return {
            "op": "if",
            "measure": _parse(m[1]),
            "threshold": int(m[2]),
            "then": _parse(m[3]),
            "otherwise": _parse(m[4]),
        }
    for op, pattern, fields in _SIMPLE:
        if m := pattern.match(sentence):
            return {
                "op": op,
                **{f: int(v) if f in _INTS else v for f, v in zip(fields, m.groups(), strict=True)},
            }
    raise AgentError(f"malt reference: cannot read the task step {sentence[:120]!r}")


def parse_steps(prompt: str) -> list[dict[str, Any]]:
    """The operations of the numbered steps under ``Task:`` in a MALT prompt.

    Raises:
        AgentError: The prompt has no task or a step uses an unknown phrasing.
    """
    section = prompt.split("\nTask:\n", 1)
    if len(section) != 2:
        raise AgentError("malt reference: the prompt has no 'Task:' section")
    steps = re.findall(r"^\d+\. (.*)$", section[1].split("\n\n", 1)[0], flags=re.MULTILINE)
    if not steps:
        raise AgentError("malt reference: the task has no numbered steps")
    return [_parse(step) for step in steps]


_PRELUDE = """\
def process_graph(graph_data):
    G = graph_data

    def kids(node, kind):
        return sorted(v for v, e in G[node].items() if v != node
                      and e.get("type") == "RK_CONTAINS" and kind in G.nodes[v]["type"])

    def under(node, kind=None):
        seen, todo = {node}, [node]
        while todo:
            for v, e in G[todo.pop()].items():
                if e.get("type") == "RK_CONTAINS" and v not in seen:
                    seen.add(v)
                    todo.append(v)
        seen.discard(node)
        return sorted(v for v in seen if kind is None or kind in G.nodes[v]["type"])

    def capacity(node):
        return sum(G.nodes[p].get("physical_capacity_bps", 0) for p in under(node, "EK_PORT"))

    def add_port(switch, port, bps):
        G.add_node(port, name=port, type=["EK_PORT"], physical_capacity_bps=bps)
        G.add_edge(switch, port, type="RK_CONTAINS")

    result = {"type": "graph", "data": None}
"""


def _name(text: str) -> str:
    """Source for a node name; inside loops ``X`` and ``X.<suffix>`` refer to the loop item."""
    if text == "X":
        return "X"
    if text.startswith("X."):
        return f"X + {text[1:]!r}"
    return repr(text)


def _measure(op: dict[str, Any]) -> str:
    if op["op"] == "capacity":
        return f"capacity({_name(op['node'])})"
    return f"len(under({_name(op['node'])}, {op['kind']!r}))"


def _emit(op: dict[str, Any], pad: str) -> list[str]:
    kind = op["op"]
    n = _name
    if kind == "add_switch":
        return [
            f"{pad}sw = {n(op['name'])}",
            f"{pad}G.add_node(sw, name=sw, type=['EK_PACKET_SWITCH'], "
            f"switch_loc={{'stage': {op['stage']}}})",
            f"{pad}G.add_edge({n(op['parent'])}, sw, type='RK_CONTAINS')",
            f"{pad}for i in range(1, {op['ports']} + 1):",
            f"{pad}    add_port(sw, sw + '.p' + str(i), {op['capacity_bps']})",
        ]
    simple = {
        "add_port": lambda: f"add_port({n(op['switch'])}, {n(op['name'])}, {op['capacity_bps']})",
        "remove": lambda: f"G.remove_nodes_from([{n(op['node'])}] + under({n(op['node'])}))",
        "update": lambda: (
            f"G.nodes[{n(op['port'])}]['physical_capacity_bps'] = {op['capacity_bps']}"
        ),
        "list": lambda: (
            f"result = {{'type': 'list', 'data': kids({n(op['parent'])}, {op['kind']!r})}}"
        ),
        "rank": lambda: (
            f"result = {{'type': 'list', 'data': sorted(kids({n(op['parent'])}, {op['kind']!r}), "
            "key=lambda k: (-capacity(k), k))}"
        ),
        "count": lambda: f"result = {{'type': 'text', 'data': {_measure(op)}}}",
        "capacity": lambda: f"result = {{'type': 'text', 'data': {_measure(op)}}}",
        "capacity_table": lambda: (
            f"result = {{'type': 'table', 'data': [[k, capacity(k)] for k in "
            f"kids({n(op['parent'])}, {op['kind']!r})]}}"
        ),
    }
    if kind in simple:
        return [pad + simple[kind]()]
    if kind == "for_each":
        return [
            f"{pad}for X in kids({n(op['parent'])}, {op['kind']!r}):",
            *_emit(op["do"], pad + "    "),
        ]
    return [
        f"{pad}if {_measure(op['measure'])} > {op['threshold']}:",
        *_emit(op["then"], pad + "    "),
        f"{pad}else:",
        *_emit(op["otherwise"], pad + "    "),
    ]


def write_program(ops: list[dict[str, Any]]) -> str:
    """A self-contained ``process_graph`` program performing ``ops`` in order."""
    body = [line for op in ops for line in _emit(op, "    ")]
    return _PRELUDE + "\n".join(body) + '\n    result["updated_graph"] = G\n    return result\n'


class MaltReferenceAgent:
    """Answers every MALT prompt with a correct program, from the prompt text alone."""

    name = "malt-reference"

    async def act(self, observation: Observation) -> str:
        """Parse the task steps and reply with the program in a fenced block.

        Raises:
            AgentError: The text is not a MALT prompt this solver can read.
        """
        program = write_program(parse_steps(observation.text))
        return f"```python\n{program}```"
