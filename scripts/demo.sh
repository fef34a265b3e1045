#!/usr/bin/env bash
# The main job: install what is needed, evaluate agents on all three apps with the embedded
# emulators, then print a scorecard with 95% intervals and write the results and a report.
#
#   bash scripts/demo.sh                      # the reference solver, with the null agent as baseline
#   MODEL_NAME=openai/gpt-4o-mini OPENAI_API_KEY=... bash scripts/demo.sh   # adds a LiteLLM model
#
# Environment: QUERIES (per app and agent, default 30), SEED (default 1), OUT (default
# runs/demo), APPS (default "malt route k8s"), AGENTS (default "reference null", plus
# litellm:$MODEL_NAME when MODEL_NAME is set), CONCURRENCY (default 4), MALT_BASELINES,
# ROUTE_BASELINES, K8S_BASELINES (calibration baselines also run per app, by default malt's
# rank-by-name, unsafe-add, crash and depth-blind, route's r0-only and rebuild-from-prompt,
# k8s's ingress-only, delete-all and add-only: the scorecard's headline, solved safely, ranks
# the crash last although it is 100% safe, a rebuild from the ticket scores nothing for the
# state it wipes, and deleting every policy scores nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${NETARENA_VENV:-.venv}"
export LITELLM_LOCAL_MODEL_COST_MAP=True
AGENTS="${AGENTS:-reference null}"
[ -n "${MODEL_NAME:-}" ] && AGENTS="litellm:${MODEL_NAME} ${AGENTS}"
QUERIES="${QUERIES:-30}"
SEED="${SEED:-1}"
OUT="${OUT:-runs/demo}"
APPS="${APPS:-malt route k8s}"
CONCURRENCY="${CONCURRENCY:-4}"

runs=()
for app in $APPS; do
  if [ "$app" = route ] && [ "$(id -u)" != 0 ]; then
    echo "demo: skipping route (it creates network namespaces: run as root)" >&2
    continue
  fi
  case "$app" in
    malt) extra="${MALT_BASELINES-baseline:rank-by-name baseline:unsafe-add baseline:crash baseline:depth-blind}" ;;
    route) extra="${ROUTE_BASELINES-baseline:r0-only baseline:rebuild-from-prompt}" ;;
    k8s) extra="${K8S_BASELINES-baseline:ingress-only baseline:delete-all baseline:add-only}" ;;
    *) extra="" ;;
  esac
  for agent in $AGENTS $extra; do
    dir="$OUT/$app/${agent//[^A-Za-z0-9_.-]/_}"
    rm -f "$dir/results.jsonl"
    "$VENV/bin/netarena" run "$app" --agent "$agent" --queries "$QUERIES" --levels 1,2,3 \
      --seed "$SEED" --concurrency "$CONCURRENCY" --out "$dir" --json > /dev/null
    runs+=("$dir/results.jsonl")
  done
done
# The scorecard: every app and agent with 95% intervals, per level and label, and how far
# apart the agents are (interval overlap); also written as HTML with plots.
"$VENV/bin/netarena" report "${runs[@]}" --out "$OUT/report"
echo "demo: results in $OUT/<app>/<agent>/results.jsonl, report in $OUT/report/index.html" >&2
