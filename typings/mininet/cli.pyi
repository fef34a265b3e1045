import select
from cmd import Cmd
from typing import IO, Any

from mininet.net import Mininet
from mininet.node import Node

class CLI(Cmd):
    mn: Mininet
    stdin: IO[str]
    inPoller: select.poll
    def __init__(
        self, mininet: Mininet, stdin: IO[str] = ..., script: str | None = None, *args: Any,
        **kwargs: Any,
    ) -> None: ...
    def run(self) -> None: ...
    def isatty(self) -> bool: ...
    def waitForNode(self, node: Node) -> None: ...

def isReadable(poller: select.poll) -> bool: ...
