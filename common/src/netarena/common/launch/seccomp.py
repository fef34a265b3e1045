"""The route container's own seccomp profile, instead of ``seccomp=unconfined``.

Docker's default profile refuses ``pivot_root``, which bubblewrap (the agents' sandbox on
every route node) needs, so route used to run with no profile at all. This one allows what
the emulator needs and nothing it does not: the everyday system calls of Docker's default
allowlist, the namespace and mount calls that Docker's profile grants only with
CAP_SYS_ADMIN (route's container has it) plus ``pivot_root``; it leaves out, among
others, ``bpf``, ``perf_event_open``, ``io_uring_*``, ``ptrace``, ``process_vm_*``,
``kexec_*``, module loading, keyrings, ``userfaultfd``, ``setdomainname``, ``syslog``,
``quotactl`` and ``AF_VSOCK`` sockets. Without an ``architectures`` list the engine allows
the native ABI only (no x32 or i386 calls on x86-64). Every agent command still runs under
the evaluator's own, much narrower filter.

``PROFILE_FILE`` is the name compose files refer to; ``docker/netarena-route-seccomp.json``
and ``scenarios/route/netarena-route-seccomp.json`` are this profile (a test keeps them
equal). Measured (docs/agentbeats.md, "Route's privileges") by running the route app under
this filter, loaded through libseccomp as the engine loads it, with exactly route's
capabilities.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PROFILE_FILE", "route_profile", "profile_text"]

PROFILE_FILE = "netarena-route-seccomp.json"
"""The profile's file name next to a compose file."""

_EVERYDAY = """
accept accept4 access adjtimex alarm bind brk capget capset chdir chmod chown chown32
clock_adjtime clock_adjtime64 clock_getres clock_getres_time64 clock_gettime clock_gettime64
clock_nanosleep clock_nanosleep_time64 close close_range connect copy_file_range creat dup
dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old epoll_pwait epoll_pwait2
epoll_wait epoll_wait_old eventfd eventfd2 execve execveat exit exit_group faccessat
faccessat2 fadvise64 fadvise64_64 fallocate fanotify_mark fchdir fchmod fchmodat fchown
fchown32 fchownat fcntl fcntl64 fdatasync fgetxattr flistxattr flock fork fremovexattr
fsetxattr fstat fstat64 fstatat64 fstatfs fstatfs64 fsync ftruncate ftruncate64 futex
futex_time64 futex_waitv futimesat getcpu getcwd getdents getdents64 getegid getegid32
geteuid geteuid32 getgid getgid32 getgroups getgroups32 getitimer getpeername getpgid
getpgrp getpid getppid getpriority getrandom getresgid getresgid32 getresuid getresuid32
getrlimit get_robust_list getrusage getsid getsockname getsockopt get_thread_area gettid
gettimeofday getuid getuid32 getxattr inotify_add_watch inotify_init inotify_init1
inotify_rm_watch io_cancel ioctl io_destroy io_getevents io_pgetevents io_pgetevents_time64
ioprio_get ioprio_set io_setup io_submit ipc kill landlock_add_rule landlock_create_ruleset
landlock_restrict_self lchown lchown32 lgetxattr link linkat listen listxattr llistxattr
_llseek lremovexattr lseek lsetxattr lstat lstat64 madvise membarrier memfd_create
memfd_secret mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mmap2 mprotect
mq_getsetattr mq_notify mq_open mq_timedreceive mq_timedreceive_time64 mq_timedsend
mq_timedsend_time64 mq_unlink mremap msgctl msgget msgrcv msgsnd msync munlock munlockall
munmap name_to_handle_at nanosleep newfstatat _newselect open openat openat2 pause
pidfd_open pidfd_send_signal pipe pipe2 pkey_alloc pkey_free pkey_mprotect poll ppoll
ppoll_time64 prctl pread64 preadv preadv2 prlimit64 process_mrelease pselect6
pselect6_time64 pwrite64 pwritev pwritev2 read readahead readlink readlinkat readv recv
recvfrom recvmmsg recvmmsg_time64 recvmsg remap_file_pages removexattr rename renameat
renameat2 restart_syscall rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask
rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait rt_sigtimedwait_time64
rt_tgsigqueueinfo sched_getaffinity sched_getattr sched_getparam sched_get_priority_max
sched_get_priority_min sched_getscheduler sched_rr_get_interval sched_rr_get_interval_time64
sched_setaffinity sched_setattr sched_setparam sched_setscheduler sched_yield seccomp select
semctl semget semop semtimedop semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg
sendto setfsgid setfsgid32 setfsuid setfsuid32 setgid setgid32 setgroups setgroups32
setitimer setpgid setpriority setregid setregid32 setresgid setresgid32 setresuid
setresuid32 setreuid setreuid32 setrlimit set_robust_list setsid setsockopt set_thread_area
set_tid_address setuid setuid32 setxattr shmat shmctl shmdt shmget shutdown sigaltstack
signalfd signalfd4 sigprocmask sigreturn socketcall socketpair splice stat stat64 statfs
statfs64 statx symlink symlinkat sync sync_file_range syncfs sysinfo tee tgkill time
timer_create timer_delete timer_getoverrun timer_gettime timer_gettime64 timer_settime
timer_settime64 timerfd_create timerfd_gettime timerfd_gettime64 timerfd_settime
timerfd_settime64 times tkill truncate truncate64 ugetrlimit umask uname unlink unlinkat
utime utimensat utimensat_time64 utimes vfork vmsplice wait4 waitid waitpid write writev
arch_prctl modify_ldt
""".split()
"""Files, memory, processes, signals, time, sockets, IPC and ids: Docker's default allowlist
without ``io_uring_*`` and the ``ptrace`` family (x86's ``arch_prctl`` and ``modify_ldt``
included, as Docker includes them there)."""

_NAMESPACES = """
clone clone3 unshare setns mount umount umount2 pivot_root fsopen fsconfig fsmount fspick
move_mount open_tree mount_setattr sethostname
""".split()
"""What building nodes takes: new namespaces (any ``clone`` flags), joining them, mounts
(the classic call and the new mount API), and for bubblewrap ``pivot_root`` and
``sethostname`` (each sandbox is named after its node, in a UTS namespace of its own)."""

_PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)
"""``personality`` values allowed (Linux, ``UNAME26``, ``ADDR_NO_RANDOMIZE`` and both; the
query ``0xffffffff``), as Docker's profile allows."""

_AF_VSOCK = 40


def route_profile() -> dict[str, Any]:
    """The profile, in the engine's JSON format (``docker run --security-opt seccomp=``)."""
    return {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 1,
        "syscalls": [
            {"names": sorted(set(_EVERYDAY)), "action": "SCMP_ACT_ALLOW",
             "comment": "everyday calls (Docker's default allowlist, less io_uring and ptrace)"},
            {"names": sorted(set(_NAMESPACES)), "action": "SCMP_ACT_ALLOW",
             "comment": "namespaces and mounts for the nodes; pivot_root for bubblewrap"},
            {"names": ["socket"], "action": "SCMP_ACT_ALLOW", "comment": "no AF_VSOCK",
             "args": [{"index": 0, "value": _AF_VSOCK, "op": "SCMP_CMP_NE"}]},
            *({"names": ["personality"], "action": "SCMP_ACT_ALLOW",
               "args": [{"index": 0, "value": value, "op": "SCMP_CMP_EQ"}]}
              for value in _PERSONALITIES),
        ],
    }


def profile_text() -> str:
    """The profile as the file holds it (stable: sorted names, two-space indent)."""
    return json.dumps(route_profile(), indent=2) + "\n"
