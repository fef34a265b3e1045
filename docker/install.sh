#!/bin/sh
# Installs NetArena into /opt/netarena inside an image; every Dockerfile runs this one script
# on a copy of the repository, so the install steps live in one place.
#   - trusts any extra CA certificate placed in docker/ca-certificates/ (TLS-inspecting proxies);
#   - creates the virtual environment and installs the distributions named as arguments
#     (repository folders, e.g. `common app-malt`: an image carries only its app) with their
#     dependencies from the package index only, pinned by docker/constraints.txt (kept in the
#     image for later pip installs);
#   - installs curl (leaderboard compose files healthcheck every container with it);
#   - installs the entrypoint and the health check (any port) and checks that the CLI starts.
set -eu
src="$(cd "$(dirname "$0")/.." && pwd)"
if ! command -v curl >/dev/null; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends curl
  rm -rf /var/lib/apt/lists/*
fi
if ls "$src"/docker/ca-certificates/*.crt >/dev/null 2>&1; then
  mkdir -p /usr/local/share/ca-certificates/netarena
  cp "$src"/docker/ca-certificates/*.crt /usr/local/share/ca-certificates/netarena/
  update-ca-certificates
fi
python3 -m venv /opt/netarena
if [ $# -eq 0 ]; then
  echo "install.sh: name the folders to install (e.g. common app-malt)" >&2
  exit 2
fi
folders=""
for folder in "$@"; do
  folders="$folders $src/$folder"
done
# shellcheck disable=SC2086  # one argument per folder
/opt/netarena/bin/pip install --constraint "$src/docker/constraints.txt" $folders
cp "$src/docker/constraints.txt" /opt/netarena/constraints.txt
install -m 755 "$src/docker/entrypoint.sh" /usr/local/bin/netarena-entrypoint
install -m 755 "$src/docker/healthcheck.sh" /usr/local/bin/netarena-healthcheck
/opt/netarena/bin/netarena --help >/dev/null
