"""Run a command under a Docker-format seccomp profile, loaded through libseccomp as runc does.

``python -m tests.helpers.seccomp_profile PROFILE.json CAPS COMMAND...`` loads the profile
(default action, allowed names, argument comparisons; names this architecture lacks are
skipped, as the engine skips them; no ``no_new_privs``, as the engine loads it with
CAP_SYS_ADMIN), keeps only the comma-separated capabilities CAPS in the bounding set (``all``
keeps them all) and execs COMMAND: a container's view of the kernel, without a container
engine.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
from typing import Any

import pyseccomp as seccomp

__all__ = ["load_profile"]

_OPS = {"SCMP_CMP_EQ": seccomp.EQ, "SCMP_CMP_NE": seccomp.NE}


def load_profile(profile: dict[str, Any]) -> None:
    """Install ``profile`` on this process (inherited by everything it runs)."""
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    filt = seccomp.SyscallFilter(defaction=seccomp.ERRNO(profile.get("defaultErrnoRet",
                                                                     errno.EPERM)))
    filt.set_attr(seccomp.Attr.CTL_NNP, 0)
    for rule in profile["syscalls"]:
        assert rule["action"] == "SCMP_ACT_ALLOW"
        args = [seccomp.Arg(a["index"], _OPS[a["op"]], a["value"]) for a in rule.get("args", [])]
        for name in rule["names"]:
            try:
                filt.add_rule(seccomp.ALLOW, name, *args)
            except (RuntimeError, ValueError, OSError):
                continue  # not a system call of this architecture
    filt.load()


def main(argv: list[str]) -> None:
    """Load the profile, narrow the capabilities, exec the command."""
    path, caps, *command = argv
    with open(path) as f:
        load_profile(json.load(f))
    if caps != "all":
        keep = {f"cap_{c.lower().removeprefix('cap_')}" for c in caps.split(",")}
        capsh = shutil.which("capsh")
        assert capsh, "capsh (libcap2-bin) is needed to narrow the capabilities"
        every = [f"cap_{n}" for n in _CAP_NAMES]
        drop = ",".join(c for c in every if c not in keep)
        os.execv(capsh, [capsh, f"--drop={drop}", "--", "-c", 'exec "$0" "$@"', *command])
    os.execvp(command[0], command)


_CAP_NAMES = (
    "chown dac_override dac_read_search fowner fsetid kill setgid setuid setpcap "
    "linux_immutable net_bind_service net_broadcast net_admin net_raw ipc_lock ipc_owner "
    "sys_module sys_rawio sys_chroot sys_ptrace sys_pacct sys_admin sys_boot sys_nice "
    "sys_resource sys_time sys_tty_config mknod lease audit_write audit_control setfcap "
    "mac_override mac_admin syslog wake_alarm block_suspend audit_read perfmon bpf "
    "checkpoint_restore"
).split()


if __name__ == "__main__":
    main(sys.argv[1:])
