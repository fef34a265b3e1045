#!/usr/bin/env bash
# Tags the four NetArena images for a registry and pushes them (the publish step of
# .github/workflows/images.yml; runnable by hand the same way).
#
#   scripts/publish_images.sh REGISTRY_PREFIX VERSION [--dry-run]
#   e.g. scripts/publish_images.sh ghcr.io/my-org 1.2.0
#
# Pushes <prefix>/netarena-{malt,route,k8s,purple}:<VERSION> and :latest, built locally as
# netarena-<image>:${TAG:-latest} by scripts/containers.sh. --dry-run tags but does not push.
set -euo pipefail
PREFIX="${1:?usage: $0 REGISTRY_PREFIX VERSION [--dry-run]}"
VERSION="${2:?usage: $0 REGISTRY_PREFIX VERSION [--dry-run]}"
DRY="${3:-}"
TAG="${TAG:-latest}"
PREFIX="$(echo "$PREFIX" | tr '[:upper:]' '[:lower:]')"  # registries want lower case
for image in malt route k8s purple; do
  for version in "$VERSION" latest; do
    target="$PREFIX/netarena-$image:$version"
    docker tag "netarena-$image:$TAG" "$target"
    if [ "$DRY" = --dry-run ]; then
      echo "publish: tagged $target (dry run, not pushed)" >&2
    else
      docker push "$target"
      echo "publish: pushed $target" >&2
    fi
  done
done
