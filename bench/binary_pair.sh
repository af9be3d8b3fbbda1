#!/usr/bin/env bash
# Two builds of hourglass side by side on the same runs: `bench/option_study.sh` with the same
# flags for each binary, then per run the entitlement of each and the difference, and the paired
# mean difference with its standard error, mean occupancy, the ratio of work lost and on how many
# runs the 257+ GPU jobs waited longer. A change of policy is judged by this over many seeds: one
# seed moves by about a point with any change of rhythm (README, "The loop the server runs").
#   bench/binary_pair.sh BEFORE AFTER [--philly] --flag value...
#   SEEDS="$(seq -s ' ' 1 12)" bench/binary_pair.sh /tmp/hourglass-before build/release/cmd/hourglass \
#     --reservation-preempts-gpus 257
# SEEDS and EXTRA reach option_study.sh. A flag is needed; `--live-weight 43200` (the default)
# compares the builds' defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?usage: bench/binary_pair.sh BEFORE AFTER [--philly] --flag value...}
B=${2:?usage: bench/binary_pair.sh BEFORE AFTER [--philly] --flag value...}
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bench/option_study.sh "$A" "$@" >"$tmp/a"
bench/option_study.sh "$B" "$@" >"$tmp/b"
python3 - "$tmp/a" "$tmp/b" "$A" "$B" <<'PY'
import statistics, sys

def rows(path):
    out = {}
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 11 or not cells[0][:1].isdigit():
            continue
        out[(cells[0], cells[1])] = cells
    return out

def pct(cell):
    return float(cell.rstrip("%"))

def days(cell):  # a wait as option_study prints it: 9 s, 2.6 min, 3.5 h, 2.7 d, or -
    if cell in ("-", ""):
        return None
    value, unit = cell.split()
    return float(value) * {"s": 1, "min": 60, "h": 3600, "d": 86400}[unit] / 86400

a, b = rows(sys.argv[1]), rows(sys.argv[2])
keys = [k for k in a if k in b]
if not keys:
    sys.exit("bench/binary_pair.sh: no runs in common")
print(f"before: {sys.argv[3]}\nafter:  {sys.argv[4]}\n")
print("| run | value | entitlement before | after | difference | occupancy before | after "
      "| 257+ p90 before | after | lost GPU-h before | after |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
diffs, occ_a, occ_b, lost_ratio, longer, compared = [], [], [], [], 0, 0
for k in keys:
    ra, rb = a[k], b[k]
    ea, eb = pct(ra[3]), pct(rb[3])
    diffs.append(eb - ea)
    occ_a.append(pct(ra[2]))
    occ_b.append(pct(rb[2]))
    la, lb = float(ra[10].replace(",", "")), float(rb[10].replace(",", ""))
    lost_ratio.append(lb / la if la > 0 else 1.0)
    wa, wb = days(ra[8]), days(rb[8])
    if wa is not None and wb is not None:
        compared += 1
        longer += wb > wa
    print(f"| {k[0]} | {k[1]} | {ra[3]} | {rb[3]} | {eb - ea:+.1f} | {ra[2]} | {rb[2]} "
          f"| {ra[8]} | {rb[8]} | {ra[10]} | {rb[10]} |")
se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
print(f"\nentitlement: {statistics.mean(diffs):+.2f} points on average over {len(diffs)} runs "
      f"(standard error {se:.2f}); before {statistics.mean(pct(a[k][3]) for k in keys):.2f}%, "
      f"after {statistics.mean(pct(b[k][3]) for k in keys):.2f}%")
print(f"occupancy: {statistics.mean(occ_a):.2f}% before, {statistics.mean(occ_b):.2f}% after "
      f"(lowest after {min(occ_b):.1f}%)")
print(f"work lost: {statistics.mean(lost_ratio):.3f}x before's on average")
print(f"257+ GPU jobs' p90 wait longer after on {longer} of {compared} runs")
PY
