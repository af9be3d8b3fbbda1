#!/usr/bin/env bash
# How fast can debug jobs start on philly-dev, and what does it cost? Runs `hourglass` on the
# trace with a growing debug headroom (GPUs kept free for debug jobs) and prints occupancy,
# entitlement delivered and the debug wait for each setting, all from the simulator's JSON.
#
# Philly's debug jobs (1 GPU, at most 30 min) come in bursts. The first lines printed measure
# them: when each debug job is submitted, how many GPUs would the debug jobs submitted before it
# hold had every one started at once (percentiles over debug jobs, against the cluster's GPUs).
# A debug job starts within 30 s only on GPUs that are free when it arrives: a victim's grace
# period (120 s for Philly's batch jobs) alone exceeds 30 s. So the debug p90 wait falls only as
# more of the cluster is held idle, which the sweep below measures.
#   bench/debug_frontier.sh [build/release/cmd/hourglass] [oversubscription]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/cmd/hourglass}
K=${2:-2}
TRACE=${PHILLY:-../shared/traces/philly-dev.csv}
# base headroom : most it may grow to while debug jobs wait (fractions of capacity)
SETTINGS=${SETTINGS:-"0:0.05 0.015:0.05 0.015:0.2 0.015:1 0.05:1 0.1:1 0.2:1"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The trace's mapping goes to stderr; shown once, on an error only.
run() { "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }; }
run "$BIN" sim --philly "$TRACE" --oversubscription "$K" --policies fifo-backfill --quiet \
  --end-days 0.001 --write-scenario "$tmp/scenario"
python3 - "$tmp/scenario" <<'PY'
import csv, heapq, sys
d = sys.argv[1]
gpus = sum(int(r["gpus"]) for r in csv.DictReader(l for l in open(d + "/cluster.csv") if l[0] != "#"))
jobs = sorted((int(r["submit"]), int(r["duration"]), int(r["gpus"]))
              for r in csv.DictReader(l for l in open(d + "/workload.csv") if l[0] != "#")
              if r["class"] == "debug")
ends, held, at_submit = [], 0, []
for submit, duration, g in jobs:
    while ends and ends[0][0] <= submit:
        held -= heapq.heappop(ends)[1]
    held += g
    heapq.heappush(ends, (submit + duration, g))
    at_submit.append(held)
at_submit.sort()
n = len(at_submit)
print(f"{n} debug jobs on {gpus} GPUs; GPUs debug work would hold at a debug submission:")
for q in (50, 90, 99):
    v = at_submit[min(n - 1, n * q // 100)]
    print(f"  p{q}: {v} GPUs ({100 * v / gpus:.0f}% of the cluster)")
PY
echo
printf '%-9s %-9s %10s %12s %10s %10s %10s\n' headroom "grows to" occupancy entitlement \
  "debug p50" "debug p90" "debug p99"
for s in $SETTINGS; do
  base=${s%%:*}
  most=${s##*:}
  run "$BIN" sim --philly "$TRACE" --oversubscription "$K" --policies hourglass --quiet \
    --quick-headroom "$base" --quick-headroom-max "$most" --json "$tmp/r.json"
  python3 - "$tmp/r.json" "$base" "$most" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["policies"]["hourglass"]
w = r["wait_s"]["debug"]
print(f"{sys.argv[2]:<9} {sys.argv[3]:<9} {100 * r['occupancy']:9.1f}% "
      f"{r['entitlement_delivered']:12.3f} {w['p50']:9.0f}s {w['p90']:9.0f}s {w['p99']:9.0f}s")
PY
done
