#!/bin/sh
# Entrypoint of every NetArena image: `netarena-entrypoint <netarena args...>`.
# Images whose emulator creates network namespaces (route) set NETARENA_NEEDS_NETNS=1; without
# the privileges for that, fail at start with the fix instead of failing every query later.
set -eu
if [ "${NETARENA_NEEDS_NETNS:-0}" = 1 ] && ! unshare --net true 2>/dev/null; then
  echo "netarena: this image creates network namespaces (route emulator); run it with" \
       "'docker run --privileged ...' (as root inside the container)." >&2
  exit 1
fi
exec netarena "$@"
