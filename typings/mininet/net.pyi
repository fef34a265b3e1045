from typing import Any, ClassVar

from mininet.link import Link
from mininet.node import Node
from mininet.topo import Topo

class Mininet:
    inited: ClassVar[bool]
    hosts: list[Node]
    switches: list[Node]
    nameToNode: dict[str, Node]
    host: type[Node]
    link: type[Link]
    nextIP: int
    def __init__(
        self,
        topo: Topo | None = None,
        switch: type[Node] = ...,
        host: type[Node] = ...,
        controller: type[Node] | None = ...,
        link: type[Link] = ...,
        build: bool = True,
        autoSetMacs: bool = False,
        waitConnected: bool = False,
        **params: Any,
    ) -> None: ...
    def addHost(self, name: str, cls: type[Node] | None = None, **params: Any) -> Node: ...
    def addLink(
        self,
        node1: Node | str,
        node2: Node | str,
        port1: int | None = None,
        port2: int | None = None,
        cls: type[Link] | None = None,
        **params: Any,
    ) -> Link: ...
    def buildFromTopo(self, topo: Topo | None = None) -> None: ...
    def configHosts(self) -> None: ...
    def build(self) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def values(self) -> list[Node]: ...
