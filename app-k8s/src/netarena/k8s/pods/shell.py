"""``kubectl exec POD -- CMD``: the pod's container, answering from the cluster state.

What a container holds is its image's (``images``): the distroless and chiseled images of
the Go services and cartservice have no shell and no tool, so every exec fails to start as
containerd reports it; the Alpine and BusyBox images offer the network tools of ``probes``
(nc, wget, nslookup; curl only where the image has it), ``ping``, the files, environment and
identity of the pod (``busybox``) and their runtime (``runtimes``). ``sh -c SCRIPT`` runs a
script of them joined by ``;``, ``&&``, ``||`` and pipes into filters, with ``$VAR`` taken
from the container's environment. A command the image lacks is "not found", from the shell
and from exec alike.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
import time
from typing import Any

from netarena.common.core.errors import ForbiddenCommand, InvalidAction
from netarena.k8s.apiserver.podruntime import ExecResult
from netarena.k8s.commandline import parse_script
from netarena.k8s.pods import busybox
from netarena.k8s.pods.images import image_of
from netarena.k8s.pods.probes import (
    ClusterView,
    curl,
    flag_value,
    is_ip,
    nc,
    nslookup,
    wget,
)
from netarena.k8s.pods.runtimes import run_runtime
from netarena.k8s.policy import PodView
from netarena.k8s.policy_matrix import resolves

__all__ = ["run_in_pod"]

_MAX_WAIT_S = 30.0
"""Longest a probe blocks (a connect without a timeout flag waits for the kernel's ~2 min)."""
_SHELLS = ("sh", "ash")
_FILTERS = ("grep", "head", "tail", "wc", "cat")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class _Container:
    """One exec's view: the pod, its environment and the cluster it runs in."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]], pod: dict[str, Any]) -> None:
        self.pod = pod
        self.objects = objects
        self.cluster = ClusterView(objects)
        self.src = PodView.from_obj(pod)
        self.env = busybox.environment(pod, objects["Service"])
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        self.image = image_of(str(containers[0].get("image") or ""))

    def run(self, argv: list[str]) -> ExecResult:
        """One command (no shell)."""
        tool = argv[0].rsplit("/", 1)[-1] if argv else ""
        if not self.image.has(tool):
            return ExecResult("", "", -1)  # not found: the caller words it
        if tool in self.image.runtimes:
            return run_runtime(tool, self.cluster, self.src, argv)
        if tool == "which":
            found = [a for a in argv[1:] if self.image.has(a)]
            return ExecResult("".join(f"/usr/bin/{a}\n" for a in found), "",
                              0 if len(found) == len(argv[1:]) else 1)
        if tool in (*_SHELLS, "bash"):
            return self.shell(argv)
        if tool == "nc":
            return nc(self.cluster, self.src, argv)
        if tool == "wget":
            return wget(self.cluster, self.src, argv)
        if tool == "curl":
            return curl(self.cluster, self.src, argv)
        if tool == "nslookup":
            return nslookup(self.cluster, self.src, argv)
        if tool == "ping":
            return self.ping(argv)
        if tool in ("cat", "ls", "env", "printenv"):
            return self.files(tool, argv[1:])
        return self.small(tool, argv[1:])

    def files(self, tool: str, args: list[str]) -> ExecResult:
        """``cat``, ``ls``, ``env``, ``printenv``."""
        paths = [a for a in args if not a.startswith("-")]
        if tool in ("env", "printenv"):
            if tool == "printenv" and paths:
                found = [ln.split("=", 1)[1] for p in paths for ln in self.env
                         if ln.split("=", 1)[0] == p]
                return ExecResult("".join(v + "\n" for v in found), "", 0 if found else 1)
            return ExecResult("".join(ln + "\n" for ln in self.env), "", 0)
        out, err, code = [], [], 0
        long = any(a.startswith("-") and "l" in a for a in args)
        for path in paths or (["."] if tool == "ls" else []):
            path = "/" if path == "." else path
            text, error = (busybox.read_file(self.pod, path, self.image.os_release)
                           if tool == "cat"
                           else busybox.list_dir(path, long))
            if text is None:
                err.append(error)
                code = 1
            else:
                out.append(text)
        return ExecResult("".join(out), "".join(err), code)

    def small(self, tool: str, args: list[str]) -> ExecResult:
        """The applets that need no cluster state."""
        name = self.pod["metadata"]["name"]
        if tool == "echo":
            newline = "" if args[:1] == ["-n"] else "\n"
            return ExecResult(" ".join(args[1:] if not newline else args) + newline, "", 0)
        if tool == "sleep":
            seconds = args[0] if args else ""
            if not seconds.replace(".", "", 1).isdigit():
                return ExecResult("", f"sleep: invalid number '{seconds}'\n", 1)
            return ExecResult("", "", 0, float(seconds))
        answers = {
            "hostname": name + "\n", "pwd": "/\n", "date": busybox.date_line(time.time()),
            "id": "uid=1000 gid=1000 groups=1000\n",
            "uname": (f"Linux {name} 6.8.0-49-generic #49-Ubuntu SMP x86_64 GNU/Linux\n"
                      if "-a" in args else "Linux\n"),
            "true": "",
        }
        if tool in answers:
            return ExecResult(answers[tool], "", 0)
        if tool == "whoami":
            return ExecResult("", "whoami: unknown uid 1000\n", 1)
        if tool in ("grep", "head", "tail", "wc"):  # reading an empty stdin
            return ExecResult(*busybox.filter_output([tool, *args], ""))
        return ExecResult("", "", 1)  # false

    def ping(self, argv: list[str]) -> ExecResult:
        """Busybox ``ping``: ICMP as NetworkPolicy enforcement treats it."""
        hosts = [a for i, a in enumerate(argv[1:], 1) if not a.startswith("-")
                 and argv[i - 1] not in ("-c", "-W", "-w", "-s", "-i")]
        if not hosts:
            return ExecResult("", "BusyBox v1.37.0 multi-call binary.\n\nUsage: ping [OPTIONS] "
                                  "HOST\n", 1)
        host = hosts[-1]
        count = max(1, int(flag_value(argv, ("-c",), 4)))
        ip = host if is_ip(host) else None
        if ip is None:
            svc = self.cluster.lookup(host, self.src.namespace)
            if svc is None or not resolves(self.cluster.engine, self.src, self.cluster.dns):
                return ExecResult("", f"ping: bad address '{host}'\n", 1)
            ip = str((svc.get("spec") or {}).get("clusterIP"))
        dst = next((v for v in self.cluster.engine.views if ip in v.ips), None)
        reply = dst is not None and busybox.icmp_allowed(self.cluster.engine, self.src, dst)
        rng = random.Random(f"{self.src.name}/{ip}")
        text, code = busybox.ping_lines(host, ip, count, reply,
                                        lambda: rng.uniform(0.05, 0.4))
        return ExecResult(text, "", code, 0.0 if reply else float(count))

    def shell(self, argv: list[str]) -> ExecResult:
        """``sh``, ``sh -c SCRIPT``: without a script it reads an empty stdin and exits."""
        if len(argv) >= 3 and argv[1] == "-c":
            return self.script(argv[2])
        if len(argv) == 1 or all(a.startswith("-") for a in argv[1:]):
            return ExecResult("", "", 0)
        return ExecResult("", f"sh: can't open '{argv[1]}': No such file or directory\n", 2)

    def script(self, text: str) -> ExecResult:
        """Run ``sh -c`` text: commands joined by ``;``/``&&``/``||``/newlines and pipes."""
        values = dict(ln.split("=", 1) for ln in self.env)
        text = _VAR.sub(lambda m: values.get(m.group(1) or m.group(2), ""), text)
        try:
            script = parse_script(text)
        except ForbiddenCommand as exc:
            target = re.search(r"redirection \S+ (\S+)", str(exc))
            if target:
                return ExecResult("", f"sh: can't create {target.group(1)}: Read-only file "
                                      "system\n", 1)
            return ExecResult("", "sh: command substitution is not available in this "
                                  "container\n", 2)
        except InvalidAction as exc:
            reason = str(exc).removeprefix("cannot parse command: ")
            if "quote" in reason:
                reason = "unterminated quoted string"
            return ExecResult("", f"sh: syntax error: {reason}\n", 2)
        out, err, code, wait = [], [], 0, 0.0
        i = 0
        cmds, joins = script.commands, script.joins
        while i < len(cmds):
            result = self._simple(cmds[i].argv, cmds[i].redirects)
            while i < len(joins) and joins[i] == "|":
                i += 1
                result = self._pipe(result, cmds[i].argv)
            out.append(result.stdout)
            err.append(result.stderr)
            code, wait = result.exit_code, wait + result.wait_s
            join = joins[i] if i < len(joins) else ""
            i += 1
            while (join == "&&" and code != 0) or (join == "||" and code == 0):
                if i >= len(cmds):  # skip the next command (and its pipeline)
                    break
                while i < len(joins) and joins[i] == "|":
                    i += 1
                join = joins[i] if i < len(joins) else ""
                i += 1
        return ExecResult("".join(out), "".join(err), code, wait)

    def _simple(self, argv: list[str], redirects: list[str]) -> ExecResult:
        result = self.run(argv)
        if result.exit_code == -1:
            result = ExecResult("", f"bash: line 1: {argv[0]}: command not found\n"
                                if self.image.shell == "bash" else f"sh: {argv[0]}: not found\n",
                                127)
        stdout, stderr = result.stdout, result.stderr
        if ">&1" in redirects:
            stdout, stderr = stdout + stderr, ""
        if any(r.endswith("/dev/null") for r in redirects):
            stdout = ""
        return ExecResult(stdout, stderr, result.exit_code, result.wait_s)

    def _pipe(self, left: ExecResult, argv: list[str]) -> ExecResult:
        tool = argv[0].rsplit("/", 1)[-1] if argv else ""
        if tool not in _FILTERS or not self.image.has(tool):
            return ExecResult("", left.stderr + f"sh: {tool}: not found\n", 127, left.wait_s)
        if tool == "cat":
            return left
        out, err, code = busybox.filter_output(argv, left.stdout)
        return ExecResult(out, left.stderr + err, code, left.wait_s)


def run_in_pod(objects: dict[str, list[dict[str, Any]]], pod: dict[str, Any],
               command: list[str], stop: threading.Event | None = None) -> ExecResult:
    """Run ``command`` in ``pod`` against the cluster's ``objects`` and wait as the tool would.

    Args:
        objects: Lists of every ``Pod``, ``Namespace``, ``NetworkPolicy`` and ``Service``.
        pod: The pod the command runs in.
        command: argv as ``kubectl exec`` passes it.
        stop: Set when the server shuts down (cuts a timeout's wait short).
    """
    result = _Container(objects, pod).run(command)
    if result.exit_code == -1:
        exec_id = hashlib.sha256(f"{pod['metadata'].get('uid')}/{command}/{time.time()}"
                                 .encode()).hexdigest()
        return ExecResult("", "Internal error occurred: error executing command in container: "
                              f'failed to exec in container: failed to start exec "{exec_id}": '
                              "OCI runtime exec failed: exec failed: unable to start container "
                              f'process: exec: "{command[0] if command else ""}": executable '
                              "file not found in $PATH: unknown", -1)
    if result.wait_s and stop is not None:
        stop.wait(min(result.wait_s, _MAX_WAIT_S))
    return result
