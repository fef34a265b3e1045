"""The judge's probes spend none of the ICMP error budget the agent's own probes need.

Linux limits the ICMP errors a machine sends to one source address twice, both from one
token bucket per (namespace, source address) that refills with time (a full bucket
after about five seconds):

* ``icmp_send`` takes ``net.ipv4.icmp_ratelimit`` (1 s) per error of a type in
  ``net.ipv4.icmp_ratemask`` (destination unreachable, time exceeded...);
* a packet that meets a missing, ``unreachable`` or ``prohibit`` route also goes through
  ``ip_error``, which takes ``net.ipv4.route.error_cost`` (1 s) before that: every
  "Destination Net Unreachable" costs two seconds of a one-second-per-second bucket.
  ``error_cost`` is one value for the whole host, not per namespace.

The judge's pingmesh sends a host's probes to every machine at once; where a gateway lacks
a route, they empty that gateway's bucket for the host, and the agent's ``traceroute`` or
``ping`` right after saw ``* * *`` at hop 1 instead of ``!N``: a missing route read as a
filtering gateway. So while the judge probes (no agent process runs then), every node's
``icmp_ratemask`` is 0 (the per-address limiter is not consulted: its tokens stay as they
were) and the host's ``error_cost`` is 0 (``ip_error`` adds the time elapsed, as the
bucket would anyway, and takes nothing); both are put back afterwards. The probes are
the same packets, meet the same routes and filters, and are judged the same way.

``error_cost`` is shared by every episode of every process on the host: it is held at 0
while any judge of any process probes (holders are recorded, by pid, in
``/run/netarena-route/error_cost.json``; a dead holder's share is released by the next
one) and put back by the last. A join interrupted by a stop signal's exception (SIGTERM's
``SystemExit``, Ctrl-C) is undone before the exception goes on. An agent of another episode
whose command runs meanwhile meets no ``ip_error`` limit for that moment; its per-address
limit still holds. Only the host's first network namespace has ``error_cost``: a process in
another one (a container on a network of its own, as ``netarena up`` and the compose files
run the route image) cannot see it and probes with the value as it is (one warning), as
where ``/proc/sys`` is read-only; a probe may then spend error budget the agent's next
command needed, the deviation this module removes elsewhere.

A router that forwards a probe back out the interface it came in on (a route through
another machine of the source's own subnet, as a routing loop makes) also tells the source
to go there directly, and the source remembers that route (``ip route show cache``) for
minutes: the judge's probes from every machine taught every host of the subnet such routes,
which the agent then had to find and flush, machine by machine, after repairing the loop.
So while the judge probes, every node also sends no redirects (``send_redirects`` 0 on
``all`` and on each interface, as the kernel sends one when either says so), put back
afterwards; the probes themselves take the same paths. Redirects the agent's own traffic
causes are the network's.

The probes ``probe.Watch`` sends while the agent's command runs (the pairs that must stay
blocked, some refused with ICMP errors) go out in rounds, each inside ``judge_quiet`` for
20 ms over every node but the one the command runs on (whose settings it could read): an
agent's own probe that falls in such a window meets no limit (every error answered, where
the kernel would have dropped some), the one deviation left.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from netarena.common.core.errors import EmulatorError
from netarena.common.core.result_files import write_atomic
from netarena.route.linux.namespaces import OWNER_DIR, enter

__all__ = ["judge_quiet", "ERROR_COST", "HOLDERS"]

log = logging.getLogger(__name__)

ERROR_COST = Path("/proc/sys/net/ipv4/route/error_cost")
"""The host-wide cost of one route error (jiffies)."""
HOLDERS = OWNER_DIR / "error_cost.json"
"""The pids holding ``error_cost`` at 0 and the value to put back (absent: none)."""
_RATEMASK_FILE = Path("/proc/sys/net/ipv4/icmp_ratemask")
_CONF = Path("/proc/sys/net/ipv4/conf")

_lock = threading.Lock()
_unsettable_logged = False
_held = 0
"""This process's judges probing now (the process is one holder while any is)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _settable() -> bool:
    """Whether this process can set ``error_cost``.

    Only the host's first network namespace has the file; a process in another one (a
    container's own network, a namespace of one's own) cannot see it, and a read-only
    ``/proc/sys`` cannot change it: the judge then probes with the value as it is.
    """
    global _unsettable_logged
    if os.access(ERROR_COST, os.W_OK):
        return True
    if not _unsettable_logged:
        _unsettable_logged = True
        log.warning("net.ipv4.route.error_cost cannot be set here (not the host's network "
                    "namespace, or /proc/sys is read-only): the judge's probes may spend ICMP "
                    "error budget an agent's next command needs")
    return False


