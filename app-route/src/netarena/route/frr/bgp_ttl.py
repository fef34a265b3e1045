"""A BGP session's TTL handling: the lines that set it, and which pairs of ends come up.

Each end of a loopback session (eBGP between neighbours' loopbacks) handles TTL its own
way, as its AS sets it: ``ebgp-multihop N``, ``disable-connected-check``, or a TTL
security check (GTSM, ``ttl-security hops H``). Whether the session comes up is a matter
of numbers, checked on FRR: each end's packets must pass the other's check.
"""

from __future__ import annotations

__all__ = ["TTL_LINES", "TTL_COMMANDS", "ttl_passes", "ttl_works"]

TTL_LINES = {
    "multihop": "ebgp-multihop 2",
    "multihop255": "ebgp-multihop 255",
    "gtsm1": "ttl-security hops 1",
    "gtsm2": "ttl-security hops 2",
    "connected": "disable-connected-check",
}
"""``Neighbor.ttl`` → the neighbour line that sets it (FRR prints a bare ``ebgp-multihop``
as ``ebgp-multihop 255``)."""
TTL_COMMANDS = ("ebgp-multihop", "ttl-security", "disable-connected-check")
"""How the neighbour lines that set a session's TTL handling begin."""


def _ttl(lines: list[str]) -> tuple[int, int]:
    """``(TTL sent, least TTL accepted)`` of a loopback session's end with these lines.

    The lines are its neighbour lines (``ebgp-multihop N``, ``ttl-security hops H``,
    ``disable-connected-check``; others are ignored). A peer's packets arrive with the TTL
    they left with: a loopback session's peers are neighbours, so no router lies between
    them. A TTL security check sends 255 and accepts 255 less the hops it allows, plus one;
    otherwise an end accepts any TTL.
    """
    sent, least = 1, 0
    for line in lines:
        words = line.split()
        if words[:1] == ["ebgp-multihop"]:
            sent = int(words[1]) if len(words) > 1 and words[1].isdigit() else 255
        elif words[:2] == ["ttl-security", "hops"] and len(words) > 2 and words[2].isdigit():
            sent, least = 255, 256 - int(words[2])
    return sent, least


def ttl_passes(mine: list[str], theirs: list[str]) -> bool:
    """Whether a loopback session comes up with its two ends' TTL lines.

    Each end's packets must pass the other's TTL security check, if it has one.
    """
    (my_sent, my_least), (their_sent, their_least) = _ttl(mine), _ttl(theirs)
    return their_sent >= my_least and my_sent >= their_least


def ttl_works(mine: str, theirs: str) -> bool:
    """``ttl_passes`` for two ends' TTL handling (``Neighbor.ttl``).

    255, which ``ebgp-multihop 255`` and a TTL security check send, passes a check; the 2
    of ``ebgp-multihop 2`` and the 1 of ``disable-connected-check`` do not.
    """
    return ttl_passes([TTL_LINES[mine]] if mine else [], [TTL_LINES[theirs]] if theirs else [])
