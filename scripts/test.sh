#!/usr/bin/env bash
# Installs what is needed, then runs the whole test suite (root-only tests run when root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${NETARENA_VENV:-.venv}"
export LITELLM_LOCAL_MODEL_COST_MAP=True
exec "$VENV/bin/python" -m pytest -q "$@"
