#!/usr/bin/env bash
# What `--large-job-gpus G` trades on lab-month (the README's "Open work" table): runs `hourglass`
# on seeds 1-3 with the option off (0) and at G, and prints occupancy and entitlement delivered as
# the simulator's table prints them (the JSON rounds to 4 digits), then from its JSON the p90
# queue waits of batch and training jobs and of the two largest size classes, and the work lost
# to preemption.
#   bench/large_job_study.sh [build/release/cmd/hourglass] [G, default 65]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/cmd/hourglass}
G=${2:-65}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| seed | G | occupancy | entitlement | batch p90 | training p90 | 65-256 p90 | 257+ p90 | lost GPU-h |"
echo "|---|---|---|---|---|---|---|---|---|"
for seed in 1 2 3; do
  for g in 0 "$G"; do
    "$BIN" sim --scenario lab-month --seed "$seed" --policies hourglass --quiet \
      --large-job-gpus "$g" --json "$tmp/r.json" >"$tmp/table" 2>"$tmp/err" ||
      { cat "$tmp/err" >&2; exit 1; }
    python3 - "$tmp/r.json" "$seed" "$g" "$tmp/table" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["policies"]["hourglass"]
table = {}
for line in open(sys.argv[4]):
    for name in ("occupancy", "entitlement delivered"):
        if line.startswith(name + " "):
            table[name] = line.split()[-1]
def wait(seconds):
    return f"{seconds / 3600:.1f} h" if seconds < 86400 else f"{seconds / 86400:.1f} d"
by_class, by_size = r["wait_s"], r["wait_s_by_size"]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {table['occupancy']} "
      f"| {table['entitlement delivered']} | {wait(by_class['batch']['p90'])} "
      f"| {wait(by_class['training']['p90'])} | {wait(by_size['65-256']['p90'])} "
      f"| {wait(by_size['257+']['p90'])} | {r['lost_gpu_hours']:,.0f} |")
PY
  done
done
