#!/usr/bin/env bash
# Reproduces an AgentBeats leaderboard run with docker compose, one app at a time: the same
# shape as the leaderboard's generated compose file (green agent, purple participant, client;
# every container healthchecked with curl against its agent card; the client starts once all
# are healthy and sends one assessment request over A2A 0.3 message/stream, as AgentBeats'
# client and gateway do), then checks the results file the leaderboard would store.
#
#   scripts/agentbeats_compose.sh [APP...]          (default: malt route k8s)
#
# Needs the images (scripts/containers.sh build) and compose: the plugin (`docker compose`)
# when installed, else Debian's docker-compose 1.29 (or set COMPOSE). Environment:
#   TAG            image tag (default latest)
#   COMPOSE_OUT    where compose files, logs and results go (default runs/agentbeats-compose)
#   QUERIES        queries per app (default 6); SEED (default 11)
#   NETWORK        shared (default): the containers share the purple container's network
#                  namespace and talk over its loopback, which works on engines without a
#                  default bridge (dockerd --bridge=none) and publishes nothing on the host;
#                  bridge: a compose network with service names, exactly as the leaderboard's.
#   NETARENA       the netarena command (default .venv/bin/netarena, else netarena on PATH)
# The compose file is written by `netarena compose` (common/src/netarena/common/launch/compose.py), which gives route's
# green container the privileges netarena.common.launch.privileges lists (capabilities and the
# seccomp profile, written next to it, that the leaderboard's generated compose files cannot
# express) and the green server a fresh bearer token that only the client holds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
TAG="${TAG:-latest}"
QUERIES="${QUERIES:-6}"
SEED="${SEED:-11}"
NETWORK="${NETWORK:-shared}"
if [ -z "${NETARENA:-}" ]; then
  if [ -x .venv/bin/netarena ]; then NETARENA="$ROOT/.venv/bin/netarena"; else NETARENA=netarena; fi
fi
if [ -z "${COMPOSE:-}" ]; then  # the compose plugin where installed, else Debian's docker-compose
  if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"; else COMPOSE=docker-compose; fi
fi
OUT="$(mkdir -p "${COMPOSE_OUT:-runs/agentbeats-compose}" && cd "${COMPOSE_OUT:-runs/agentbeats-compose}" && pwd)"
APPS=("${@:-malt route k8s}")
read -r -a APPS <<< "${APPS[*]}"
say() { echo "agentbeats-compose: $*" >&2; }

compose_file() {
  local app="$1"
  "$NETARENA" compose "$app" --purple "netarena-purple:$TAG" --green "netarena-$app:$TAG" \
    -e NETARENA_SOLVER=reference --network "$NETWORK" \
    --config "{\"num_queries\": $((QUERIES * 2)), \"seed\": $SEED, \"num_shards\": 2, \"shard_index\": 0, \"num_instances\": $((QUERIES * 2))}" \
    --client-out "$OUT/$app" \
    --client-user "$(id -u):$(id -g)" --expect-correctness 1.0 \
    --seccomp-file "$OUT/$app/netarena-route-seccomp.json" --out "$OUT/$app/docker-compose.yml"
}

run_app() {
  local app="$1" dir="$OUT/$1" project="netarena-ab-$1" start=$SECONDS rc=0
  mkdir -p "$dir"
  rm -f "$dir/results.json"
  compose_file "$app" >/dev/null  # the compose file (with a fresh token) and route's profile
  say "$app: $dir/docker-compose.yml"
  $COMPOSE -f "$dir/docker-compose.yml" -p "$project" up --no-color \
    --exit-code-from agentbeats-client --abort-on-container-exit > "$dir/compose.log" 2>&1 || rc=$?
  $COMPOSE -f "$dir/docker-compose.yml" -p "$project" down -v --remove-orphans >/dev/null 2>&1 || true
  if [ "$rc" != 0 ] || [ ! -s "$dir/results.json" ]; then
    say "$app FAILED (exit $rc); last log lines:"
    tail -40 "$dir/compose.log" >&2
    return 1
  fi
  say "$app passed in $((SECONDS - start))s: $(grep -h 'queries in' "$dir/compose.log" | sed 's/.*smoke: //' | tail -1)"
}

failed=()
for app in "${APPS[@]}"; do run_app "$app" || failed+=("$app"); done
if [ ${#failed[@]} -gt 0 ]; then say "failed: ${failed[*]}"; exit 1; fi
say "all passed: ${APPS[*]} (results files in $OUT/<app>/results.json)"
