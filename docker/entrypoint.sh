#!/bin/sh
# Entrypoint of every NetArena image: `netarena-entrypoint <netarena args...>`.
# Images whose emulator creates network namespaces (route) set NETARENA_NEEDS_NETNS=1; without
# the privileges for that, fail at start with the fix instead of failing every query later.
# Measured (docs/agentbeats.md, "Route's privileges"), exactly these work, and nothing less:
#   --cap-drop ALL --cap-add CHOWN --cap-add DAC_OVERRIDE --cap-add KILL --cap-add NET_ADMIN
#   --cap-add NET_RAW --cap-add SETGID --cap-add SETUID --cap-add SYS_ADMIN --cap-add SYS_PTRACE
#   --security-opt seccomp=netarena-route-seccomp.json
# - NET_ADMIN and SYS_ADMIN: the namespaces. Each namespace's sysctls need a writable
#   /proc/sys, which Docker mounts read-only: with CAP_SYS_ADMIN this script remounts it
#   read-write in the container's own mount namespace (where an AppArmor profile forbids that,
#   add --security-opt apparmor=unconfined).
# - Each node's namespaces belong to a user namespace of its own, whose root is an
#   unprivileged uid (SETUID, SETGID; DAC_OVERRIDE writes its uid_map, CHOWN its files): the
#   kernel lets it mount the node's /sys only where /sys is read-write with no masked paths
#   (Docker mounts it read-only and hides /sys/firmware), so this script remounts /sys
#   read-write and lifts the tmpfs masks under it; SYS_PTRACE lets the evaluator (root) open
#   the namespaces of those processes of another uid, KILL end them; NET_RAW: probes.
# - The seccomp profile (netarena.common.launch.seccomp; `netarena compose route --out` writes
#   it): Docker's default refuses pivot_root, which bubblewrap (agents' commands) needs.
set -eu
CAPS="CHOWN DAC_OVERRIDE KILL NET_ADMIN NET_RAW SETGID SETUID SYS_ADMIN SYS_PTRACE"
FLAGS="--cap-drop ALL$(for c in $CAPS; do printf ' --cap-add %s' "$c"; done) --security-opt seccomp=netarena-route-seccomp.json"
fix="run it with 'docker run $FLAGS ...' (compose: cap_drop: [ALL], cap_add: [$(echo $CAPS | sed 's/ /, /g')], security_opt: [seccomp=./netarena-route-seccomp.json], the profile written by 'netarena compose route --out DIR/docker-compose.yml'), as root inside the container"
fail() { echo "netarena: $* $fix." >&2; exit 1; }
sysctl_ok() { unshare --net sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward' 2>/dev/null; }
as_other() { setpriv --reuid=65533 --regid=65533 --clear-groups "$@"; }
node_ok() { as_other unshare --user --keep-caps -- mnexec -cdn true 2>/dev/null; }
ptrace_ok() {  # setpriv itself in the background (not as_other): $! must be the other uid's pid
  setpriv --reuid=65533 --regid=65533 --clear-groups sleep 5 & other=$!
  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do  # until it is the other uid
    grep -q '^Uid:[[:space:]]*65533' "/proc/$other/status" 2>/dev/null && break
    sleep 0.1
  done
  readlink "/proc/$other/ns/user" >/dev/null 2>&1; ok=$?
  kill "$other" 2>/dev/null || true
  return "$ok"
}
sandbox_ok() { bwrap --ro-bind / / true 2>/dev/null; }
caps_missing() {  # the capabilities of $CAPS not in this process's bounding set
  bnd=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
  for pair in CHOWN:0 DAC_OVERRIDE:1 KILL:5 SETGID:6 SETUID:7 NET_ADMIN:12 NET_RAW:13 \
              SYS_PTRACE:19 SYS_ADMIN:21; do
    [ $(( (0x$bnd >> ${pair#*:}) & 1 )) = 1 ] || printf ' CAP_%s' "${pair%%:*}"
  done
}
lift_sys_masks() {
  mount -o remount,rw /sys 2>/dev/null || true
  awk '$5 ~ "^/sys/" && $5 !~ "^/sys/fs/cgroup" && $9 == "tmpfs" {print $5}' /proc/self/mountinfo |
    sort -r | while read -r masked; do umount "$masked" 2>/dev/null || true; done
}
if [ "${NETARENA_NEEDS_NETNS:-0}" = 1 ]; then
  missing=$(caps_missing)
  [ -z "$missing" ] || fail "this image builds the route emulator's nodes and lacks$missing."
  unshare --net true 2>/dev/null || fail "this image creates network namespaces (route" \
    "emulator) and may not: it lacks CAP_NET_ADMIN and CAP_SYS_ADMIN."
  sysctl_ok || { mount -o remount,rw /proc/sys 2>/dev/null && sysctl_ok; } || fail "/proc/sys" \
    "is read-only here and cannot be remounted read-write, so the route emulator cannot set" \
    "each namespace's sysctls (ip_forward); where AppArmor forbids the remount, add" \
    "--security-opt apparmor=unconfined."
  node_ok || { lift_sys_masks; node_ok; } || fail "a route node cannot start in a user" \
    "namespace of its own here: mounting its /sys needs /sys read-write with no masked" \
    "paths, which this script could not arrange (or add --security-opt systempaths=unconfined;" \
    "on Ubuntu >= 23.10 hosts, also sysctl kernel.apparmor_restrict_unprivileged_userns=0)."
  ptrace_ok || fail "the evaluator cannot open the namespaces of its nodes' processes (they" \
    "run as another uid): it lacks CAP_SYS_PTRACE."
  sandbox_ok || fail "bubblewrap cannot build the agents' sandbox here (pivot_root refused," \
    "as by Docker's default seccomp profile; route's own profile allows it)."
fi
exec netarena "$@"
