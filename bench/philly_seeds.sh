#!/usr/bin/env bash
# How much philly-dev's measures move with the Philly adapter's seed, which only deals each VC's
# jobs over its four synthetic researchers (docs/formats.md): the README's table is one seed, and
# entitlement delivered is measured per researcher leaf. Runs one policy per seed and load, two
# at a time, and prints a row per run and the mean, lowest and highest per load.
#   bench/philly_seeds.sh [build/release/cmd/hourglass] [extra sim flags...]
# Environment: SEEDS (default "1 2 3 4 5 6"), LOADS (default "2 2.5 3"), POLICY (hourglass).
# Example: bench/philly_seeds.sh build/release/cmd/hourglass --resubmit-after 300
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/cmd/hourglass}
shift || true
TRACE=${PHILLY:-../shared/traces/philly-dev.csv}
SEEDS=${SEEDS:-1 2 3 4 5 6}
LOADS=${LOADS:-2 2.5 3}
POLICY=${POLICY:-hourglass}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
EXTRA="$*"
export BIN TRACE POLICY tmp EXTRA
for k in $LOADS; do for s in $SEEDS; do echo "$k $s"; done; done |
  xargs -P 2 -n 2 sh -c '"$BIN" sim --philly "$TRACE" --oversubscription "$0" --seed "$1" \
    --policies "$POLICY" --json "$tmp/$0_$1.json" --quiet $EXTRA >/dev/null 2>"$tmp/$0_$1.err" ||
    { cat "$tmp/$0_$1.err" >&2; exit 255; }'
python3 - "$tmp" "$POLICY" "$LOADS" "$SEEDS" <<'PY'
import json, statistics, sys
tmp, policy, loads, seeds = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
def hours(s):
    return f"{s / 3600:.1f} h" if s is not None else "-"
print("| oversubscription | seed | occupancy | entitlement | over-delivered GPU-h | debug p90 | completed |")
print("|---|---|---|---|---|---|---|")
summary = []
for k in loads:
    ents = []
    for s in seeds:
        p = json.load(open(f"{tmp}/{k}_{s}.json"))["policies"][policy]
        ents.append(p["entitlement_delivered"])
        print(f"| {k} | {s} | {100 * p['occupancy']:.1f}% | {100 * p['entitlement_delivered']:.2f}% | "
              f"{p['shortfall']['over_delivered_gpu_hours']:,.0f} | {hours(p['wait_s']['debug']['p90'])} | "
              f"{p['jobs']['succeeded']:,} |")
    summary.append((k, ents))
print()
print("| oversubscription | entitlement mean | lowest | highest | seeds under 98% |")
print("|---|---|---|---|---|")
for k, ents in summary:
    under = sum(1 for e in ents if e < 0.98)
    print(f"| {k} | {100 * statistics.mean(ents):.2f}% | {100 * min(ents):.2f}% | "
          f"{100 * max(ents):.2f}% | {under} of {len(ents)} |")
PY
