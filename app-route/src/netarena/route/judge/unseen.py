"""The judge's probes leave no neighbour entry or conntrack entry an agent could list.

The judge measures from empty neighbour caches (``LiveNetwork.flush_neighbours``) and its
probes cross every node: without this, the agent's next ``ip neigh`` showed every host and
gateway learned (its own entries gone, or ``REACHABLE`` again), and ``conntrack -L`` on a
node whose rules track connections showed the judge's ICMP, TCP and UDP flows. So
``judge_unseen`` reads each node's learned IPv4 neighbour entries before a measurement,
listens to the conntrack entries each node makes during it and, after it:

* puts the neighbour entries back as they were (``rtnetlink.restore_learned``): those the
  judge created are deleted, those it flushed or refreshed are replaced by their old
  state and link-layer address. Only timing shows: an entry put back ``REACHABLE`` is
  confirmed anew (it turns ``STALE`` a measurement's length later), and ``ip -s neigh``
  shows it updated just now. Deleting an entry still resolving (an address nothing
  answers for) answers the probes queued on it with "Host Unreachable" at once (its
  resolution failing would, three seconds later): the restore runs inside
  ``judge_quiet``, as does the flush before each measurement (``measure.py``), or these
  errors spent a gateway's error budget for the probes' sources and the agent's
  ``traceroute`` right after saw ``* * *`` (``errorbudget.py``);
* deletes the conntrack entries made meanwhile (``nfnetlink.forget``): no agent process
  runs while the judge measures, so every new entry is the judge's (or a routing
  daemon's, which makes it again with its next packet). Entries that were there before
  stay (a probe that matched one refreshed its timeout, as any packet of that flow would).

``Watch`` probes during the agent's command, when new entries are the command's as much as
the judge's: after each round (20 ms after its probes went out) and once the command
ended, it deletes the new conntrack entries whose source port or ICMP identifier is one of
the watch's (``judge_sources``, a ``Conntrack`` over every node): a ``conntrack -L`` can
still catch one in that moment. The neighbour entries its rounds make (a source's
gateway, a gateway's source) are left: they cannot be told apart from those the
command's own packets make, and deleting those under a running command would change
what it does.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterable, Iterator

from netarena.common.core.errors import EmulatorError
from netarena.route.judge.errorbudget import judge_quiet
from netarena.route.judge.mesh import Mesh
from netarena.route.linux.nfnetlink import conntrack_events, forget, new_entries
from netarena.route.linux.rtnetlink import Learned, learned_neighbours, restore_learned

__all__ = ["judge_unseen", "judge_sources", "Conntrack"]

log = logging.getLogger(__name__)

_PROTOCOLS = {"icmp": socket.IPPROTO_ICMP, "udp": socket.IPPROTO_UDP}
_local = threading.local()


def _covered() -> set[str]:
    """The namespaces an enclosing ``judge_unseen`` of this thread restores already."""
    if not hasattr(_local, "spaces"):
        _local.spaces = set()
    spaces: set[str] = _local.spaces
    return spaces


@contextlib.contextmanager
def judge_unseen(namespaces: Iterable[str]) -> Iterator[None]:
    """Measure inside this: ``namespaces`` keep their neighbour and conntrack entries.

    Nested inside another over the same namespaces, it does nothing (the outer one
    restores once).
    """
    covered = _covered()
    mine = [ns for ns in namespaces if ns not in covered]
    before: dict[str, Learned] = {}
    watched = Conntrack(mine)
    try:
        for netns in mine:
            before[netns] = learned_neighbours(netns)
        covered.update(mine)
        yield
    finally:
        covered.difference_update(mine)
        try:
            _restore(before)
        finally:
            watched.close(None)


def _restore(before: dict[str, Learned]) -> None:
    """Put the neighbour entries back inside ``judge_quiet`` (the module docstring)."""
    gone = (OSError, EmulatorError)  # the network may be gone
    with contextlib.suppress(*gone), judge_quiet(before):
        for netns, neighbours in before.items():
            with contextlib.suppress(*gone):
                restore_learned(netns, neighbours)


class Conntrack:
    """Told of the conntrack entries some namespaces make from now on, to delete them.

    ``nfnetlink.conntrack_events``: listing the entries before and after instead would
    walk the host's whole table twice per namespace.
    """

    def __init__(self, namespaces: Iterable[str]) -> None:
        self.sockets = {ns: sock for ns in namespaces if (sock := conntrack_events(ns))}

    def clean(self, sources: set[tuple[int, int]] | None) -> None:
        """Delete the entries made since, those whose source is in ``sources`` (None: all)."""
        for netns, sock in self.sockets.items():
            made, whole = new_entries(sock)
            if not whole:
                log.warning("%s: conntrack events lost; some of the judge's entries stay", netns)
            forget(sock, {e for e in made if sources is None or e.source() in sources})

    def close(self, sources: set[tuple[int, int]] | None) -> None:
        """``clean``, then close the sockets."""
        try:
            self.clean(sources)
        finally:
            for sock in self.sockets.values():
                sock.close()


def judge_sources(mesh: Mesh) -> set[tuple[int, int]]:
    """``(IP protocol, source port or ICMP identifier)`` of the mesh's flows under way."""
    found = {(_PROTOCOLS["icmp"], ident) for ident in mesh.idents.values()}
    clients = [(_PROTOCOLS["udp"], sock) for sock in mesh.clients.values()]
    clients += [
        (socket.IPPROTO_TCP, sock)
        for fd, sock in mesh.open_fds.items()
        if mesh.handlers.get(fd, ("",))[0] in ("tcp-client", "tcp-wait")
    ]
    for proto, sock in clients:
        with contextlib.suppress(OSError):
            if port := sock.getsockname()[1]:
                found.add((proto, port))
    return found
