"""Level-3 control flow: for-loops over a selected set and if-else on a measured condition.

Loops are maintenance campaigns (upgrade every port of one speed in a place, add a port to
every switch of a place, decommission every port below a speed without leaving a switch
portless). An if-else measures a capacity or a count, compares it (greater or less than)
with a threshold drawn near the measured value (so both branches occur) and, when the
measure states qualifiers or bounds, between its value and what a reader blind to each
qualifier, or misreading each bound, would measure; each branch makes its own change and
both ask the same question, so the answer and the resulting topology depend on the branch
taken and both branches state the same qualifiers. The threshold is never the measured
value, so "greater than" and "at least" (and "less than" and "at most") take the same
branch: strictness there is not a bound (``bounds.py`` says why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netarena.malt import bounds, qualifiers
from netarena.malt.operations import children, contained, measure_value
from netarena.malt.sampler import PORT, SW

if TYPE_CHECKING:
    from netarena.malt.tasks import TaskSampler

__all__ = ["control_flow"]

Op = dict[str, Any]
_TRIES = 50
_MEASURE_CMPS = ("lt", "gt", "eq", "between")
"""Speed filters a measure may state: dropping the filter and misreading its bound both
measure more, so one threshold separates the true value from every misreading's."""


def _place(s: TaskSampler, switch_chance: float) -> str:
    """A place for a loop: a switch, or a block, its rack, control domain or superblock."""
    p = s.p
    if p.chance(switch_chance):
        return p.switch()
    return p.near(p.block())


def _depth(s: TaskSampler, place: str, kind: str) -> str:
    """``direct`` when ``place`` holds items of ``kind`` directly, else ``all``."""
    return "direct" if children(s.g, place, kind) else "all"


def _loop_update(s: TaskSampler) -> Op:
    """Upgrade (or downgrade) every port of one speed in a place."""
    p = s.p
    for _ in range(_TRIES):  # "exactly" must be neither the slowest nor the fastest speed
        place = _place(s, 0.5)
        if len(p.speeds(place)) > 2:
            break
    old = p.pick(p.speeds(place)[1:-1] or p.speeds(place))
    return {
        "op": "for_each",
        "parent": place,
        "kind": PORT,
        "depth": _depth(s, place, PORT),
        "speed": {"cmp": "eq", "bps": old},
        "do": {"op": "update", "port": "{X}", "capacity_bps": p.new_speed(old)},
    }


def _loop_add(s: TaskSampler) -> Op:
    """Add one port to every switch of a place (of one stage, above or below a capacity)."""
    p = s.p
    block = p.block()
    up = p.upper(block)  # a superblock-wide campaign often: its switches are one level down
    place = up if up in p.ix.superblocks and p.chance(0.25) else p.near(block)
    switches = contained(s.g, place, SW)
    top = max(int(p.new_port_name(sw).rsplit(".p", 1)[1]) for sw in switches)
    do = {"op": "add_port", "switch": "{X}", "name": f"{{X}}.p{top}", "capacity_bps": p.new_speed()}
    stage = s.stage(place, 0.5)
    loop = {
        "op": "for_each",
        "parent": place,
        "kind": SW,
        "depth": _depth(s, place, SW),
        **stage,
        **s.total(place, 0.8, stage),  # "every switch whose ports total below T": fill-up
        "do": do,
    }
    return s.nonempty(loop)


def _loop_remove(s: TaskSampler) -> Op:
    """Remove every port below, at most or at a speed where each switch keeps another port.

    The speed is one the place has, and for "exactly" neither its slowest nor its fastest,
    so reading the bound another way removes other ports.
    """
    p = s.p
    tests = {
        "lt": lambda mine, bps: any(b >= bps for b in mine),
        "le": lambda mine, bps: any(b > bps for b in mine),
        "eq": lambda mine, bps: any(b != bps for b in mine),
    }
    if p.chance(0.3):
        return _decommission(s)
    for _ in range(_TRIES):
        place = _place(s, 0.7)
        switches = contained(s.g, place, SW) or [place]
        cmp = p.rng.choices(["lt", "le", "eq"], weights=[2, 1, 2])[0]
        present = p.speeds(place)
        speeds = {"lt": present[1:], "le": present[:-1], "eq": present[1:-1]}[cmp]
        safe = [bps for bps in speeds if all(tests[cmp](p.speeds(sw), bps) for sw in switches)]
        if safe:
            return {
                "op": "for_each",
                "parent": place,
                "kind": PORT,
                "depth": _depth(s, place, PORT),
                "speed": {"cmp": cmp, "bps": p.pick(safe)},
                "do": {"op": "remove", "node": "{X}"},
            }
    return _decommission(s)


def _decommission(s: TaskSampler) -> Op:
    """Remove every switch of one stage of a block, often only those below or above a capacity.

    Possible also where every port runs at one speed (Google's example).
    """
    block = s.p.block()
    stage = s.stage(block, 1.0) or {"stage": s.p.stage(block)}
    where = stage | s.total(block, 0.8, stage)
    loop = {
        "op": "for_each",
        "parent": block,
        "kind": SW,
        "depth": "direct",
        **where,
        "do": {"op": "remove", "node": "{X}"},
    }
    return s.nonempty(loop)


