#!/usr/bin/env bash
# Builds a Debian bookworm base image from Debian packages alone, for machines where no image
# registry (Docker Hub) is reachable but a Debian mirror is. The result has python3 (3.11) with
# venv and pip, ca-certificates and apt, which is all NetArena's Dockerfiles need from a base.
#
#   sudo docker/make-base-image.sh [TAG]            # default TAG: netarena-base:bookworm
#   MIRROR=http://my.mirror/debian docker/make-base-image.sh
#
# Then build with:  docker build --build-arg BASE_IMAGE=netarena-base:bookworm ...
# (scripts/containers.sh does this when BASE_IMAGE is set).
#
# Needs root, debootstrap and a running Docker engine. Takes ~2-4 minutes.
set -euo pipefail

TAG="${1:-netarena-base:bookworm}"
SUITE="${SUITE:-bookworm}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
PACKAGES="python3,python3-venv,python3-pip,ca-certificates"

if [ "$(id -u)" != 0 ]; then
  echo "make-base-image: debootstrap needs root" >&2
  exit 1
fi
command -v debootstrap >/dev/null || { echo "make-base-image: apt-get install debootstrap" >&2; exit 1; }
command -v docker >/dev/null || { echo "make-base-image: docker client missing" >&2; exit 1; }

ROOT="$(mktemp -d /tmp/netarena-rootfs.XXXXXX)"
trap 'rm -rf --one-file-system "$ROOT"' EXIT

echo "make-base-image: debootstrap $SUITE from $MIRROR into $ROOT" >&2
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOT" "$MIRROR" >&2

# Keep the image small and its apt usable inside builds.
chroot "$ROOT" apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin "$ROOT"/usr/share/doc/* \
  "$ROOT"/usr/share/man/* "$ROOT"/tmp/*
printf 'deb %s %s main\ndeb %s %s-updates main\n' "$MIRROR" "$SUITE" "$MIRROR" "$SUITE" \
  > "$ROOT/etc/apt/sources.list"

echo "make-base-image: importing as $TAG" >&2
tar --numeric-owner -C "$ROOT" -c . | docker import \
  --change 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' \
  - "$TAG" >/dev/null
docker image inspect "$TAG" --format 'make-base-image: {{.RepoTags}} {{.Size}} bytes' >&2
