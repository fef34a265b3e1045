"""The MALT reference agent: reads the task from the prompt text and writes a real program.

It never sees ``Query.truth`` (it is also served as a remote purple agent that receives only
text). It parses each task step back into an operation with the phrasings of ``prompts.py``
and emits a self-contained ``process_graph`` that performs it with networkx; that program runs
through the same sandbox as any agent's code, so solving every query proves every query is
solvable under the real contract. ``ProgramWriter`` emits one operation at a time through
small methods, so the calibration baselines (``baselines.py``) are the same writer with one
deliberate mistake each.
"""

from __future__ import annotations

import re
from typing import Any

from netarena.common.core.agents import Observation
from netarena.common.core.errors import AgentError

__all__ = ["MaltReferenceAgent", "ProgramWriter", "parse_steps", "write_program"]

_Q = r'"([^"]+)"'
_KIND = r".*?\((EK_\w+)\)"
_PORTS = (
    r"(?: with physical_capacity_bps (?:(of at least|of more than|below|of at most|of exactly) "
    r"(\d+)|from (\d+) to (\d+) inclusive|strictly between (\d+) and (\d+)))?"
)
_SPEEDS = ("cmp", "bps", "range_lo", "range_hi", "between_lo", "between_hi")
_SPEED = (
    r"(?: at stage (\d+))?(?: whose ports total (at least|more than|below|at most) (\d+) bps)?"
    + _PORTS
)
_WHERE = ("stage", "tcmp", "tbps", *_SPEEDS)
_DEPTH = r"(directly contained|contained \(directly or indirectly\))"
_CMP = {
    "of at least": "ge",
    "of more than": "gt",
    "below": "lt",
    "of at most": "le",
    "of exactly": "eq",
    "at least": "ge",
    "more than": "gt",
    "at most": "le",
}
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
    (
        "list",
        re.compile(rf"^List the{_KIND}{_SPEED} {_DEPTH} in {_Q}"),
        ("kind", *_WHERE, "depth", "parent"),
    ),
    (
        "rank",
        re.compile(
            rf"^Rank the{_KIND} directly contained in {_Q} by (?:their physical_capacity_bps|the "
            rf"total physical_capacity_bps of the ports they contain{_PORTS}), (highest|lowest) "
            r"first(?:, ties by name (ascending|descending))? \(a list of (?:the first (\d+) )?"
            r"names\)"
        ),
        ("kind", "parent", *_SPEEDS, "order", "ties", "top"),
    ),
    (
        "count",
        re.compile(rf"^Count the{_KIND}{_SPEED} {_DEPTH} in {_Q}"),
        ("kind", *_WHERE, "depth", "node"),
    ),
    (
        "capacity",
        re.compile(
            rf"^Compute the total physical_capacity_bps of the ports{_PORTS} {_DEPTH} in {_Q}"
        ),
        (*_SPEEDS, "depth", "node"),
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
    rf"^For each of the{_KIND}{_SPEED} {_DEPTH} in {_Q} \(selected before any change\), in "
    r"name order, call it X and do: (.*)$"
)
_BRANCH = re.compile(
    r"^(.*); if the result is (greater|less) than (-?\d+), then: (\(a\) .*?) Otherwise: (\(a\) .*)$"
)
_INTS = {"stage", "ports", "capacity_bps", "top", "bps", "tbps", *_SPEEDS[2:]}
_WORDS = {
    "directly contained": "direct",
    "highest": "desc",
    "lowest": "asc",
    "ascending": "asc",
    "descending": "desc",
}


def _loop_item(text: str) -> str:
    """``X`` and ``X.<suffix>`` (the loop item in a loop body) as ``{X}`` placeholders."""
    return "{X}" + text[1:] if text == "X" or text.startswith("X.") else text


def _fields(names: tuple[str, ...], values: tuple[str | None, ...]) -> dict[str, Any]:
    """Named regex groups as operation fields; ``cmp``/``bps`` become a ``speed`` filter."""
    found: dict[str, Any] = {
        f: int(v) if f in _INTS else _loop_item(_WORDS.get(v, v))
        for f, v in zip(names, values, strict=True)
        if v is not None
    }
    if "depth" in found and found["depth"] != "direct":
        found["depth"] = "all"
    if found.get("order") == "desc":  # the default: highest first
        del found["order"]
    if "cmp" in found:
        found["speed"] = {"cmp": _CMP[found.pop("cmp")], "bps": found.pop("bps")}
    for cmp in ("range", "between"):
        if f"{cmp}_lo" in found:
            found["speed"] = {"cmp": cmp, "bps": [found.pop(f"{cmp}_lo"), found.pop(f"{cmp}_hi")]}
    if "tcmp" in found:
        found["total"] = {"cmp": _CMP[found.pop("tcmp")], "bps": found.pop("tbps")}
    return found


