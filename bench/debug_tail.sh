#!/usr/bin/env bash
# Whose debug jobs wait on philly-dev (docs/open-work.md, "Debug wait on Philly"): runs
# `hourglass` at oversubscription 2, 2.5 and 3 (or those in $LOADS) with the flags given, and
# prints from the JSON one summary row per load (entitlement, occupancy, debug p50/p90, stops of
# funded work by cause, lost work) and then each project's debug jobs with their p50/p90 wait
# (budgets[].wait_s.debug; projects with at least $MIN_JOBS debug jobs, default 100).
#   bench/debug_tail.sh [build/release/cmd/hourglass] [flags...]
# e.g. bench/debug_tail.sh build/release/cmd/hourglass --debug-stops-own true
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/release/cmd/hourglass
if [[ $# -gt 0 && ${1:-} != --* ]]; then
  BIN=$1
  shift
fi
read -r -a LOADS <<<"${LOADS:-2 2.5 3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for k in "${LOADS[@]}"; do
  "$BIN" sim --philly ../shared/traces/philly-dev.csv --oversubscription "$k" \
    --policies hourglass --quiet "$@" --json "$tmp/$k.json" >"$tmp/$k.table" 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
done
python3 - "$tmp" "${MIN_JOBS:-100}" "${LOADS[@]}" <<'PY'
import json, sys
sys.path.insert(0, "bench")
from study_rows import table_figures, wait
tmp, min_jobs, loads = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
runs = {k: json.load(open(f"{tmp}/{k}.json"))["policies"]["hourglass"] for k in loads}
print("| oversubscription | occupancy | entitlement | debug p50 | debug p90 "
      "| fair-share stops | own-budget stops | lost GPU-h |")
print("|---|---|---|---|---|---|---|---|")
for k in loads:
    r, t = runs[k], table_figures(f"{tmp}/{k}.table")
    d, c = r["wait_s"]["debug"], r["preemptions_by_cause"]
    print(f"| {k} | {t['occupancy']} | {t['entitlement delivered']} | {wait(d['p50'])} "
          f"| {wait(d['p90'])} | {c['fair-share']:,} | {c['own-budget']:,} "
          f"| {r['lost_gpu_hours']:,.0f} |")
print()
print("| project | debug jobs | " + " | ".join(f"p50 / p90 at {k}x" for k in loads) + " |")
print("|---|---|" + "---|" * len(loads))
first = runs[loads[0]]["budgets"]
for b in first:
    if b["depth"] != 2 or b["wait_s"].get("debug", {}).get("count", 0) < min_jobs:
        continue
    cells = []
    for k in loads:
        w = next(x for x in runs[k]["budgets"] if x["path"] == b["path"])["wait_s"]["debug"]
        cells.append(f"{wait(w['p50'])} / {wait(w['p90'])}")
    print(f"| {b['path']} | {b['wait_s']['debug']['count']:,} | " + " | ".join(cells) + " |")
PY
