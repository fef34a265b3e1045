"""Turning an agent's reply into a command that is safe to run inside one node.

The reply is ``{"machine": ..., "command": ...}``, bare, fenced or after reasoning. The
command is split by ``netarena.common.commands.split_command`` (no shell syntax at all),
then checked here per tool: only network tools, and none of their options that leave the
namespace (``ip netns``, ``-n``, ``ip vrf exec``, ``nsenter``), read or write files
(``-batch``, ``iptables-save -f``, ``sysctl -p``), load programs (``--modprobe``, BPF) or
touch non-network kernel settings (``sysctl`` outside ``net.*``).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass

from netarena.common.commands import split_command
from netarena.common.errors import ForbiddenCommand, InvalidAction
from netarena.common.replies import json_objects

__all__ = [
    "Action",
    "ForbiddenCommand",
    "ALLOWED_TOOLS",
    "parse_reply",
    "check_argv",
    "resolve_machine",
]

ALLOWED_TOOLS = (
    "ip",
    "ifconfig",
    "route",
    "arp",
    "iptables",
    "iptables-save",
    "sysctl",
    "tc",
    "ping",
    "traceroute",
    "ethtool",
)
"""Programs an agent may run (each further restricted by ``check_argv``)."""


@dataclass(frozen=True)
class Action:
    """A validated command for one machine of the episode."""

    machine: str
    """Node name without the episode prefix (``r0``, ``h3``)."""
    argv: tuple[str, ...]
    """The command, ready for exec (no shell)."""
    command: str
    """The command as the agent wrote it."""


# Options of ip/tc that switch namespace, read a batch file, or apply to all namespaces
# (iproute2 accepts any unambiguous prefix and a doubled leading dash).
_IP_BAD_OPTION = re.compile(r"^--?(n|ne|net|netn|netns|b|ba|bat|batc|batch|a|al|all|force)$")
_IP_BAD_TOKEN = re.compile(r"netns|bpf|xdp|pinned|^(net|netn|v|vr|vrf|exec|obj|object)$")
_SYSCTL_OK_OPTION = re.compile(r"^(-[aAXnNeqwb]+|--(all|values|names|write|ignore|quiet|binary))$")
_SYSCTL_KEY = re.compile(r"^net[./][A-Za-z0-9_./@:-]*$")
_ETHTOOL_READ = {"-i", "-k", "-S", "-g", "-a", "-c", "-l", "-T", "--driver", "--statistics"}


def resolve_machine(name: object, nodes: list[str], prefix: str) -> str:
    """Map the agent's machine name to a node of this episode.

    Raises:
        InvalidAction: Not a string, unknown, or a node of another episode.
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidAction('"machine" must be a non-empty string such as "r0" or "h1"')
    name = name.strip()
    if name.startswith(f"{prefix}_"):
        name = name.removeprefix(f"{prefix}_")
    if re.match(r"^nr[0-9a-z]{5}_", name):
        raise ForbiddenCommand(f"machine {name!r} belongs to another episode")
    if name not in nodes:
        raise InvalidAction(f"unknown machine {name!r}; machines are: {', '.join(nodes)}")
    return name


def parse_reply(reply: str, nodes: list[str], prefix: str) -> Action:
    """Find the ``{"machine", "command"}`` answer in ``reply`` and validate it.

    The last object carrying both keys wins (answers usually follow the reasoning).

    Raises:
        InvalidAction: No answer found, unknown machine, or a forbidden command.
    """
    candidates = [o for o in json_objects(reply) if "machine" in o and "command" in o]
    if not candidates:
        raise InvalidAction(
            'no answer found: reply with one JSON object {"machine": "<node>", '
            '"command": "<command>"}'
        )
    answer = candidates[-1]
    machine = resolve_machine(answer["machine"], nodes, prefix)
    command = answer["command"]
    if not isinstance(command, str):
        raise InvalidAction('"command" must be a string')
    try:
        argv = split_command(command)
    except InvalidAction as exc:
        if "shell syntax" in str(exc):
            raise ForbiddenCommand(str(exc)) from exc
        raise
    if argv[0] == "sudo":  # we already run as root inside the node
        argv = argv[1:]
        if not argv:
            raise InvalidAction("empty command after sudo")
    check_argv(argv)
    return Action(machine, tuple(argv), command)


def check_argv(argv: list[str]) -> None:
    """Refuse anything but allowlisted network tools used within their node.

    Raises:
        ForbiddenCommand: The tool or one of its options is not allowed.
        InvalidAction: The tool is not installed.
    """
    tool, args = argv[0], argv[1:]
    if tool not in ALLOWED_TOOLS:
        raise ForbiddenCommand(f"{tool!r} is not allowed; use one of: {', '.join(ALLOWED_TOOLS)}")
    if shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin") is None:
        raise InvalidAction(f"{tool} is not installed on the machines")
    check = _CHECKS.get(tool)
    if check is not None:
        check(args)


def _refuse(tool: str, token: str, why: str) -> None:
    raise ForbiddenCommand(f"{tool}: {token!r} is not allowed ({why})")


def _check_iproute(tool: str, args: list[str]) -> None:
    for tok in args:
        if _IP_BAD_OPTION.match(tok):
            _refuse(tool, tok, "namespace switching, batch files and -all are disabled")
        if _IP_BAD_TOKEN.search(tok):
            _refuse(tool, tok, "namespaces, VRF exec and BPF programs are disabled")


def _check_ip(args: list[str]) -> None:
    _check_iproute("ip", args)


def _check_tc(args: list[str]) -> None:
    _check_iproute("tc", args)


def _check_iptables(args: list[str]) -> None:
    for tok in args:
        if tok.startswith("--modprobe") or tok.startswith("-M") or "bpf" in tok:
            _refuse("iptables", tok, "loading modules or programs is disabled")


def _check_iptables_save(args: list[str]) -> None:
    for tok in args:
        if tok.startswith(("-f", "--file", "--modprobe", "-M")):
            _refuse("iptables-save", tok, "writing files or loading modules is disabled")


def _check_sysctl(args: list[str]) -> None:
    for tok in args:
        if tok.startswith("-"):
            if not _SYSCTL_OK_OPTION.match(tok) or "p" in tok:
                _refuse("sysctl", tok, "only -a -n -N -e -q -w are allowed")
            continue
        key = tok.split("=", 1)[0]
        if not _SYSCTL_KEY.match(key) or ".." in key:
            _refuse("sysctl", tok, "only net.* keys may be read or written")


def _check_arp(args: list[str]) -> None:
    for tok in args:
        if tok.startswith(("-f", "--file")):
            _refuse("arp", tok, "reading files is disabled")


def _check_ping(args: list[str]) -> None:
    for tok in args:
        if re.match(r"^-[A-Za-z]*f", tok):
            _refuse("ping", tok, "flood ping is disabled")


def _check_ethtool(args: list[str]) -> None:
    options = [t for t in args if t.startswith("-")]
    if any(t not in _ETHTOOL_READ for t in options) or len(options) > 1:
        _refuse("ethtool", " ".join(options), "only read-only queries are allowed")


_CHECKS = {
    "ip": _check_ip,
    "tc": _check_tc,
    "iptables": _check_iptables,
    "iptables-save": _check_iptables_save,
    "sysctl": _check_sysctl,
    "arp": _check_arp,
    "ping": _check_ping,
    "ethtool": _check_ethtool,
}
