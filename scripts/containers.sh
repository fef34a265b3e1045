#!/usr/bin/env bash
# Builds every NetArena image and runs a containerised smoke evaluation per app: the app's green
# container plus the reference purple container under `netarena up`, whose client (the one of
# `netarena assess`) sends one evaluation request the way the AgentBeats gateway does (A2A 0.3
# message/stream). Both containers must become healthy and the evaluation must complete with
# correctness 1.0.
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
#   SMOKE_NETWORK   auto (default): a private bridge network where the engine can make one,
#                   else shared; bridge; shared: the green container joins the purple
#                   container's private network namespace and they talk over its loopback
#                   (engines started with --bridge=none; nothing is exposed on the host)
#   BUILD_NETWORK   network for RUN steps at build time (default: host when the engine has no
#                   default bridge, else Docker's default)
#   NETARENA        the netarena command (default .venv/bin/netarena, else netarena on PATH).
#                   The smoke evaluation is `netarena up` (common/src/netarena/common/launch/launcher.py): it starts each
#                   container with the privileges netarena.common.launch.privileges lists (route's
#                   capabilities), waits on the HEALTHCHECKs and removes everything it made.
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
SMOKE_NETWORK="${SMOKE_NETWORK:-auto}"
if [ -z "${NETARENA:-}" ]; then
  if [ -x .venv/bin/netarena ]; then NETARENA="$ROOT/.venv/bin/netarena"; else NETARENA=netarena; fi
fi
SMOKE_OUT="$(mkdir -p "${SMOKE_OUT:-runs/containers}" && cd "${SMOKE_OUT:-runs/containers}" && pwd)"
declare -A DOCKERFILE=([malt]=app-malt/Dockerfile [route]=app-route/Dockerfile
                       [k8s]=app-k8s/Dockerfile [purple]=a2a_llm/Dockerfile)
say() { echo "containers: $*" >&2; }
docker info >/dev/null 2>&1 || { say "no Docker engine reachable (start dockerd)"; exit 2; }

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

base_image_or_hint() {
  # Present on the engine, or pullable; else say how to build one without a registry.
  docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 && return 0
  say "pulling base image $BASE_IMAGE"
  docker pull -q "$BASE_IMAGE" >/dev/null 2>&1 && return 0
  say "base image $BASE_IMAGE is not on this engine and cannot be pulled (no registry reachable?)."
  say "build a local one from Debian packages (root, debootstrap, ~3 min), then build on it:"
  say "  sudo bash docker/make-base-image.sh && BASE_IMAGE=netarena-base:bookworm bash scripts/containers.sh build"
  exit 2
}

build() {
  base_image_or_hint
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

smoke_app() {
  local app="$1" start=$SECONDS rc=0
  "$NETARENA" up "$app" --purple "netarena-purple:$TAG" --green "netarena-$app:$TAG" \
    -e NETARENA_SOLVER=reference --queries "$SMOKE_QUERIES" --seed "$SMOKE_SEED" \
    --network "$SMOKE_NETWORK" --pull never --expect-correctness 1.0 \
    --out "$SMOKE_OUT/$app" || rc=$?
  if [ "$rc" != 0 ]; then
    say "$app smoke FAILED (exit $rc); logs in $SMOKE_OUT/$app/"
  else
    cp "$SMOKE_OUT/$app/agentbeats.json" "$SMOKE_OUT/agentbeats-$app.json"
    say "$app smoke passed in $((SECONDS - start))s ($SMOKE_OUT/agentbeats-$app.json)"
  fi
  return "$rc"
}

smoke() {
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