def _branch(text: str) -> list[dict[str, Any]]:
    return [_parse(part) for part in re.split(r"\([a-z]\) ", text) if part.strip()]


def _parse(sentence: str) -> dict[str, Any]:
    sentence = sentence.strip()
    if m := _LOOP.match(sentence):
        names = ("kind", *_WHERE, "depth", "parent")
        loop = _fields(names, m.groups()[: len(names)])
        return {"op": "for_each", **loop, "do": _parse(m[len(names) + 1])}
    if m := _BRANCH.match(sentence):
        return {
            "op": "if",
            "measure": _parse(m[1]),
            **({"cmp": "lt"} if m[2] == "less" else {}),
            "threshold": int(m[3]),
            "then": _branch(m[4]),
            "otherwise": _branch(m[5]),
        }
    for op, pattern, fields in _SIMPLE:
        if m := pattern.match(sentence):
            found = _fields(fields, m.groups())
            default = "direct" if op == "list" else "all"
            if found.get("depth") == default:
                del found["depth"]
            return {"op": op, **found}
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
        return sorted(v for v, e in G[node].items() if v != node and e.get("type") ==
                      "RK_CONTAINS" and (kind is None or kind in G.nodes[v]["type"]))

    def subtree(node):
        seen, todo = {node}, [node]
        while todo:
            for v, e in G[todo.pop()].items():
                if e.get("type") == "RK_CONTAINS" and v not in seen:
                    seen.add(v)
                    todo.append(v)
        seen.discard(node)
        return sorted(seen)

    def under(node, kind=None):
        return [v for v in subtree(node) if kind is None or kind in G.nodes[v]["type"]]

    def test(value, cmp, bps):
        if cmp in ("range", "between", "range_half"):
            lo, hi = bps
            return lo < value < hi or (value == lo and cmp != "between") or (
                value == hi and cmp == "range")
        return {"ge": value >= bps, "gt": value > bps, "lt": value < bps, "le": value <= bps,
                "eq": value == bps}[cmp]

    def keep(nodes, cmp=None, bps=0, stage=None, total=None):
        out = []
        for v in nodes:
            a = G.nodes[v]
            if "EK_PORT" in a["type"] and cmp and not test(a["physical_capacity_bps"], cmp, bps):
                continue
            if "EK_PACKET_SWITCH" in a["type"]:
                if stage is not None and (a.get("switch_loc") or {}).get("stage") != stage:
                    continue
                if total and not test(capacity(v), *total):
                    continue
            out.append(v)
        return out

    def capacity(node, cmp=None, bps=0, direct=False):
        ports = kids(node, "EK_PORT") if direct else under(node, "EK_PORT")
        ports += [node] if "EK_PORT" in G.nodes[node]["type"] else []
        return sum(G.nodes[p].get("physical_capacity_bps", 0) for p in keep(ports, cmp, bps))

    def add_port(switch, port, bps):
        G.add_node(port, name=port, type=["EK_PORT"], physical_capacity_bps=bps)
        G.add_edge(switch, port, type="RK_CONTAINS")

    result = {"type": "graph", "data": None}
"""


def _name(text: str) -> str:
    """Source for a node name; inside loops ``{X}`` and ``{X}.<suffix>`` are the loop item."""
    if text == "{X}":
        return "X"
    if text.startswith("{X}."):
        return f"X + {text[3:]!r}"
    return repr(text)


def _filter(op: dict[str, Any]) -> str:
    """Extra ``keep``/``capacity`` arguments for the operation's filters."""
    speed, stage, total = op.get("speed"), op.get("stage"), op.get("total")
    args = f", {speed['cmp']!r}, {speed['bps']}" if speed else ""
    args += f", stage={stage}" if stage is not None else ""
    return args + (f", total=({total['cmp']!r}, {total['bps']})" if total else "")


