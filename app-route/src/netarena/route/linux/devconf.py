"""Every emulated machine starts from the kernel's IPv4 settings, whatever the host's are.

A new network namespace copies the host's ``net.ipv4.conf.{all,default}`` (the kernel's
``net.core.devconf_inherit_init_net`` is 0 by default: IPv4 inherits, IPv6 does not). So a
host running Docker (``ip_forward=1``), or systemd's defaults (``rp_filter=2``,
``promote_secondaries=1``), or a hardened profile (no redirects, ``log_martians=1``) gave
every machine of every network those settings too: hosts that forward, routers that check
sources, and what an agent reads (and the audit learns from) changed with the machine the
benchmark ran on. Each node's namespace is reset to the kernel's own defaults before its
first interface exists (an interface copies ``default`` when it is made).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from netarena.route.linux.namespaces import enter

__all__ = ["KERNEL_DEFAULTS", "reset"]

_BOTH = {
    "accept_local": 0, "accept_redirects": 1, "arp_accept": 0, "arp_announce": 0,
    "arp_evict_nocarrier": 1, "arp_filter": 0, "arp_ignore": 0, "arp_notify": 0,
    "bc_forwarding": 0, "bootp_relay": 0, "disable_policy": 0, "disable_xfrm": 0,
    "drop_gratuitous_arp": 0, "drop_unicast_in_l2_multicast": 0, "force_igmp_version": 0,
    "ignore_routes_with_linkdown": 0, "log_martians": 0, "promote_secondaries": 0,
    "proxy_arp": 0, "proxy_arp_pvlan": 0, "route_localnet": 0, "rp_filter": 0,
    "secure_redirects": 1, "send_redirects": 1, "shared_media": 1, "src_valid_mark": 0,
}

KERNEL_DEFAULTS: tuple[tuple[str, int], ...] = (
    ("net.ipv4.ip_forward", 0),  # first: it sets ``forwarding`` of all, default and each device
    *((f"net.ipv4.conf.{scope}.{key}", value)
      for scope in ("all", "default") for key, value in _BOTH.items()),
    ("net.ipv4.conf.all.accept_source_route", 0),
    ("net.ipv4.conf.default.accept_source_route", 1),
)
"""A fresh namespace's values where nothing was inherited (Linux 6.x; read with
``devconf_inherit_init_net=2``). Keys an older kernel lacks are skipped."""


def reset(netns: str) -> None:
    """Put these values back in ``netns`` (a name or ``/proc/PID/ns/net``), from here."""
    with enter(netns):
        for key, value in KERNEL_DEFAULTS:
            with contextlib.suppress(FileNotFoundError):  # a key this kernel lacks
                Path("/proc/sys", *key.split(".")).write_text(str(value))
