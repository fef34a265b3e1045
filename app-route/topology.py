"""The emulated network: a pure description (``TopologySpec``) and its live form (``Network``).

Router ``r0`` (IP forwarding on) is linked to N Linux-bridge switches ``s1..sN``; subnet
``i`` is ``192.168.i.0/24`` with ``r0`` at ``.1`` on ``r0-eth<i>`` and its hosts at
``.100+j`` with a default route via ``.1``. Hosts are numbered ``h1..hK`` subnet by subnet.

Why plain namespaces rather than Mininet's node shells: each episode must live inside its
own private namespace (the host firewall, with Docker's ``br_netfilter``, drops bridged
traffic in the root namespace), must build in well under a second, and must be removable
by prefix after a crash. ``ip -batch`` builds a 4x4 network in about 50 ms; Mininet's
bridges and shells live in the root namespace and its cleanup is global.
"""

from __future__ import annotations

import logging
import os
import select
import subprocess
import time
from dataclasses import dataclass
from functools import cached_property

from netarena.common.errors import EmulatorError
from netarena.route.namespaces import (
    NETNS_DIR,
    OWNER_DIR,
    ip_batch,
    new_prefix,
    remove_prefix,
    write_sysctl,
)

__all__ = ["TopologySpec", "Network", "ExecResult", "OUTPUT_CAP_BYTES"]

log = logging.getLogger(__name__)

OUTPUT_CAP_BYTES = 8000
"""Longest command output kept (the rest is cut with a note)."""


@dataclass(frozen=True)
class TopologySpec:
    """Sizes of the network; everything else (names, addresses) follows from them."""

    num_subnets: int
    hosts_per_subnet: int

    @cached_property
    def hosts(self) -> list[str]:
        """Host names in subnet order: ``h1..hK``."""
        return [f"h{k}" for k in range(1, self.num_subnets * self.hosts_per_subnet + 1)]

    @property
    def nodes(self) -> list[str]:
        """Every machine, hosts first then the router (Mininet's pingall order)."""
        return [*self.hosts, "r0"]

    def subnet_of(self, host: str) -> int:
        """1-based subnet index of ``host``."""
        return (int(host[1:]) - 1) // self.hosts_per_subnet + 1

    def host_ip(self, host: str) -> str:
        """Intended address of ``host`` (without prefix length)."""
        k = int(host[1:]) - 1
        return f"192.168.{k // self.hosts_per_subnet + 1}.{100 + k % self.hosts_per_subnet}"

    @staticmethod
    def gateway(subnet: int) -> str:
        """Router address in ``subnet``."""
        return f"192.168.{subnet}.1"

    @staticmethod
    def router_intf(subnet: int) -> str:
        """Router interface facing ``subnet``."""
        return f"r0-eth{subnet}"

    @staticmethod
    def host_intf(host: str) -> str:
        """The host's only interface."""
        return f"{host}-eth0"

    def hosts_in(self, subnet: int) -> list[str]:
        """Hosts attached to ``subnet``."""
        return [h for h in self.hosts if self.subnet_of(h) == subnet]

    def target_ip(self, src: str, dst: str) -> str:
        """Address probed for ``src -> dst``.

        A host's address, or the router's gateway address on the source's subnet (for
        ``r0 -> r0`` never used).
        """
        if dst != "r0":
            return self.host_ip(dst)
        return self.gateway(self.subnet_of(src))

    def describe(self) -> str:
        """The intended configuration, as shown to the agent (its target state)."""
        lines = ["r0: router, IP forwarding enabled (net.ipv4.ip_forward=1)"]
        for i in range(1, self.num_subnets + 1):
            lines.append(f"  {self.router_intf(i)} {self.gateway(i)}/24 -> switch s{i}")
        for h in self.hosts:
            i = self.subnet_of(h)
            lines.append(
                f"{h}: {self.host_intf(h)} {self.host_ip(h)}/24 on s{i}, "
                f"default via {self.gateway(i)}"
            )
        return "\n".join(lines)


@dataclass(frozen=True)
class ExecResult:
    """What a command printed and how it ended."""

    returncode: int
    output: str
    timed_out: bool = False


