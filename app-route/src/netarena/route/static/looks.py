"""What the audit would class an object a record leaves as: its look.

The design holds addresses and refusing policy rules one of a kind (a service address, an
address held for another machine, a host's own under another length; a block's rule), so
a fault whose object takes a look the design already holds stands out as the second of a
kind (``faults._ANOTHER_LOOK``). Looks are ``AddressBook`` classes over the plan's
inventory, a rule's destination coarsened to any, one machine, a subnet or a part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netarena.route.emulator.plan import ROUTER, NetworkPlan
from netarena.route.emulator.undisclosed import Undisclosed
from netarena.route.static.addressbook import AddressBook
from netarena.route.static.inventory import planned_inventory

__all__ = ["NO_LOOKS", "DesignLooks", "Look", "design_looks"]

Look = tuple[str, str]
"""An object's kind (``address`` or ``rule``) and its class."""

_REFUSING = frozenset({"prohibit", "unreachable", "blackhole"})


def _rule_class(book: AddressBook, selector: list[str]) -> str:
    """What a refusing rule's ``to`` names: ``any``, ``one`` machine, a ``subnet`` or a part."""
    to = selector[selector.index("to") + 1] if "to" in selector else None
    network = book.network(ROUTER, to)
    if network.startswith("one-"):
        return "one"
    return network if network in ("any", "subnet") else "part"


def _look(book: AddressBook, record: dict[str, Any]) -> Look | None:
    method = record.get("method")
    if method == "wrong_prefix":
        return ("address", "own")
    if method in ("wrong_ip", "duplicate_ip") and "value" in record:
        return ("address", book.address(record["node"], str(record["value"])))
    if method == "rule_prohibit":
        return ("rule", _rule_class(book, list(record["selector"])))
    return None


def _line_look(book: AddressBook, node: str, line: str) -> Look | None:
    """The look of an ``ip -batch`` line among the design's undisclosed items."""
    words = line.split()
    if words[:2] == ["addr", "add"]:
        return ("address", book.address(node, words[2]))
    if words[:2] == ["rule", "add"] and set(words) & _REFUSING:
        return ("rule", _rule_class(book, words))
    return None


@dataclass(frozen=True)
class DesignLooks:
    """The looks one query's design holds, and the book that classes a fault's object."""

    book: AddressBook | None = None
    held: frozenset[Look] = field(default_factory=frozenset)

    def look_of(self, record: dict[str, Any]) -> Look | None:
        """The kind and class of the one-of-a-kind object a fault's record leaves, else ``None``."""
        return None if self.book is None else _look(self.book, record)

    def holds(self, record: dict[str, Any]) -> bool:
        """Whether the object a fault's record leaves takes a look the design holds."""
        return self.look_of(record) in self.held


NO_LOOKS = DesignLooks()
"""A design holding no one-of-a-kind object (a fault draws blind)."""


def design_looks(plan: NetworkPlan, local: Undisclosed) -> DesignLooks:
    """The looks the design's undisclosed items and twins hold (a fault avoids taking one)."""
    book = AddressBook(planned_inventory(plan))
    looks = [_line_look(book, i.node, line) for i in local.items for line in i.ip]
    looks += [_look(book, r) for r in local.twins]
    return DesignLooks(book, frozenset(look for look in looks if look is not None))