def _share(join: bool) -> None:
    """Add (or remove) this process as a holder of ``error_cost = 0``, under a file lock."""
    if not _settable():
        return
    OWNER_DIR.mkdir(parents=True, exist_ok=True)
    with open(HOLDERS.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            state = json.loads(HOLDERS.read_text())
        except (OSError, ValueError):
            state = {}
        holders = [p for p in state.get("holders", []) if _alive(p) and p != os.getpid()]
        if not holders and "saved" in state:  # no other live holder: this one leaves, or
            ERROR_COST.write_text(str(state["saved"]))  # the last died holding it
            state = {}
        first = join and not holders
        if first:
            state["saved"] = int(ERROR_COST.read_text())
        if join:
            holders.append(os.getpid())
        if holders:  # recorded whole before the value changes: a holder killed between the
            # two leaves the value to put back, never a 0 the next holder would take for it
            write_atomic(HOLDERS, json.dumps({**state, "holders": holders}))
        else:
            HOLDERS.unlink(missing_ok=True)
        if first:
            ERROR_COST.write_text("0")


@contextlib.contextmanager
def _route_errors_free() -> Iterator[None]:
    global _held
    with _lock:
        _held += 1
        try:
            if _held == 1:
                _share(True)
        except BaseException:  # a stop signal's exception mid-join: undo what took effect
            _held -= 1
            _share(False)
            raise
    try:
        yield
    finally:
        with _lock:
            _held -= 1
            if _held == 0:
                _share(False)


_quiet_lock = threading.Lock()
"""Held while a namespace's limits are put aside or back (another thread waits for them)."""
_quiet: dict[str, tuple[int, str, dict[str, str]]] = {}
"""Namespaces whose limits are aside now: holders, then the mask and redirects to put back."""


def _set_redirects(values: dict[str, str] | None) -> dict[str, str]:
    """Each interface's (and ``all``'s) ``send_redirects``, then set to ``values`` (0: None).

    Called inside the namespace (``enter``).
    """
    saved = {}
    for name in os.listdir(_CONF):
        if name == "default":
            continue
        path = _CONF / name / "send_redirects"
        with contextlib.suppress(OSError):  # an interface gone meanwhile
            saved[name] = path.read_text().strip()
            wanted = "0" if values is None else values.get(name, saved[name])
            if wanted != saved[name]:
                path.write_text(wanted)
    return saved


def _set_aside(netns: str) -> tuple[str, dict[str, str]]:
    """Zero ``netns``'s ICMP ratemask and redirects; what they were (one ``enter``)."""
    with enter(netns):
        mask = _RATEMASK_FILE.read_text().strip()
        _RATEMASK_FILE.write_text("0")
        return mask, _set_redirects(None)


def _put_back(netns: str, mask: str, redirects: dict[str, str]) -> None:
    with contextlib.suppress(OSError, EmulatorError), enter(netns):  # the network may be gone
        _RATEMASK_FILE.write_text(mask)
        _set_redirects(redirects)


@contextlib.contextmanager
def judge_quiet(namespaces: Iterable[str]) -> Iterator[None]:
    """Probe inside this: the ICMP limits and redirects of ``namespaces`` stay as they were.

    Nested, or beside another holder of the same namespaces (a measurement's pingmesh
    inside the measurement, the neighbour restore after it), it only counts itself: the
    first holder set the limits aside and the last puts them back.
    """
    mine: list[str] = []
    with _route_errors_free():
        try:
            for netns in namespaces:
                with _quiet_lock:
                    holders, mask, redirects = _quiet.get(netns) or (0, "", {})
                    if not holders:
                        mask, redirects = _set_aside(netns)
                    _quiet[netns] = (holders + 1, mask, redirects)
                mine.append(netns)
            yield
        finally:
            for netns in mine:
                with _quiet_lock:
                    holders, mask, redirects = _quiet.pop(netns)
                    if holders > 1:
                        _quiet[netns] = (holders - 1, mask, redirects)
                    else:
                        _put_back(netns, mask, redirects)
