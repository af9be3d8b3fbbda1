#!/usr/bin/env bash
# How much a measure owes to the simulated loop's rhythm. Entitlement delivered moves by about a
# point when the scheduling tick moves by one second (README, "The loop the server runs"), and the
# policy's defaults were chosen at the default 10 s, so a change judged at 10 s on three seeds can
# be judging the rhythm. This runs `hourglass` on every (seed, tick) pair, two runs at a time, and
# prints a row per run, the mean per tick, and the mean, spread and range over all runs. To compare
# two settings, run it once for each: the runs pair up by (seed, tick).
#   bench/rhythm_study.sh [build/release/cmd/hourglass] [extra sim flags...]
# Environment: SEEDS (default "1 2 3"), TICKS (default "8 9 10 11 12", seconds), WORKLOAD
# (default "--scenario lab-month"; e.g. "--philly ../shared/traces/philly-dev.csv
# --oversubscription 2.5", whose --seed deals the jobs over the synthetic researchers).
# Example: bench/rhythm_study.sh build/release/cmd/hourglass --preempt-below 0.8
# Lab-month at the defaults: 15 runs, about 45 s on the 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/release/cmd/hourglass
if [[ $# -gt 0 && ${1:-} != --* ]]; then
  BIN=$1
  shift
fi
SEEDS=${SEEDS:-1 2 3}
TICKS=${TICKS:-8 9 10 11 12}
WORKLOAD=${WORKLOAD:---scenario lab-month}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
EXTRA="$*"
export BIN WORKLOAD tmp EXTRA
for s in $SEEDS; do for t in $TICKS; do echo "$s $t"; done; done |
  xargs -P 2 -n 2 sh -c '"$BIN" sim $WORKLOAD --seed "$0" --interval "$1" --policies hourglass \
    --json "$tmp/$0_$1.json" --quiet $EXTRA >/dev/null 2>"$tmp/$0_$1.err" ||
    { cat "$tmp/$0_$1.err" >&2; exit 255; }'
python3 - "$tmp" "$SEEDS" "$TICKS" <<'PY'
import json, statistics, sys
tmp, seeds, ticks = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def wait(s):
    if s is None:
        return "-"
    return f"{s:.0f} s" if s < 60 else (f"{s / 60:.1f} min" if s < 3600 else f"{s / 3600:.1f} h")
print("| seed | tick | occupancy | entitlement | debug p90 | preemptions | lost GPU-h | violations |")
print("|---|---|---|---|---|---|---|---|")
ents, by_tick = [], {t: [] for t in ticks}
for s in seeds:
    for t in ticks:
        p = json.load(open(f"{tmp}/{s}_{t}.json"))["policies"]["hourglass"]
        e = p["entitlement_delivered"]
        ents.append(e)
        by_tick[t].append(e)
        print(f"| {s} | {t} s | {100 * p['occupancy']:.2f}% | {100 * e:.2f}% | "
              f"{wait(p['wait_s'].get('debug', {}).get('p90'))} | {p['preemptions']:,} | "
              f"{p['lost_gpu_hours']:,.0f} | {p['contract_violations']} |")
print()
print("| tick | entitlement, mean over seeds |")
print("|---|---|")
for t in ticks:
    print(f"| {t} s | {100 * statistics.mean(by_tick[t]):.2f}% |")
print()
sd = statistics.stdev(ents) if len(ents) > 1 else 0.0
print(f"all {len(ents)} runs: entitlement mean {100 * statistics.mean(ents):.2f}%, "
      f"standard deviation {100 * sd:.2f} points, lowest {100 * min(ents):.2f}%, "
      f"highest {100 * max(ents):.2f}%")
PY
