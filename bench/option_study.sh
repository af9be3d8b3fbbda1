#!/usr/bin/env bash
# What one policy option trades (the tables of docs/open-work.md): runs `hourglass` on lab-month
# seeds 1-3, or those in $SEEDS (or, with --philly, on philly-dev at oversubscription 2, 2.5 and
# 3), with the option at each value given, and prints occupancy and entitlement delivered as the
# simulator's table prints them (the JSON rounds to 4 digits), then from its JSON the p90 queue
# waits of debug, batch and training jobs and of the two largest size classes, the preemptions of
# funded work for fair share, and the work lost to preemption.
#   bench/option_study.sh [build/release/cmd/hourglass] [--philly] --flag value...
# e.g. bench/option_study.sh build/release/cmd/hourglass --preempt-below 1 0.8 0.6
# $EXTRA holds flags for every run, e.g. EXTRA="--max-gap 0" for the loop on events only.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/release/cmd/hourglass
if [[ ${1:-} != --* ]]; then
  BIN=$1
  shift
fi
read -r -a RUNS <<<"${SEEDS:-1 2 3}"  # SEEDS="4 5 6" measures on seeds not tuned against
read -r -a EXTRA_FLAGS <<<"${EXTRA:-}"
RUN_NAME=seed
if [[ ${1:-} == --philly ]]; then
  RUNS=(2 2.5 3)
  RUN_NAME=oversubscription
  shift
fi
FLAG=${1:?usage: bench/option_study.sh [hourglass binary] --flag value...}
shift
(($# > 0)) || { echo "bench/option_study.sh: no values for $FLAG" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| $RUN_NAME | $FLAG | occupancy | entitlement | debug p90 | batch p90 | training p90 | 65-256 p90 | 257+ p90 | fair-share preemptions | lost GPU-h |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for run in "${RUNS[@]}"; do
  if [[ $RUN_NAME == seed ]]; then
    workload=(--scenario lab-month --seed "$run")
  else
    workload=(--philly ../shared/traces/philly-dev.csv --oversubscription "$run")
  fi
  for v in "$@"; do
    "$BIN" sim "${workload[@]}" --policies hourglass --quiet "${EXTRA_FLAGS[@]}" \
      "$FLAG" "$v" --json "$tmp/r.json" >"$tmp/table" 2>"$tmp/err" ||
      { cat "$tmp/err" >&2; exit 1; }
    python3 - "$tmp/r.json" "$run" "$v" "$tmp/table" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["policies"]["hourglass"]
sys.path.insert(0, "bench")
from study_rows import p90, table_figures
table = table_figures(sys.argv[4])
by_class, by_size = r["wait_s"], r["wait_s_by_size"]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {table['occupancy']} "
      f"| {table['entitlement delivered']} | {p90(by_class, 'debug')} | {p90(by_class, 'batch')} "
      f"| {p90(by_class, 'training')} | {p90(by_size, '65-256')} "
      f"| {p90(by_size, '257+')} | {r['preemptions_by_cause']['fair-share']:,} "
      f"| {r['lost_gpu_hours']:,.0f} |")
PY
  done
done