def _condition(s: TaskSampler, measure: Op) -> Op | None:
    """``cmp`` and ``threshold`` near the measured value that the measure's details decide.

    The comparison (greater or less than) is drawn at random. Without qualifiers or
    bounds, the threshold lies on a random side of the value; with them, between the value
    and the values each ablated qualifier or misread bound gives (all of which must lie on
    one side), so a reader blind to any of them takes the other branch, and either branch
    may be the true one; ``None`` when they lie on both sides. The threshold is never the
    value itself; where the drawn comparison would need it to be, the other one is used.
    """
    value = int(measure_value(s.g, measure))
    others = [
        int(o)
        for o in qualifiers.measure_variants(s.g, measure)
        + bounds.measure_variants(s.g, measure)
    ]
    reach = max(1, value // 4)
    rng = s.p.rng
    cmp = s.p.pick(["gt", "lt"])
    if not others:
        delta = rng.randint(1, reach)
        return {"cmp": cmp, "threshold": value - delta if s.p.chance(0.5) else value + delta}
    if all(o < value for o in others):
        low = max(max(others), value - reach)
        # "greater than T" for T in [low, value - 1]; "less than T" for T in [low + 1, value - 1]
        cmp = "gt" if low + 1 > value - 1 else cmp
        return {"cmp": cmp, "threshold": rng.randint(low + (cmp == "lt"), value - 1)}
    if all(o > value for o in others):
        high = min(min(others) - 1, value + reach)
        # "greater than T" for T in [value + 1, high]; "less than T" for T in [value + 1, high + 1]
        cmp = "lt" if value + 1 > high else cmp
        return {"cmp": cmp, "threshold": rng.randint(value + 1, high + (cmp == "lt"))}
    return None


def _branches(s: TaskSampler, measure: Op, then: Op, otherwise: Op, read: Op) -> Op | None:
    """An if-else whose branches make ``then`` or ``otherwise`` and both ask ``read``.

    Both branches ask the same question, so they state the same qualifiers and only the
    change (and its effect on the answer) depends on the condition.
    """
    condition = _condition(s, measure)
    if condition is None:
        return None
    if condition["cmp"] == "gt":  # the default
        del condition["cmp"]
    return {
        "op": "if",
        "measure": measure,
        **condition,
        "then": [then, read],
        "otherwise": [otherwise, read],
    }


def _if_capacity(s: TaskSampler) -> Op:
    """On a block's capacity (or one switch's): upgrade a port, or remove another switch."""
    p = s.p
    block = p.block()
    switch = p.switch(block)
    read = {"op": "capacity", "node": block, **s.speed(block, 0.6)}
    others = [sw for sw in p.switches(block) if sw != switch]
    gone = {"op": "remove", "node": p.pick(others)} if others else p.update(p.ports(switch)[0])
    change = p.update(p.pick(p.ports(switch)))
    on_switch = {
        "op": "capacity",
        "node": switch,
        "depth": "direct",
        **s.speed(switch, 0.8, _MEASURE_CMPS),
    }
    on_block = {"op": "capacity", "node": block}
    for measure in [on_switch, on_block] if p.chance(0.5) else [on_block, on_switch]:
        made = _branches(s, measure, change, gone, read)
        if made:
            return made
    raise AssertionError("unreachable: a measure without filters always has a threshold")


def _if_count(s: TaskSampler) -> Op:
    """On a count of a place's ports or switches: add a port, or remove (or slow) one."""
    p = s.p
    place = _place(s, 0.0)  # a switch holds only ports: counting them states a kind for nothing
    inside = contained(s.g, place, SW)
    switch = p.pick(inside) if inside else place  # the place is a switch itself
    read = {"op": "count", "node": place, "kind": PORT, **s.depth(place), **s.speed(place, 0.6)}
    spare = p.spare_port(switch)
    change = {"op": "remove", "node": spare} if spare else p.update(p.ports(switch)[0])
    what = PORT if place == switch else p.pick([SW, PORT])
    measure: Op = {"op": "count", "node": place, "kind": what}
    measure |= s.speed(place, 0.5, _MEASURE_CMPS) if what == PORT else s.stage(place, 0.5)
    if children(s.g, place, what):
        measure["depth"] = "direct"
    fallback = {"op": "count", "node": switch, "kind": PORT, "depth": "direct"}
    for candidate in (measure, fallback):
        made = _branches(s, candidate, p.add_port(switch), change, read)
        if made:
            return made
    raise AssertionError("unreachable: a measure without filters always has a threshold")


_FORMS = {
    "loop-update": _loop_update,
    "loop-add": _loop_add,
    "loop-remove": _loop_remove,
    "if-capacity": _if_capacity,
    "if-count": _if_count,
}


def control_flow(sampler: TaskSampler, label: str) -> Op:
    """The one control-flow operation of a level-3 query of ``label``."""
    return _FORMS[label](sampler)
