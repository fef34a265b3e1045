#!/usr/bin/env bash
# Installs what is needed (scripts/setup.sh), then runs a test tier (README, "Tests"; docs/tests.md):
#   bash scripts/test.sh          the fast tier: every test not marked slow, root or docker
#                                 (no network-namespace emulators, no containers, nothing that
#                                 takes more than a few seconds); minutes on 2 cores
#   bash scripts/test.sh --all    everything: root tests run when root, docker tests when an
#                                 engine is up (.ci/run uses this)
# Both run the tests marked serial first, alone, then the rest in parallel with pytest-xdist:
# most slow tests wait on protocol timers, timeouts and servers rather than on the CPU, so
# several overlap even on 2 cores. NETARENA_TEST_WORKERS sets the number of workers (0: one
# process, no xdist; default 6 for --all, 3 for the fast tier, as measured in docs/tests.md).
# --no-loadscope-reorder: xdist keeps the order tests/conftest.py gives (the longest first,
# root tests spread among the others), instead of sending multi-test groups first.
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
# One OpenMP thread per process (scikit-learn's): several test workers share 2 cores, and
# each spinning a thread pool per prediction only made them wait on each other.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# Bytecode caches on: with PYTHONDONTWRITEBYTECODE set (as on this project's CI machines) every
# process compiled the project's sources again, and pytest rewrote every test module's asserts
# again in each worker (collection 15 s -> 9 s; every `netarena` subprocess a test starts too).
unset PYTHONDONTWRITEBYTECODE
if [ "$all" = 1 ]; then
  workers="${NETARENA_TEST_WORKERS:-6}"
else
  workers="${NETARENA_TEST_WORKERS:-3}"
fi
if [ "$all" = 1 ]; then
  tier=()
  timing=(--durations=20)
else
  tier=(-m "not slow and not root and not docker")
  timing=()
fi
pytest=("$VENV/bin/python" -m pytest -q)
own_marks=0
for arg in ${args[@]+"${args[@]}"}; do
  case "$arg" in -m|-m*) own_marks=1 ;; esac
done
if [ "$workers" = 0 ]; then
  exec "${pytest[@]}" "${tier[@]+"${tier[@]}"}" "${timing[@]+"${timing[@]}"}" \
    ${args[@]+"${args[@]}"}
fi
if [ "$own_marks" = 1 ]; then  # the caller's own selection: one parallel run (conftest.py
  # still runs a serial test with no other beside it)
  exec "${pytest[@]}" -n "$workers" --dist loadgroup --no-loadscope-reorder \
    "${tier[@]+"${tier[@]}"}" \
    "${timing[@]+"${timing[@]}"}" ${args[@]+"${args[@]}"}
fi
# Serial tests (they assert durations) run first, in one process of their own: under xdist
# each would hold every other worker idle until the longest running test ended (minutes).
# Then the rest in parallel -- loadgroup: one test at a time to each free worker, except the
# groups tests/conftest.py forms (a module's shared fixture stays on one worker).
if [ "$all" = 1 ]; then
  serial=(-m serial)
  rest=(-m "not serial")
else
  serial=(-m "serial and not slow and not root and not docker")
  rest=(-m "not serial and not slow and not root and not docker")
fi
status=0
# NETARENA_SERIAL_ONLY: tests/conftest.py collects only the modules that mention `serial`.
NETARENA_SERIAL_ONLY=1 "${pytest[@]}" "${serial[@]}" "${timing[@]+"${timing[@]}"}" \
  ${args[@]+"${args[@]}"} || status=$?
[ "$status" = 5 ] && status=0  # no serial test among the selected ones
rest_status=0
"${pytest[@]}" -n "$workers" --dist loadgroup --no-loadscope-reorder "${rest[@]}" \
  "${timing[@]+"${timing[@]}"}" \
  ${args[@]+"${args[@]}"} || rest_status=$?
[ "$status" = 0 ] && status=$rest_status
exit "$status"
