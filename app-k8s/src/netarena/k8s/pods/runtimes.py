"""The language runtimes and clients some images carry, as far as a probe needs them.

``python3 -c`` with a socket connect (``socket.create_connection(("cartservice", 7070),
2)``) and ``redis-cli -h HOST -p PORT ping`` are answered from the policy engine, with the
errors the real runtime prints; ``--version`` prints the image's version. Anything else a
runtime is asked to run is refused with a short note: the emulated container answers
probes, it does not run programs.
"""

from __future__ import annotations

import re

from netarena.k8s.apiserver.podruntime import ExecResult
from netarena.k8s.pods.images import RUNTIME_VERSIONS
from netarena.k8s.pods.probes import ClusterView, flag_value, outcome
from netarena.k8s.policy import PodView

__all__ = ["run_runtime"]

_CONNECT = re.compile(r"""(?:create_connection|connect)\(\s*\(\s*['"]([^'"]+)['"]\s*,"""
                      r"""\s*(\d+)\s*\)""")
_TIMEOUT = re.compile(r"""(?:create_connection\(\s*\([^)]*\)\s*,\s*(?:timeout\s*=\s*)?"""
                      r"""|settimeout\()\s*([\d.]+)""")
_TRACE = ('Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n'
          '  File "/usr/local/lib/python3.14/socket.py", line {line}, in create_connection\n')


def _python(cluster: ClusterView, src: PodView, argv: list[str]) -> ExecResult:
    code = argv[argv.index("-c") + 1] if "-c" in argv[:-1] else ""
    m = _CONNECT.search(code)
    if m is None:
        return ExecResult("", f"{argv[0]}: only socket connection probes run in this "
                              "container (python3 -c 'import socket; socket.create_connection"
                              "((HOST, PORT), 2)')\n", 1)
    host, port = m.group(1), int(m.group(2))
    wait_m = _TIMEOUT.search(code)
    wait = float(wait_m.group(1)) if wait_m else 127.0
    state, _ = outcome(cluster, src, host, port)
    if state in ("open", "http"):
        return ExecResult("", "", 0)
    if state == "dns":
        return ExecResult("", _TRACE.format(line=828) + "    for res in getaddrinfo(host, port,"
                              " 0, SOCK_STREAM):\nsocket.gaierror: [Errno -3] Try again\n", 1)
    if state == "refused":
        return ExecResult("", _TRACE.format(line=864) + "    raise exceptions[0]\n"
                              "ConnectionRefusedError: [Errno 111] Connection refused\n", 1)
    return ExecResult("", _TRACE.format(line=864) + "    raise exceptions[0]\nTimeoutError: "
                          "timed out\n", 1, wait)


def _redis(cluster: ClusterView, src: PodView, argv: list[str]) -> ExecResult:
    host = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-h"), "127.0.0.1")
    port = int(flag_value(argv, ("-p",), 6379))
    if host in ("127.0.0.1", "localhost") and "redis" in (src.labels.get("app") or ""):
        return ExecResult("PONG\n", "", 0)
    state, _ = outcome(cluster, src, host, port)
    if state in ("open", "http"):
        return ExecResult("PONG\n", "", 0)
    why = {"dns": "Name does not resolve", "refused": "Connection refused"}.get(
        state, "Connection timed out")
    return ExecResult(f"Could not connect to Redis at {host}:{port}: {why}\n", "", 1,
                      0.0 if state != "timeout" else 10.0)


def run_runtime(tool: str, cluster: ClusterView, src: PodView, argv: list[str]) -> ExecResult:
    """Run ``argv`` with the runtime ``tool`` (``python3``, ``node``, ``java``, ``redis-cli``)."""
    if any(a in ("--version", "-V", "-version", "version", "-v") for a in argv[1:2]):
        text = RUNTIME_VERSIONS.get(tool, tool) + "\n"
        return ExecResult("", text, 0) if tool == "java" else ExecResult(text, "", 0)
    if tool in ("python3", "python"):
        return _python(cluster, src, argv)
    if tool == "redis-cli":
        return _redis(cluster, src, argv)
    return ExecResult("", f"{tool}: only version checks run in this container; probe with "
                          "nc, wget or nslookup\n", 1)
