#!/usr/bin/env bash
# Which leaves fall short of what they were owed? Runs `hourglass` on one lab-month seed and,
# from the simulator's JSON (per-budget owed and delivered GPU-hours), prints per project:
#   gang leaf      owed - delivered of the project's hidden direct leaf ("(direct)", which holds
#                  the jobs charged to the project itself: in lab-month its large training gangs);
#                  negative when it got more than it was owed
#   researchers    the shortfall summed over the project's researcher leaves (each one's
#                  max(0, owed - delivered)), and their owed GPU-hours
# and the totals. The entitlement measure counts every leaf's shortfall; over-delivery to one
# leaf makes up for nothing. Then the whole gap (1 - entitlement delivered) in parts, from the
# report's "shortfall": over-delivery to leaves, and owed time funded work did not hold, by what
# held those GPUs instead.
#   bench/shortfall.sh [build/release/cmd/hourglass] [seed]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/cmd/hourglass}
SEED=${2:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BIN" sim --scenario lab-month --seed "$SEED" --policies hourglass --quiet \
  --json "$tmp/r.json" >/dev/null
python3 - "$tmp/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["policies"]["hourglass"]
leaves = [b for b in r["budgets"] if b["depth"] == 3]
projects = {}
for b in leaves:
    project = "/".join(b["path"].split("/")[:2])
    p = projects.setdefault(project, {"gang": 0.0, "short": 0.0, "owed": 0.0})
    gap = b["owed_gpu_hours"] - b["delivered_gpu_hours"]
    if b["path"].endswith("(direct)"):
        p["gang"] += gap
    else:
        p["short"] += max(0.0, gap)
        p["owed"] += b["owed_gpu_hours"]
print("| project | gang leaf owed - delivered | researchers short | researchers owed | short |")
print("|---|---|---|---|---|")
for name in sorted(projects):
    p = projects[name]
    print(f"| {name} | {p['gang']:,.0f} | {p['short']:,.0f} | {p['owed']:,.0f} "
          f"| {100 * p['short'] / p['owed']:.1f}% |")
gang_short = sum(max(0.0, b["owed_gpu_hours"] - b["delivered_gpu_hours"])
                 for b in leaves if b["path"].endswith("(direct)"))
gang_owed = sum(b["owed_gpu_hours"] for b in leaves if b["path"].endswith("(direct)"))
res_short = sum(p["short"] for p in projects.values())
res_owed = sum(p["owed"] for p in projects.values())
print(f"\ngang leaves: short {gang_short:,.0f} of {gang_owed:,.0f} owed GPU-hours "
      f"({100 * gang_short / gang_owed:.1f}%); researcher leaves: short {res_short:,.0f} of "
      f"{res_owed:,.0f} ({100 * res_short / res_owed:.1f}%); entitlement delivered "
      f"{r['entitlement_delivered']:.4f}")
# The same gap by where the GPUs went (the report's "shortfall"): over-delivery to leaves, and owed
# time funded work did not hold, split by what held those GPUs.
s = r["shortfall"]
owed = s["owed_gpu_hours"]
cap, below = s["at_capacity"], s["below_capacity"]
def part(name, x):
    print(f"| {name} | {x:,.0f} | {100 * x / owed:.2f} |")
print(f"\nowed {owed:,.0f} GPU-hours; funded demand at or above the ready GPUs for "
      f"{cap['hours']:.0f} h, below for {below['hours']:.0f} h")
print("| part of the gap | GPU-hours | points of entitlement |")
print("|---|---|---|")
part("over-delivered to leaves", s["over_delivered_gpu_hours"])
part("demand >= GPUs: unfunded work on nodes without funded work", cap["unfunded_alone_gpu_hours"])
part("demand >= GPUs: unfunded work beside funded work", cap["unfunded_beside_funded_gpu_hours"])
part("demand >= GPUs: idle GPUs", cap["idle_gpu_hours"])
part("demand < GPUs: funded jobs waiting", below["waiting_gpu_hours"])
PY
