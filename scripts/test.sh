#!/usr/bin/env bash
# Installs what is needed (scripts/setup.sh), then runs a test tier (README, "Tests"):
#   bash scripts/test.sh          the fast tier: every test not marked slow, root or docker
#                                 (no network-namespace emulators, no containers, nothing that
#                                 takes more than a few seconds); minutes on 2 cores
#   bash scripts/test.sh --all    everything: root tests run when root, docker tests when an
#                                 engine is up (.ci/run uses this)
# Other arguments go to pytest (e.g. a folder: bash scripts/test.sh tests/malt).
set -euo pipefail
cd "$(dirname "$0")/.."
all=0
args=()
for arg in "$@"; do
  if [ "$arg" = "--all" ]; then all=1; else args+=("$arg"); fi
done
bash scripts/setup.sh
VENV="${NETARENA_VENV:-.venv}"
export LITELLM_LOCAL_MODEL_COST_MAP=True
if [ "$all" = 1 ]; then
  exec "$VENV/bin/python" -m pytest -q ${args[@]+"${args[@]}"}
fi
exec "$VENV/bin/python" -m pytest -q -m "not slow and not root and not docker" ${args[@]+"${args[@]}"}
