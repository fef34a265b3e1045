#!/bin/sh
# Health check of every NetArena image: `netarena-healthcheck` exits 0 when the server in this
# container answers GET /healthz, whatever port it was started on (green agents use 9009 and
# purple agents 9019 in the leaderboard manifests; `--port` may say anything). It asks every
# TCP port listening in the container's network namespace, read from /proc/net/tcp{,6}, at
# the address it listens on (loopback for a wildcard); curl is in every image.
# NETARENA_HEALTH_PORT, when set, names the port instead.
set -u
probe() { curl -fsS -m 1 -o /dev/null "http://$1:$2/healthz" 2>/dev/null; }
if [ -n "${NETARENA_HEALTH_PORT:-}" ]; then
  probe 127.0.0.1 "$NETARENA_HEALTH_PORT"; exit $?
fi
listening() {  # "address port" per listening socket (st 0A), IPv4 then IPv6
  for table in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$table" ] || continue
    while read -r _ local _ st _; do
      [ "$st" = 0A ] || continue
      hex=${local%:*}
      port=$(printf %d "0x${local##*:}")
      case "$hex" in
        00000000) echo "127.0.0.1 $port" ;;
        00000000000000000000000000000000 | 00000000000000000000000001000000) echo "[::1] $port" ;;
        ????????)  # little-endian IPv4
          echo "$(printf '%d.%d.%d.%d' "0x${hex#??????}" "0x$(echo "$hex" | cut -c5-6)" \
            "0x$(echo "$hex" | cut -c3-4)" "0x$(echo "$hex" | cut -c1-2)") $port" ;;
      esac
    done < "$table"
  done
}
listening | sort -u | while read -r address port; do
  probe "$address" "$port" && exit 7
done
[ $? = 7 ]
