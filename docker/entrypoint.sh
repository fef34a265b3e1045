#!/bin/sh
# Entrypoint of every NetArena image: `netarena-entrypoint <netarena args...>`.
# Images whose emulator creates network namespaces (route) set NETARENA_NEEDS_NETNS=1; without
# the privileges for that, fail at start with the fix instead of failing every query later.
# Measured (docs/agentbeats.md, "Route's privileges"): the narrowest set that works is
#   --cap-add NET_ADMIN --cap-add SYS_ADMIN
# (namespaces need both capabilities; each namespace's sysctls need a writable /proc/sys,
# which Docker mounts read-only: with CAP_SYS_ADMIN this script remounts it read-write in
# the container's own mount namespace; where an AppArmor profile forbids that, add
# --security-opt apparmor=unconfined, or --security-opt systempaths=unconfined).
# Each node's namespaces belong to a user namespace of its own, and the kernel lets a user
# namespace mount a node's /sys only where /sys is read-write with no masked paths (Docker
# mounts it read-only and hides /sys/firmware): with CAP_SYS_ADMIN this script remounts /sys
# read-write and lifts the masks under it, in the container's own mount namespace.
set -eu
sysctl_ok() { unshare --net sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward' 2>/dev/null; }
if [ "${NETARENA_NEEDS_NETNS:-0}" = 1 ]; then
  fix="run it with 'docker run --cap-add NET_ADMIN --cap-add SYS_ADMIN ...' (compose: cap_add: [NET_ADMIN, SYS_ADMIN]; or --privileged), as root inside the container"
  if ! unshare --net true 2>/dev/null; then
    echo "netarena: this image creates network namespaces (route emulator) and may not:" \
         "it lacks CAP_NET_ADMIN and CAP_SYS_ADMIN. $fix." >&2
    exit 1
  fi
  if ! sysctl_ok && ! { mount -o remount,rw /proc/sys 2>/dev/null && sysctl_ok; }; then
    echo "netarena: /proc/sys is read-only here and cannot be remounted read-write, so the" \
         "route emulator cannot set each namespace's sysctls (ip_forward). $fix; where" \
         "AppArmor forbids the remount, add --security-opt apparmor=unconfined." >&2
    exit 1
  fi
  node_ok() { setpriv --reuid=65533 --regid=65533 --clear-groups unshare --user --keep-caps -- mnexec -cdn true 2>/dev/null; }
  if ! node_ok; then
    mount -o remount,rw /sys 2>/dev/null || true
    for masked in $(awk '$5 ~ "^/sys/" && $5 !~ "^/sys/fs/cgroup" {print $5}' /proc/self/mountinfo | sort -r); do
      umount "$masked" 2>/dev/null || true
    done
  fi
  if ! node_ok; then
    echo "netarena: a route node cannot start in a user namespace of its own here: its /sys" \
         "mount needs /sys read-write with no masked paths, which this script could not" \
         "arrange. $fix; or add --security-opt systempaths=unconfined." >&2
    exit 1
  fi
fi
exec netarena "$@"
