#!/usr/bin/env bash
# Wall time and simulator events per second of all of philly-dev under each policy (issue 4,
# item 4). Each policy runs alone, one after another, in this script; `fifo-backfill` (no
# preemption, one reservation) is the baseline the ratios are taken against.
#   bench/philly_bench.sh [build/release/cmd/hourglass] [oversubscription]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/cmd/hourglass}
K=${2:-2.5}
TRACE=${PHILLY:-../shared/traces/philly-dev.csv}
POLICIES=${POLICIES:-fifo-backfill,hourglass,priority,slurm-multifactor,kueue-quota}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-18s %10s %12s %12s %8s\n' policy "wall s" events "events/s" "x base"
base=""
for p in ${POLICIES//,/ }; do
  t0=$(date +%s.%N)
  "$BIN" sim --trace "$TRACE" --oversubscription "$K" --policies "$p" --json "$tmp/$p.json" \
    --quiet >/dev/null 2>&1
  t1=$(date +%s.%N)
  python3 - "$tmp/$p.json" "$p" "$t0" "$t1" "${base:-0}" <<'PY'
import json, sys
path, name, t0, t1, base = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
wall = t1 - t0
events = json.load(open(path))["policies"][name]["events"]
ratio = wall / base if base > 0 else 1.0
print(f"{name:<18} {wall:10.1f} {events:12d} {events / wall:12.0f} {ratio:8.2f}")
PY
  if [ -z "$base" ]; then base=$(python3 -c "print($t1 - $t0)"); fi
done
