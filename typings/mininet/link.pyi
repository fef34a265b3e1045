from typing import Any

from mininet.node import Node

class Intf:
    name: str
    node: Node | None
    def __init__(
        self, name: str, node: Node | None = None, port: int | None = None, **params: Any
    ) -> None: ...

class Link:
    intf1: Intf
    intf2: Intf
    def __init__(self, node1: Node, node2: Node, **params: Any) -> None: ...
    @classmethod
    def makeIntfPair(
        cls,
        intfname1: str,
        intfname2: str,
        addr1: str | None = None,
        addr2: str | None = None,
        node1: Node | None = None,
        node2: Node | None = None,
        deleteIntfs: bool = True,
    ) -> Any: ...