class ProgramWriter:
    """Writes the ``process_graph`` program for parsed operations, one method per kind.

    The reference writer is exact; calibration baselines override one method to make one
    characteristic mistake (rank by name, count only direct children, ...).
    """

    prelude = _PRELUDE

    def program(self, ops: list[dict[str, Any]]) -> str:
        """A self-contained ``process_graph`` program performing ``ops`` in order."""
        body = [line for op in ops for line in self.emit(op, "    ")]
        return self.prelude + "\n".join(body) + self.epilogue()

    def epilogue(self) -> str:
        """The program's last lines: return the result with the graph."""
        return '\n    result["updated_graph"] = G\n    return result\n'

    def emit(self, op: dict[str, Any], pad: str) -> list[str]:
        """The lines performing ``op``, indented by ``pad``."""
        kind = op["op"]
        if kind == "for_each":
            items = self.items(op)
            return [f"{pad}for X in {items}:", *self.emit(op["do"], pad + "    ")]
        if kind == "if":
            return [
                f"{pad}if {self.measure(op['measure'])} {'<' if op.get('cmp') == 'lt' else '>'} "
                f"{op['threshold']}:",
                *[line for o in op["then"] for line in self.emit(o, pad + "    ")],
                f"{pad}else:",
                *[line for o in op["otherwise"] for line in self.emit(o, pad + "    ")],
            ]
        if kind == "add_switch":
            return [pad + line for line in self.add_switch(op)]
        if kind in ("add_port", "remove", "update"):
            return [pad + getattr(self, kind)(op)]
        return [pad + f"result = {{'type': {self.answer_type(op)!r}, 'data': {self.read(op)}}}"]

    # -- changes -------------------------------------------------------------------------
    def add_switch(self, op: dict[str, Any]) -> list[str]:
        """Lines adding a switch and its ports."""
        return [
            f"sw = {_name(op['name'])}",
            f"G.add_node(sw, name=sw, type=['EK_PACKET_SWITCH'], "
            f"switch_loc={{'stage': {op['stage']}}})",
            f"G.add_edge({_name(op['parent'])}, sw, type='RK_CONTAINS')",
            f"for i in range(1, {op['ports']} + 1):",
            f"    add_port(sw, sw + '.p' + str(i), {op['capacity_bps']})",
        ]

    def add_port(self, op: dict[str, Any]) -> str:
        """A line adding a port."""
        return f"add_port({_name(op['switch'])}, {_name(op['name'])}, {op['capacity_bps']})"

    def remove(self, op: dict[str, Any]) -> str:
        """A line removing a node and everything it contains."""
        node = _name(op["node"])
        return f"G.remove_nodes_from([{node}] + subtree({node}))"

    def update(self, op: dict[str, Any]) -> str:
        """A line setting a port's capacity."""
        return f"G.nodes[{_name(op['port'])}]['physical_capacity_bps'] = {op['capacity_bps']}"

    # -- reads ---------------------------------------------------------------------------
    def items(self, loop: dict[str, Any]) -> str:
        """The expression of the nodes a ``for_each`` visits (selected once, up front)."""
        parent, kind = _name(loop["parent"]), loop["kind"]
        found = (
            f"kids({parent}, {kind!r})"
            if loop["depth"] == "direct"
            else (f"under({parent}, {kind!r})")
        )
        return f"keep({found}{_filter(loop)})"

    def answer_type(self, op: dict[str, Any]) -> str:
        """The ``type`` a reading operation's answer has."""
        return {"list": "list", "rank": "list", "capacity_table": "table"}.get(op["op"], "text")

    def measure(self, op: dict[str, Any]) -> str:
        """The expression of a count or a capacity."""
        node, direct = _name(op["node"]), op.get("depth") == "direct"
        if op["op"] == "capacity":
            return f"capacity({node}{_filter(op)}{', direct=True' if direct else ''})"
        found = "kids" if direct else "under"
        return f"len(keep({found}({node}, {op['kind']!r}){_filter(op)}))"

    def kids(self, op: dict[str, Any]) -> str:
        """The expression of the nodes of ``op["kind"]`` directly in ``op["parent"]``."""
        return f"kids({_name(op['parent'])}, {op['kind']!r})"

    def ranked(self, op: dict[str, Any]) -> str:
        """A ranking by capacity (highest or lowest first), ties in name order or its reverse."""
        sign = "" if op.get("order") == "asc" else "-"
        if op.get("ties") == "desc":  # a stable sort of the names in reverse
            return f"sorted({self.kids(op)}[::-1], key=lambda k: {sign}capacity(k{_filter(op)}))"
        return f"sorted({self.kids(op)}, key=lambda k: ({sign}capacity(k{_filter(op)}), k))"

    def read(self, op: dict[str, Any]) -> str:
        """The expression of a reading operation's answer."""
        kind, parent = op["op"], _name(op.get("parent") or op.get("node") or "")
        if kind == "list":
            found = "kids" if op.get("depth", "direct") == "direct" else "under"
            return f"keep({found}({parent}, {op['kind']!r}){_filter(op)})"
        if kind == "rank":
            top = op.get("top")
            return self.ranked(op) + (f"[:{top}]" if top else "")
        if kind == "capacity_table":
            return f"[[k, capacity(k)] for k in kids({parent}, {op['kind']!r})]"
        return self.measure(op)


REFERENCE_WRITER = ProgramWriter()


def write_program(ops: list[dict[str, Any]]) -> str:
    """The reference program performing ``ops`` in order."""
    return REFERENCE_WRITER.program(ops)


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
