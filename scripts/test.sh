#!/usr/bin/env bash
# Installs what is needed (scripts/setup.sh), then runs a test tier (README, "Tests"; docs/tests.md):
#   bash scripts/test.sh          the fast tier: every test not marked slow, root or docker
#                                 (no network-namespace emulators, no containers, nothing that
#                                 takes more than a few seconds); minutes on 2 cores
#   bash scripts/test.sh --all    everything: root tests run when root, docker tests when an
#                                 engine is up (.ci/run uses this)
# Both run in parallel with pytest-xdist: most slow tests wait on protocol timers, timeouts and
# servers rather than on the CPU, so several overlap even on 2 cores. NETARENA_TEST_WORKERS
# sets the number of workers (0: one process, no xdist; default 4 for --all, 2 for the fast
# tier, as measured in docs/tests.md).
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
  workers="${NETARENA_TEST_WORKERS:-4}"
else
  workers="${NETARENA_TEST_WORKERS:-2}"
fi
parallel=()
if [ "$workers" != 0 ]; then
  # loadgroup: one test at a time to each free worker, except the groups tests/conftest.py
  # forms (a module's shared fixture stays on one worker).
  parallel=(-n "$workers" --dist loadgroup)
fi
if [ "$all" = 1 ]; then
  exec "$VENV/bin/python" -m pytest -q "${parallel[@]+"${parallel[@]}"}" --durations=20 \
    ${args[@]+"${args[@]}"}
fi
exec "$VENV/bin/python" -m pytest -q "${parallel[@]+"${parallel[@]}"}" \
  -m "not slow and not root and not docker" ${args[@]+"${args[@]}"}