class Network:
    """A live network for one episode, every piece inside namespaces named ``<prefix>_*``.

    Use as a context manager or call ``close()``; building failures clean up after
    themselves before raising.
    """

    def __init__(self, spec: TopologySpec, prefix: str | None = None) -> None:
        self.spec = spec
        self.prefix = prefix or new_prefix()
        self._closed = False
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def netns(self, node: str) -> str:
        """Namespace name of ``node`` (``r0``, ``h3``) or ``net`` for the switch fabric."""
        return f"{self.prefix}_{node}"

    def _build(self) -> None:
        spec, p = self.spec, self.prefix
        OWNER_DIR.mkdir(parents=True, exist_ok=True)
        (OWNER_DIR / f"{p}.pid").write_text(str(os.getpid()))
        ip_batch([f"netns add {self.netns(n)}" for n in ["net", *spec.nodes]])
        for n in spec.nodes:  # like a stock distribution host: no IPv6 noise, and
            for scope in ("all", "default"):  # deleting a primary address promotes the next
                write_sysctl(self.netns(n), f"net.ipv6.conf.{scope}.disable_ipv6", "1")
                write_sysctl(self.netns(n), f"net.ipv4.conf.{scope}.promote_secondaries", "1")
        fabric = ["link set lo up"]
        for i in range(1, spec.num_subnets + 1):
            fabric += [f"link add {p}_s{i} type bridge", f"link set {p}_s{i} up"]
            fabric += [
                f"link add {p}_r0e{i} type veth peer name {spec.router_intf(i)} "
                f"netns {self.netns('r0')}",
                f"link set {p}_r0e{i} master {p}_s{i} up",
            ]
            for h in spec.hosts_in(i):
                fabric += [
                    f"link add {p}_{h} type veth peer name {spec.host_intf(h)} "
                    f"netns {self.netns(h)}",
                    f"link set {p}_{h} master {p}_s{i} up",
                ]
        ip_batch(fabric, self.netns("net"))
        jobs = [self._configure_router()] + [self._configure_host(h) for h in spec.hosts]
        errors = [err for proc in jobs if (err := _finish(proc))]
        if errors:
            raise EmulatorError("configuring nodes failed: " + "; ".join(errors))
        write_sysctl(self.netns("r0"), "net.ipv4.ip_forward", "1")

    def _configure_router(self) -> subprocess.Popen[str]:
        lines = ["link set lo up"]
        for i in range(1, self.spec.num_subnets + 1):
            intf = self.spec.router_intf(i)
            lines += [f"addr add {self.spec.gateway(i)}/24 dev {intf}", f"link set {intf} up"]
        return _start_batch(lines, self.netns("r0"))

    def _configure_host(self, host: str) -> subprocess.Popen[str]:
        intf = self.spec.host_intf(host)
        gw = self.spec.gateway(self.spec.subnet_of(host))
        lines = [
            "link set lo up",
            f"addr add {self.spec.host_ip(host)}/24 dev {intf}",
            f"link set {intf} up",
            f"route add default via {gw}",
        ]
        return _start_batch(lines, self.netns(host))

    def exec(self, node: str, argv: list[str], timeout_s: float = 5.0) -> ExecResult:
        """Run ``argv`` inside ``node``'s namespace, no shell, with a timeout and output cap.

        The caller validates ``argv`` (see ``actions``); this only confines and bounds it.
        """
        if self._closed:
            raise EmulatorError("network is closed")
        if node not in self.spec.nodes:
            raise EmulatorError(f"unknown node {node}")
        full = ["nsenter", f"--net={NETNS_DIR / self.netns(node)}", "--", *argv]
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C", "LC_ALL": "C"}
        try:
            returncode, out, timed_out = _run_capped(full, timeout_s, _CAP_READ_BYTES, env=env)
        except OSError as exc:
            return ExecResult(127, f"cannot run {argv[0]}: {exc.strerror}")
        if timed_out:
            return ExecResult(-9, _cap(out) + f"\n[timed out after {timeout_s:g}s]", True)
        return ExecResult(returncode, _cap(out))

    def close(self) -> None:
        """Remove every namespace (hence link, bridge and rule) of this episode. Idempotent."""
        if self._closed:
            return
        self._closed = True
        removed = remove_prefix(self.prefix)
        log.debug("closed %s: %d namespaces", self.prefix, len(removed))

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_CAP_READ_BYTES = 4 * OUTPUT_CAP_BYTES + 4
"""Bytes kept from a command: enough for ``OUTPUT_CAP_BYTES`` characters of any UTF-8 and
one more, so ``_cap`` still sees that the output was longer and adds its note."""


def _run_capped(
    argv: list[str], timeout_s: float, limit: int, env: dict[str, str] | None = None
) -> tuple[int, bytes, bool]:
    """Run ``argv`` (stdout and stderr merged), keeping at most ``limit`` bytes of output.

    A chatty command must not grow the evaluator's memory for its whole timeout (``yes``
    writes gigabytes in five seconds), so output past ``limit`` is read and dropped: the
    command still runs to completion (or the timeout), so its exit status is its own.

    Returns:
        ``(returncode, output, timed_out)``; a timed-out command is killed (returncode -9).

    Raises:
        OSError: The command could not be started.
    """
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd="/",
    )
    assert proc.stdout is not None
    fd, kept = proc.stdout.fileno(), bytearray()
    deadline = time.monotonic() + timeout_s
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if not select.select([fd], [], [], left)[0]:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            if len(kept) < limit:
                kept += chunk[: limit - len(kept)]
        if not timed_out:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:  # closed its output but kept running
                timed_out = True
    finally:
        proc.stdout.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return (-9 if timed_out else proc.returncode), bytes(kept), timed_out


def _cap(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    if len(text) > OUTPUT_CAP_BYTES:
        text = text[:OUTPUT_CAP_BYTES] + f"\n[output cut at {OUTPUT_CAP_BYTES} characters]"
    return text


def _start_batch(lines: list[str], netns: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        ["ip", "-n", netns, "-batch", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write("\n".join(lines) + "\n")
    proc.stdin.close()
    return proc


def _finish(proc: subprocess.Popen[str]) -> str:
    assert proc.stderr is not None and proc.stdout is not None
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    proc.wait(timeout=30)
    return err.strip() if proc.returncode else ""
