from typing import Any

from mininet.node import Switch

class LinuxBridge(Switch):
    def __init__(
        self, name: str, stp: bool = False, prio: int | None = None, **kwargs: Any
    ) -> None: ...
