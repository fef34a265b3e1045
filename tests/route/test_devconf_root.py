"""Emulated machines start from the kernel's IPv4 settings, not the host's (``devconf.py``).

A new namespace copies the host's ``net.ipv4.conf.{all,default}``: with Docker running on the
host (``ip_forward=1``) every emulated host forwarded, and systemd's ``rp_filter=2`` made
every router check sources.
"""

from __future__ import annotations

import subprocess

import pytest

from netarena.route import RouteApp
from netarena.route.emulator.network import Network
from netarena.route.emulator.topology import topology_of
from netarena.route.linux.devconf import KERNEL_DEFAULTS, reset
from netarena.route.linux.namespaces import read_sysctl

from .conftest import NEEDS_ROOT

pytestmark = [pytest.mark.root, NEEDS_ROOT]

_FORWARDING = {"net.ipv4.ip_forward", "net.ipv4.conf.all.accept_redirects"}
"""What a router's forwarding changes (the kernel turns ``all`` redirects off with it)."""
_SET_BY_THE_NETWORK = {"net.ipv4.conf.all.promote_secondaries",
                       "net.ipv4.conf.default.promote_secondaries"}
"""Set on every machine on purpose, as on a systemd host (``emulator/network.py``)."""


def _values(netns: str, skip: set[str] | None = None) -> dict[str, str]:
    return {key: read_sysctl(netns, key) for key, _ in KERNEL_DEFAULTS if key not in (skip or ())}


def _expected(skip: set[str] | None = None) -> dict[str, str]:
    return {key: str(value) for key, value in KERNEL_DEFAULTS if key not in (skip or ())}


def test_the_reset_puts_back_every_value_a_namespace_inherited() -> None:
    name = "natestdevconf"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        changed = {"net.ipv4.ip_forward": "1", "net.ipv4.conf.all.rp_filter": "2",
                   "net.ipv4.conf.default.rp_filter": "2",
                   "net.ipv4.conf.default.promote_secondaries": "1",
                   "net.ipv4.conf.all.log_martians": "1",
                   "net.ipv4.conf.default.send_redirects": "0"}
        for key, value in changed.items():
            subprocess.run(["ip", "netns", "exec", name, "sysctl", "-qw", f"{key}={value}"],
                           check=True)
        reset(name)
        assert _values(name) == _expected()
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def test_every_machine_of_a_network_starts_from_the_kernels_values(small_app: RouteApp) -> None:
    """Whatever the host's own settings (on a host running Docker, hosts forwarded). Built
    without the undisclosed configuration, which sets some of these on purpose."""
    plan, intent, topo = topology_of(small_app.generate(31, 1, "DI"))
    with Network(plan, intent, topo()) as net:
        for node in plan.nodes:
            skip = _SET_BY_THE_NETWORK | (_FORWARDING if node == "r0" else set())
            assert _values(net.netns(node), skip) == _expected(skip), node
        assert read_sysctl(net.netns("r0"), "net.ipv4.ip_forward") == "1"
