"""Complete MALT prompts: role, graph shape, task steps, answer contract, rules, examples.

Purple agents are often stateless LLM relays, so the prompt carries everything. Each task
step is one sentence from a fixed set of phrasings (``describe``), which keeps the wording
unambiguous for models and lets the reference solver read the task from the text alone.
"""

from __future__ import annotations

from typing import Any

from netarena.common.core.app import style_sections

__all__ = ["KIND_WORDS", "SPEED_WORDS", "TIE_WORDS", "TOTAL_WORDS", "describe", "render_prompt"]

KIND_WORDS = {
    "EK_PACKET_SWITCH": "packet switches (EK_PACKET_SWITCH)",
    "EK_PORT": "ports (EK_PORT)",
    "EK_AGG_BLOCK": "agg blocks (EK_AGG_BLOCK)",
}

_ROLE = (
    "You are a network capacity-planning engineer working on a Google MALT model of a "
    "datacenter fabric. You answer by writing Python code that is run against the topology."
)

_SHAPE = """\
The topology is a networkx DiGraph keyed by node name (it has {nodes} nodes and {edges} edges):
- node attributes: 'name' (same as the key), 'type' (a LIST of kinds, e.g. ['EK_PORT'] or
  ['EK_PACKET_SWITCH', 'EK_CHASSIS', 'EK_CONTROL_POINT']), and the model's attribute fields
  flattened: 'physical_capacity_bps' (int, on ports), 'switch_loc' (dict {{'stage': N}}, on
  switches), 'index_within_jupiter' (superblocks), 'jupiter_type' (the fabric).
- edge attribute 'type': 'RK_CONTAINS' (parent -> child) or 'RK_CONTROLS' (a switch's control
  point controlling it: a self-loop on each switch).
- hierarchy by RK_CONTAINS: EK_JUPITER 'ju1' -> EK_SUPERBLOCK 'ju1.aN' -> EK_AGG_BLOCK
  'ju1.aN.mM' -> EK_PACKET_SWITCH 'ju1.aN.mM.sScC' -> EK_PORT '<switch>.pK'; EK_JUPITER ->
  EK_SPINEBLOCK 'ju1.sN' -> EK_PACKET_SWITCH -> EK_PORT. EK_RACK '<block>rack' and
  EK_CONTROL_DOMAIN '<superblock or spine block>.dom' also contain switches.
- "X contains Y" means Y is reachable from X along RK_CONTAINS edges (self-loops excluded);
  "directly contains" means one RK_CONTAINS edge."""

_VARIED = """\
- the fabric grew over years: blocks differ in size and hardware generation, port speeds
  differ (1 Gb/s to 400 Gb/s; uplinks are faster, some ports run down-rated), and switch
  and port numbers have gaps (drained switches, unpopulated ports). Read every value from
  the graph; assume nothing from names."""

_CONTRACT = """\
Answer with Python source code in one ```python block defining

    def process_graph(graph_data):
        ...
        return {{"type": ..., "data": ..., "updated_graph": graph_data}}

where graph_data is the topology above and the returned dict has:
- "type": "text" for a single number, "list" for a list of node names, "table" for a list of
  [name, value] rows, "graph" when the task only modifies the topology;
- "data": the value itself (a number, a list of names, a list of rows; for "graph" anything);
- "updated_graph": the topology after the task (modify graph_data in place and return it).
Rules: steps run in the order given and later steps see the earlier steps' changes; do not
change anything the task does not ask for (a question that only reads must leave the topology
unchanged); node types are lists; names and numbers must match exactly. The code runs in a
sandbox: no files, no network, no subprocesses; only networkx and the standard library's
pure modules (math, collections, itertools, re, json, ...) can be imported; it has {timeout:g} s."""

_EXAMPLES = """\
Worked examples (different tasks on the same topology):

Task: 1. Count the ports (EK_PORT) contained (directly or indirectly) in "{block}".
```python
def process_graph(graph_data):
    def kids(node):
        return [v for v, e in graph_data[node].items() if v != node and e["type"] == "RK_CONTAINS"]
    seen, todo = set(), ["{block}"]
    while todo:
        for v in kids(todo.pop()):
            if v not in seen:
                seen.add(v)
                todo.append(v)
    count = sum(1 for v in seen if "EK_PORT" in graph_data.nodes[v]["type"])
    return {"type": "text", "data": count, "updated_graph": graph_data}
```

Task: 1. Set the physical_capacity_bps of port "{port}" to 40000000000.
```python
def process_graph(graph_data):
    graph_data.nodes["{port}"]["physical_capacity_bps"] = 40000000000
    return {"type": "graph", "data": None, "updated_graph": graph_data}
```
"""

_COT = (
    "Think step by step: first restate which nodes each step selects and what it changes or "
    "computes, then give the final code in one ```python block."
)


def _kind(kind: str) -> str:
    return KIND_WORDS.get(kind, kind)


SPEED_WORDS = {
    "ge": "of at least",
    "gt": "of more than",
    "lt": "below",
    "le": "of at most",
    "eq": "of exactly",
    "range": "from {0} to {1} inclusive",
    "between": "strictly between {0} and {1}",
}
"""How a speed filter reads: ``with physical_capacity_bps <words> <bps>``; a range's words
hold its two bounds."""


TOTAL_WORDS = {"ge": "at least", "gt": "more than", "lt": "below", "le": "at most"}
"""How a filter on a switch's total port capacity reads: ``whose ports total <words> N bps``."""

TIE_WORDS = {"asc": "ascending", "desc": "descending"}
"""How a ranking breaks ties by name: ``ties by name <words>`` (stated where ties matter)."""


