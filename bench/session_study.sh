#!/usr/bin/env bash
# What session leases save and cost (the README's "Interactive sessions" table): runs `hourglass`
# on lab-month seeds 1-3, or those in $SEEDS, with --leases false and true, and prints per run the
# occupancy and entitlement delivered (as the simulator's table prints them), the sessions stopped
# while their user was active, the interactive jobs preempted, the interactive GPU-hours lost, the
# p90 wait of interactive jobs and of 257+ GPU jobs, and all work lost to preemption; then the
# mean entitlement of each setting and the mean paired difference (true - false) with its
# standard error, since single seeds move by a point or more whatever changes.
# With SCALE=k, every interactive session of the month lasts k times as long (at most 23 h; its
# min_runtime min(duration, 8 h), its max_runtime 24 h, its idle_after scaled alike): the
# scenario is written to files, changed, and replayed, to see leases where sessions run long.
#   SEEDS="1 2 3 4" [SCALE=2.5] bench/session_study.sh [build/release/cmd/hourglass]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/cmd/hourglass}
read -r -a SEED_LIST <<<"${SEEDS:-1 2 3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| seed | --leases | occupancy | entitlement | active sessions stopped | interactive preempted | interactive lost GPU-h | interactive p90 | 257+ p90 | lost GPU-h |"
echo "|---|---|---|---|---|---|---|---|---|---|"
SCALE=${SCALE:-1}
for seed in "${SEED_LIST[@]}"; do
  workload=(--scenario lab-month --seed "$seed")
  if [[ $SCALE != 1 ]]; then
    rm -rf "$tmp/w"
    "$BIN" sim --scenario lab-month --seed "$seed" --policies hourglass --quiet --end-days 0.01 \
      --write-scenario "$tmp/w" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    python3 - "$tmp/w/workload.csv" "$SCALE" <<'PY'
import csv, sys
path, scale = sys.argv[1], float(sys.argv[2])
with open(path, newline="") as f:
    lines = f.read().splitlines()
comments = [l for l in lines if l.startswith("#")]
rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
for r in rows:
    if r["class"] != "interactive":
        continue
    d = min(int(int(r["duration"]) * scale), 23 * 3600)
    r["duration"], r["min_runtime"], r["max_runtime"] = str(d), str(min(d, 8 * 3600)), "86400"
    if r["idle_after"]:
        r["idle_after"] = str(int(int(r["idle_after"]) * scale))
with open(path, "w", newline="") as f:
    f.write("\n".join(comments) + "\n")
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
PY
    workload=(--cluster "$tmp/w/cluster.csv" --budgets "$tmp/w/budgets.toml"
      --workload "$tmp/w/workload.csv" --events "$tmp/w/events.csv" --end-days 30)
  fi
  for v in false true; do
    "$BIN" sim "${workload[@]}" --policies hourglass --quiet --leases "$v" \
      --json "$tmp/r.json" >"$tmp/table" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    python3 - "$tmp/r.json" "$seed" "$v" "$tmp/table" "$tmp/ent" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["policies"]["hourglass"]
sys.path.insert(0, "bench")
from study_rows import p90, table_figures
table = table_figures(sys.argv[4])
print(f"| {sys.argv[2]} | {sys.argv[3]} | {table['occupancy']} | {table['entitlement delivered']} "
      f"| {r['active_sessions_stopped']} | {r['preemptions_by_class'].get('interactive', 0)} "
      f"| {r['lost_gpu_hours_by_class'].get('interactive', 0):,.0f} "
      f"| {p90(r['wait_s'], 'interactive')} | {p90(r['wait_s_by_size'], '257+')} "
      f"| {r['lost_gpu_hours']:,.0f} |")
with open(sys.argv[5], "a") as f:
    f.write(f"{sys.argv[2]} {sys.argv[3]} {r['entitlement_delivered']}\n")
PY
  done
done
python3 - "$tmp/ent" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    seed, v, e = line.split()
    runs.setdefault(v, {})[seed] = float(e) * 100
seeds = sorted(runs["false"], key=int)
for v in ("false", "true"):
    print(f"mean entitlement, --leases {v}: {statistics.mean(runs[v][s] for s in seeds):.2f}% "
          f"over {len(seeds)} seeds")
d = [runs["true"][s] - runs["false"][s] for s in seeds]
se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
print(f"paired difference (true - false): {statistics.mean(d):+.2f} points, "
      f"standard error {se:.2f}")
PY
