#!/usr/bin/env bash
# The main job: install what is needed, then evaluate an agent on all three apps with the
# embedded emulators, print a scorecard with 95% intervals, and write results and a report.
#
#   bash scripts/demo.sh                      # the reference agent (no LLM, no key)
#   MODEL_NAME=openai/gpt-4o-mini OPENAI_API_KEY=... bash scripts/demo.sh   # a LiteLLM model
#
# Environment: QUERIES (per app, default 30), SEED (default 1), OUT (default runs/demo),
# APPS (default "malt route k8s"), CONCURRENCY (default 4).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${NETARENA_VENV:-.venv}"
export LITELLM_LOCAL_MODEL_COST_MAP=True
AGENT="reference"
[ -n "${MODEL_NAME:-}" ] && AGENT="litellm:${MODEL_NAME}"
QUERIES="${QUERIES:-30}"
SEED="${SEED:-1}"
OUT="${OUT:-runs/demo}"
APPS="${APPS:-malt route k8s}"
CONCURRENCY="${CONCURRENCY:-4}"

results=()
for app in $APPS; do
  if [ "$app" = route ] && [ "$(id -u)" != 0 ]; then
    echo "demo: skipping route (needs root for network namespaces)" >&2
    continue
  fi
  rm -f "$OUT/$app/results.jsonl"
  "$VENV/bin/netarena" run "$app" --agent "$AGENT" --queries "$QUERIES" --levels 1,2,3 \
    --seed "$SEED" --concurrency "$CONCURRENCY" --out "$OUT/$app"
  results+=("$OUT/$app/results.jsonl")
done
"$VENV/bin/netarena" report "${results[@]}" --out "$OUT/report"
echo "demo: results in $OUT/<app>/results.jsonl, report in $OUT/report/index.html" >&2
