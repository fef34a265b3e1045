#!/usr/bin/env bash
# Builds every NetArena image and runs a containerised smoke evaluation per app: the app's green
# container plus the reference purple container, and a client sending one evaluation request the
# way the AgentBeats gateway does (A2A 0.3 message/stream). Each green container must serve its
# agent card and the evaluation must complete with correctness 1.0.
#
#   scripts/containers.sh [build|smoke|all]       (default: all)
#
# Environment:
#   BASE_IMAGE      base for every image (default python:3.13-slim-bookworm). Without a
#                   reachable registry: docker/make-base-image.sh, then
#                   BASE_IMAGE=netarena-base:bookworm scripts/containers.sh
#   TAG             image tag (default latest); images are netarena-{malt,route,k8s,purple}
#   APPS            apps to smoke-test (default "malt route k8s")
#   SMOKE_QUERIES   queries per app (default 3); SMOKE_SEED (default 7)
#   SMOKE_NETWORK   bridge: a user-defined Docker network (default when the engine has its
#                           default bridge, else shared);
#                   shared: green and client join the purple container's private network
#                           namespace and talk over its loopback (for engines started with
#                           --bridge=none; nothing is exposed on the host);
#                   host:   the host's network, loopback, ports 291x9 (route then builds its
#                           namespaces from the host's network namespace)
#   BUILD_NETWORK   network for RUN steps at build time (default: host when the engine has no
#                   default bridge, else Docker's default)
#   ROUTE_FLAGS     docker run flags for the route green container (default: the narrowest set
#                   measured to work, --cap-add NET_ADMIN --cap-add SYS_ADMIN
#                   --cap-add SYS_PTRACE --security-opt seccomp=unconfined, with
#                   --security-opt apparmor=unconfined for AppArmor hosts; --privileged
#                   works too where the engine may grant it)
#   NETARENA_EXTRA_CA  PEM CA bundle to trust at build time (TLS-inspecting proxies)
#   SMOKE_OUT       where results files and build times go (default runs/containers)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
MODE="${1:-all}"
BASE_IMAGE="${BASE_IMAGE:-python:3.13-slim-bookworm}"
TAG="${TAG:-latest}"
APPS="${APPS:-malt route k8s}"
SMOKE_QUERIES="${SMOKE_QUERIES:-3}"
SMOKE_SEED="${SMOKE_SEED:-7}"
SMOKE_NETWORK="${SMOKE_NETWORK:-}"
SMOKE_OUT="$(mkdir -p "${SMOKE_OUT:-runs/containers}" && cd "${SMOKE_OUT:-runs/containers}" && pwd)"
declare -A DOCKERFILE=([malt]=app-malt/Dockerfile [route]=app-route/Dockerfile
                       [k8s]=app-k8s/Dockerfile [purple]=a2a_llm/Dockerfile)
# What the route container needs (docs/agentbeats.md, "Route's privileges").
ROUTE_NARROW_FLAGS="--cap-add=NET_ADMIN --cap-add=SYS_ADMIN --cap-add=SYS_PTRACE"
ROUTE_NARROW_FLAGS+=" --security-opt=seccomp=unconfined --security-opt=apparmor=unconfined"
declare -A PORT=([malt]=29109 [route]=29209 [k8s]=29309)

say() { echo "containers: $*" >&2; }
docker info >/dev/null 2>&1 || { say "no Docker engine reachable (start dockerd)"; exit 2; }
if [ -z "$SMOKE_NETWORK" ]; then
  # An engine started with --bridge=none cannot make bridge networks: share a namespace instead.
  if docker network inspect bridge >/dev/null 2>&1; then SMOKE_NETWORK=bridge; else SMOKE_NETWORK=shared; fi
fi

build_network_args() {
  local net="${BUILD_NETWORK:-}"
  if [ -z "$net" ] && ! docker network inspect bridge >/dev/null 2>&1; then net=host; fi
  [ -n "$net" ] && echo "--network=$net"
  return 0
}

stage_context() {
  # Only what the images need, from the working tree (no .git, caches or local results).
  local ctx; ctx="$(mktemp -d /tmp/netarena-ctx.XXXXXX)"
  cp -r .dockerignore pyproject.toml README.md common app-malt app-route app-k8s a2a_llm docker "$ctx/"
  find "$ctx" -name __pycache__ -type d -prune -exec rm -rf {} +
  if [ -n "${NETARENA_EXTRA_CA:-}" ]; then cp "$NETARENA_EXTRA_CA" "$ctx/docker/ca-certificates/extra.crt"; fi
  echo "$ctx"
}

