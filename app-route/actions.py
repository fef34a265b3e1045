"""Turning an agent's reply into a command that is safe to run inside one node.

The reply is ``{"machine": ..., "command": ...}``, bare, fenced or after reasoning. The
command is split by ``netarena.common.commands.split_command`` (no shell syntax at all),
then checked here per tool: only network tools, and none of their options that leave the
namespace (``ip netns``, ``-n``, ``ip vrf exec``, ``nsenter``), read or write files
(``-batch``, ``tc -cf``, ``iptables-save -f``, ``arp -f``, ``sysctl -p``), load programs
(``--modprobe``, BPF), flood (``ping -f/-A/-l``, intervals under 0.2 s) or touch
non-network kernel settings (``sysctl`` outside ``net.*``). Options are matched the way the
tools' getopt reads them: abbreviated long options (``--mo`` is ``--modprobe``) and short
clusters (``-nM/x`` is ``-n -M /x``); only ASCII is accepted (no look-alike characters).
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
# (iproute2 accepts any unambiguous prefix and a doubled leading dash; every ip option
# spelled -n... means -netns, so all of them are refused).
_IP_BAD_OPTION = re.compile(r"^--?(n[A-Za-z]*|b|ba|bat|batc|batch|a|al|all|force)$")
_IP_BAD_TOKEN = re.compile(r"netns|bpf|xdp|pinned|^(net|netn|v|vr|vrf|exec|obj|object)$")
_SYSCTL_OK_OPTION = re.compile(r"^(-[aAXnNeqwb]+|--(all|values|names|write|ignore|quiet|binary))$")
_SYSCTL_KEY = re.compile(r"^net[./][A-Za-z0-9_./@:-]*$")
_TC_CONF_OPTION = re.compile(r"^--?(c|cf|co|con|conf)$")
_IPTABLES_VALUE_LETTERS = "ACDRILSFZNXEPhopsdjiwWtmcgM"
"""Short iptables options whose value may follow in the same word (getopt)."""
_PING_VALUE_LETTERS = "ciIlmMpQsStTwWeF"
_PING_MIN_INTERVAL_S = 0.2
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
    for tok in argv:
        if not tok.isascii():
            raise ForbiddenCommand(
                f"non-ASCII text in {tok!r}: network tools take plain ASCII options and names"
            )
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
    for tok in args:
        if _TC_CONF_OPTION.match(tok):
            _refuse("tc", tok, "reading a class-name file is disabled")
    _check_iproute("tc", args)


def _short_flags(tok: str, with_value: str) -> str:
    """The option letters getopt reads from ``tok`` (``-nM/x`` is ``-n -M /x``).

    Letters after one that takes a value (listed in ``with_value``) are that value.
    """
    if not tok.startswith("-") or tok.startswith("--") or tok == "-":
        return ""
    letters = ""
    for ch in tok[1:]:
        letters += ch
        if ch in with_value:
            break
    return letters


def _long_abbreviates(tok: str, *names: str) -> bool:
    """Whether ``tok`` is ``--x`` or ``--x=...`` with ``x`` a prefix of one of ``names``.

    getopt_long accepts any unambiguous prefix (``--mo`` is ``--modprobe``).
    """
    if not tok.startswith("--") or len(tok) < 3:
        return False
    name = tok[2:].split("=", 1)[0]
    return any(full.startswith(name) for full in names)


def _check_iptables(args: list[str]) -> None:
    for tok in args:
        if (
            "M" in _short_flags(tok, _IPTABLES_VALUE_LETTERS)
            or _long_abbreviates(tok, "modprobe")
            or "bpf" in tok
        ):
            _refuse("iptables", tok, "loading modules or programs is disabled")


def _check_iptables_save(args: list[str]) -> None:
    # An allowlist: -f/--file (and any getopt abbreviation or cluster of it, ``--fi``,
    # ``-cf/x``) writes a host file as root, and -M/--modprobe runs a program.
    i = 0
    while i < len(args):
        tok = args[i]
        if tok in ("-t", "--table"):
            i += 1  # the table name
        elif not (
            tok in ("-c", "--counters")
            or tok.startswith("--table=")
            or (tok.startswith("-t") and tok[2:].isalnum())
        ):
            _refuse(
                "iptables-save",
                tok,
                "only -c/--counters and -t/--table TABLE are allowed (no files, no modules)",
            )
        i += 1


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
        if "f" in _short_flags(tok, "AHpit") or _long_abbreviates(tok, "file"):
            _refuse("arp", tok, "reading files is disabled")


def _check_ping(args: list[str]) -> None:
    interval = False
    for tok in args:
        if interval:
            interval = False
            _check_ping_interval(tok)
            continue
        flags = _short_flags(tok, _PING_VALUE_LETTERS)
        for bad, why in (("f", "flood ping"), ("A", "adaptive ping"), ("l", "preload")):
            if bad in flags:
                _refuse("ping", tok, f"{why} is disabled")
        if flags.endswith("i"):
            value = tok[1 + len(flags) :]
            if value:
                _check_ping_interval(value)
            else:
                interval = True


def _check_ping_interval(value: str) -> None:
    try:
        seconds = float(value)
    except ValueError:
        return  # ping itself rejects it
    if not seconds >= _PING_MIN_INTERVAL_S:
        _refuse("ping", f"-i {value}", f"intervals under {_PING_MIN_INTERVAL_S} s flood the link")


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
