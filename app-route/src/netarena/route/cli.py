"""``netarena route ...``: maintenance and exploration commands of the route app."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from typing import Annotated, Any

import typer

from netarena.common.core.signals import exit_on_signals
from netarena.route.linux.namespaces import cleanup as _cleanup

__all__ = ["app"]

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Route app tools.")


@app.command()
def cleanup(
    all_: Annotated[
        bool, typer.Option("--all", help="also remove episodes of processes still running")
    ] = False,
) -> None:
    """Remove namespaces (and with them links, bridges, rules, processes) left by killed runs.

    Only names of ours (``nr?????_*``) are touched; episodes whose owner process is alive
    are kept unless ``--all`` is given.
    """
    removed = _cleanup(include_live=all_)
    for name in removed:
        print(f"removed {name}")
    print(f"{len(removed)} namespaces removed")


@app.command()
def limits() -> None:
    """Print the limits agents' commands run under on this machine, and the node budget."""
    from netarena.route.emulator.rulesets import LISTING_MAX_BYTES, LISTING_TIMEOUT_S
    from netarena.route.linux.cgroups import hierarchy
    from netarena.route.sandbox.limits import ICMP_BURST, ICMP_RATE_PER_S, OBJECT_BUDGET

    print(hierarchy().describe())
    print(f"ICMP per node: {ICMP_RATE_PER_S}/s after a burst of {ICMP_BURST} (switch fabric)")
    print("kernel objects per node: " + ", ".join(f"{n} {k}" for k, n in OBJECT_BUDGET.items()))
    print(f"state listings: at most {LISTING_TIMEOUT_S:g} s and {LISTING_MAX_BYTES >> 20} MiB, "
          "else the step is invalid and unsafe")


@app.command()
def shell(
    seed: Annotated[int, typer.Option(help="query seed")],
    level: Annotated[int, typer.Option(help="level 1-3")] = 1,
    label: Annotated[str | None, typer.Option(help="fault label, e.g. DR+WR")] = None,
    param: Annotated[
        list[str], typer.Option("--param", "-p", help="app parameter KEY=VALUE")
    ] = [],  # noqa: B006
) -> None:
    """Open Mininet's CLI on that query's faulted network (as root), for a person to explore.

    The same seed, level, label and parameters give the same network and faults as in an
    evaluation. Commands typed here run in Mininet's own node shells, not in the agents'
    sandbox. The network is removed when the CLI exits, and on SIGTERM; Ctrl-C stops the
    command running (``iperf`` included) and returns to the prompt, or at the prompt leaves.
    """
    from netarena.common.cli.options import parse_params
    from netarena.route.generator import RouteApp

    route = RouteApp(parse_params(param))
    query = route.generate(seed, level, label)
    with exit_on_signals():  # SIGTERM (or SIGINT while building) still closes the network
        episode = route.open(query)
        try:
            _explore(episode, query.prompt)
        finally:
            episode.close()


def _explore(episode: Any, prompt: str) -> None:
    """Mininet's CLI on ``episode``'s network; then says which faults were injected."""
    from mininet.log import setLogLevel

    from netarena.route.linux.namespaces import enter
    from netarena.route.static.faults import FAULT_TYPES

    print(prompt)
    from netarena.route.frr.episode import FrrEpisode

    if isinstance(episode, FrrEpisode):  # dynamic routing: vtysh works in router shells
        print(f"\n## Current state\n{episode._report(episode.state)}\n")
        episode.net.attach_shells()
        with enter(episode.net.netns("net")):
            _interruptible_cli()(episode.net.mininet)
        print("The injected faults were: " + "; ".join(
            f"{f['type']} on {f['router']} {f['intf'] or ''}".rstrip() for f in episode.faults))
        return
    print(f"\n## Current connectivity\n{episode.matrix.text()}\n")
    setLogLevel("output")
    with enter(episode.net.netns("net")):  # `sh ...` sees the switches
        _interruptible_cli()(episode.net.mininet)
    faults = "; ".join(
        f"{FAULT_TYPES[f['type']]} ({f['method']}) on {f['node']}" for f in episode.faults
    )
    print(f"The injected faults were: {faults}")


def _interruptible_cli() -> type:
    """Mininet's CLI, where Ctrl-C always gives the prompt back.

    Mininet's own writes a Ctrl-C to the busy node's shell, which reaches no process, and
    then waits for ever: ``iperf h1 h5`` across a broken path never came back. Here the
    busy node's commands are interrupted (``_stop``).
    """
    from mininet.cli import CLI, isReadable
    from mininet.log import output
    from mininet.util import quietRun

    class InterruptibleCLI(CLI):
        in_command = False
        """A Ctrl-C came while a command ran (``iperf`` between two of its node commands:
        no node waiting then), not at the prompt."""

        def run(self) -> None:
            while True:
                try:
                    for node in self.mn.values():
                        if node.waiting:
                            _stop(node)
                    self.cmdloop()
                    break
                except KeyboardInterrupt:
                    busy = self.in_command or any(node.waiting for node in self.mn.values())
                    self.in_command = False
                    if not busy:
                        output("\nInterrupted at the prompt: leaving\n")
                        break
                    output("\nInterrupt\n")

        def onecmd(self, line: str) -> bool:
            try:
                return bool(super().onecmd(line))
            except KeyboardInterrupt:
                self.in_command = True
                raise

        def waitForNode(self, node: Any) -> None:  # noqa: N802 - Mininet's name
            """Echo ``node``'s output and pass keys on until it is done; Ctrl-C stops it."""
            node_poller, both = select.poll(), select.poll()
            node_poller.register(node.stdout, select.POLLIN)
            both.register(self.stdin, select.POLLIN)
            both.register(node.stdout, select.POLLIN)
            if self.isatty():
                quietRun("stty -icanon min 1")
            while node.waiting:
                try:
                    both.poll()
                    if isReadable(self.inPoller):
                        node.write(self.stdin.read(1))
                    if isReadable(node_poller):
                        output(node.monitor())
                except KeyboardInterrupt:
                    _stop(node)

    return InterruptibleCLI


def _stop(node: Any, grace_s: float = 1.0) -> None:
    """End the command ``node``'s shell is running, as Ctrl-C in a terminal would.

    The node's shell has no controlling terminal (Mininet starts it detached), so the
    Ctrl-C Mininet writes to it reaches no process: its children get SIGINT directly,
    then SIGKILL if they are still there after ``grace_s``.
    """
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGKILL, 5.0)):
        for pid in _descendants(node.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        if _await_prompt(node, wait_s):
            return
    node.waiting = False  # whatever is left, the prompt is the user's again


def _await_prompt(node: Any, wait_s: float) -> bool:
    """Read ``node``'s shell until its prompt (Mininet's sentinel) or ``wait_s`` passes."""
    from mininet.log import output

    poller = select.poll()  # POLLIN only: a pty also reports POLLPRI, and then read blocks
    poller.register(node.stdout.fileno(), select.POLLIN)
    deadline = time.monotonic() + wait_s
    while node.waiting and time.monotonic() < deadline:
        if poller.poll(100):
            text = os.read(node.stdout.fileno(), 4096).decode("utf-8", "replace")
            if "\x7f" in text:
                node.waiting = False
            output(text.replace("\x7f", ""))
    return not node.waiting


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = open(f"/proc/{entry}/stat").read()
                parent = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
