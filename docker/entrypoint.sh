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
fi
exec netarena "$@"