def _speed(speed: dict[str, Any] | None) -> str:
    if not speed:
        return ""
    words, bps = SPEED_WORDS[speed["cmp"]], speed["bps"]
    return f" with physical_capacity_bps {words.format(*bps) if '{' in words else f'{words} {bps}'}"


def _where(op: dict[str, Any]) -> str:
    """The filters of a selection: stage and total (switches), then speed (ports)."""
    stage, total = op.get("stage"), op.get("total")
    text = f" at stage {stage}" if stage is not None else ""
    if total:
        text += f" whose ports total {TOTAL_WORDS[total['cmp']]} {total['bps']} bps"
    return text + _speed(op.get("speed"))


def _rank(op: dict[str, Any]) -> str:
    by = (
        "their physical_capacity_bps"
        if op["kind"] == "EK_PORT"
        else f"the total physical_capacity_bps of the ports they contain{_speed(op.get('speed'))}"
    )
    names = f"the first {op['top']} names" if op.get("top") else "names"
    order = "lowest" if op.get("order") == "asc" else "highest"
    ties = f", ties by name {TIE_WORDS[op['ties']]}" if op.get("ties") else ""
    return (
        f'Rank the {_kind(op["kind"])} directly contained in "{op["parent"]}" by {by}, {order} '
        f"first{ties} (a list of {names})."
    )


_THAN = {"gt": "greater than", "lt": "less than"}
_DEPTH = {"direct": "directly contained", "all": "contained (directly or indirectly)"}


def describe(op: dict[str, Any]) -> str:
    """One task sentence for an operation (``{X}`` placeholders render as ``X``)."""
    kind = op["op"]
    text = {
        "add_switch": lambda: (
            f'Add a new packet switch "{op["name"]}" to "{op["parent"]}": type '
            f'["EK_PACKET_SWITCH"], switch_loc {{"stage": {op["stage"]}}}, {op["ports"]} ports '
            f'"{op["name"]}.p1" to "{op["name"]}.p{op["ports"]}" each of type ["EK_PORT"] with '
            f"physical_capacity_bps {op['capacity_bps']}, linked by RK_CONTAINS edges from "
            f'"{op["parent"]}" to the switch and from the switch to each port.'
        ),
        "add_port": lambda: (
            f'Add a new port "{op["name"]}" of type ["EK_PORT"] with physical_capacity_bps '
            f'{op["capacity_bps"]} to switch "{op["switch"]}", linked by an RK_CONTAINS edge '
            "from the switch."
        ),
        "remove": lambda: f'Remove "{op["node"]}" and every node it contains.',
        "update": lambda: (
            f'Set the physical_capacity_bps of port "{op["port"]}" to {op["capacity_bps"]}.'
        ),
        "list": lambda: (
            f"List the {_kind(op['kind'])}{_where(op)} {_DEPTH[op.get('depth', 'direct')]} in "
            f'"{op["parent"]}" (any order).'
        ),
        "rank": lambda: _rank(op),
        "count": lambda: (
            f"Count the {_kind(op['kind'])}{_where(op)} {_DEPTH[op.get('depth', 'all')]} "
            f'in "{op["node"]}".'
        ),
        "capacity": lambda: (
            f"Compute the total physical_capacity_bps of the ports{_where(op)} "
            f'{_DEPTH[op.get("depth", "all")]} in "{op["node"]}".'
        ),
        "capacity_table": lambda: (
            f"Make a table with one row [name, total physical_capacity_bps of the ports it "
            f'contains] for each of the {_kind(op["kind"])} directly contained in "{op["parent"]}".'
        ),
    }
    if kind in text:
        return text[kind]().replace("{X}", "X")
    if kind == "for_each":
        return (
            f"For each of the {_kind(op['kind'])}{_where(op)} {_DEPTH[op.get('depth', 'direct')]} "
            f'in "{op["parent"]}" (selected before any change), in name order, call it X and '
            f"do: {describe(op['do'])}"
        )
    if kind == "if":
        measure = describe(op["measure"]).rstrip(".")
        then = " ".join(f"({chr(97 + i)}) {describe(o)}" for i, o in enumerate(op["then"]))
        other = " ".join(f"({chr(97 + i)}) {describe(o)}" for i, o in enumerate(op["otherwise"]))
        return (
            f"{measure}; if the result is {_THAN[op.get('cmp', 'gt')]} {op['threshold']}, then: "
            f"{then} "
            f"Otherwise: {other}"
        )
    raise ValueError(f"no phrasing for operation {kind!r}")


def render_prompt(ops: list[dict[str, Any]], style: str, stats: dict[str, Any]) -> str:
    """The complete prompt for a task.

    Args:
        ops: The task's operations, in order.
        style: ``zeroshot_base``, ``fewshot_base``, ``zeroshot_cot`` or ``fewshot_cot``.
        stats: ``nodes``, ``edges`` and ``timeout`` shown in the prompt, ``varied`` (the
            fabric is heterogeneous), and the ``block`` and ``port`` the examples use.
    """
    steps = "\n".join(f"{i}. {describe(op)}" for i, op in enumerate(ops, 1))
    shape = _SHAPE.format(**stats) + ("\n" + _VARIED if stats.get("varied") else "")
    parts = [_ROLE, shape, "Task:\n" + steps, _CONTRACT.format(**stats)]
    examples = _EXAMPLES.replace("{block}", stats["block"]).replace("{port}", stats["port"])
    parts += style_sections(style, examples, _COT, "Reply with the code only.")
    return "\n\n".join(parts)