build() {
  local ctx; ctx="$(stage_context)"
  local netargs; netargs="$(build_network_args)"
  : > "$SMOKE_OUT/build-times.txt"
  for image in purple malt k8s route; do
    local start=$SECONDS
    say "building netarena-$image:$TAG from $BASE_IMAGE"
    # shellcheck disable=SC2086
    DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}" docker build $netargs -q \
      --build-arg "BASE_IMAGE=$BASE_IMAGE" -f "$ctx/${DOCKERFILE[$image]}" \
      -t "netarena-$image:$TAG" "$ctx" >/dev/null
    local took=$((SECONDS - start))
    say "built netarena-$image:$TAG in ${took}s"
    echo "netarena-$image:$TAG ${took}s" >> "$SMOKE_OUT/build-times.txt"
  done
  rm -rf "$ctx"
  docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^netarena-' >&2
}

STARTED=()
cleanup() {
  for c in "${STARTED[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  if [ "$SMOKE_NETWORK" = bridge ]; then docker network rm netarena-smoke >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

smoke_app() {
  local app="$1" green="netarena-smoke-$1-green" purple="netarena-smoke-$1-purple"
  local gport="${PORT[$app]}" pport=$(( ${PORT[$app]} + 10 ))
  local net_p net_g green_url purple_url
  case "$SMOKE_NETWORK" in
    bridge) net_p="--network=netarena-smoke"; net_g="$net_p"
            green_url="http://$green:$gport/"; purple_url="http://$purple:$pport/" ;;
    shared) net_p="--network=none"; net_g="--network=container:$purple"
            green_url="http://127.0.0.1:$gport/"; purple_url="http://127.0.0.1:$pport/" ;;
    host)   net_p="--network=host"; net_g="$net_p"
            green_url="http://127.0.0.1:$gport/"; purple_url="http://127.0.0.1:$pport/" ;;
    *) say "unknown SMOKE_NETWORK=$SMOKE_NETWORK"; return 2 ;;
  esac
  local priv=(); [ "$app" = route ] && read -r -a priv <<< "${ROUTE_FLAGS:-$ROUTE_NARROW_FLAGS}"
  docker rm -f "$green" "$purple" >/dev/null 2>&1 || true
  STARTED+=("$green" "$purple")
  docker run -d --name "$purple" "$net_p" "netarena-purple:$TAG" \
    --solver reference --app "$app" --host 0.0.0.0 --port "$pport" --card-url "$purple_url" >/dev/null
  docker run -d --name "$green" "$net_g" "${priv[@]}" "netarena-$app:$TAG" \
    --host 0.0.0.0 --port "$gport" --card-url "$green_url" >/dev/null
  local start=$SECONDS rc=0
  docker run --rm "$net_g" --user "$(id -u):$(id -g)" \
    -v "$ROOT/docker/smoke_client.py:/smoke_client.py:ro" -v "$SMOKE_OUT:/out" \
    --entrypoint python "netarena-purple:$TAG" /smoke_client.py \
    --green "$green_url" --purple "$purple_url" --role "${app}_operator" \
    --config "{\"num_queries\": $SMOKE_QUERIES, \"seed\": $SMOKE_SEED}" \
    --expect-correctness 1.0 --out "/out/agentbeats-$app.json" || rc=$?
  if [ "$rc" != 0 ]; then
    say "$app smoke FAILED; green and purple logs follow"
    docker logs --tail 60 "$green" >&2 || true
    docker logs --tail 30 "$purple" >&2 || true
  else
    say "$app smoke passed in $((SECONDS - start))s ($SMOKE_OUT/agentbeats-$app.json)"
  fi
  docker rm -f "$green" "$purple" >/dev/null 2>&1 || true
  return "$rc"
}

smoke() {
  if [ "$SMOKE_NETWORK" = bridge ]; then
    docker network inspect netarena-smoke >/dev/null 2>&1 || docker network create netarena-smoke >/dev/null
  fi
  local failed=()
  for app in $APPS; do smoke_app "$app" || failed+=("$app"); done
  if [ ${#failed[@]} -gt 0 ]; then say "smoke failed for: ${failed[*]}"; return 1; fi
  say "smoke passed for: $APPS"
}

case "$MODE" in
  build) build ;;
  smoke) smoke ;;
  all) build; smoke ;;
  *) say "usage: $0 [build|smoke|all]"; exit 2 ;;
esac
