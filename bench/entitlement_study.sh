#!/usr/bin/env bash
# Where does lab-month's owed GPU time go? Runs `hourglass` on one seed of lab-month as generated
# and on variants of the same workload, and prints, from the simulator's JSON:
#   entitlement   the measure: sum over leaf budgets of min(delivered, owed) / sum of owed
#   funded/owed   all funded GPU-hours delivered / all owed: the most the measure could reach if
#                 every budget got exactly its due (it caps the measure from above)
#   unfunded      share of allocated GPU time that went to unfunded work
#   lost GPU-h    work lost to preemption
#   257+ p90      queue wait of the largest jobs (257 GPUs and more)
# Variants (the same jobs and submit times; one thing changed each):
#   as generated  the scenario itself
#   no contract   every min_runtime set to 0: nothing is protected after it starts
#   all resumable every job resumable: a preempted job is requeued instead of ending
#   no share moves the leads' share changes left out of the timed events
#   no node faults health failures, lost nodes, drains and repairs left out (share changes kept)
#   one node      the cluster as one node with all its GPUs and no gpus_per_node: no
#                 fragmentation at all (node events left out, they name nodes)
#   ends known    every funded job without a max_runtime given one (as a Slurm site asks of every
#                 job): its duration rounded up to the hour, at least its min_runtime, so
#                 reservations can count on when protected work ends
#   ends 2x       the same from an estimate twice the duration, as users overestimate
# Then the relaxations together, to bound what the policy could deliver without them:
#   no contract, all resumable           both of the first two
#   no contract, all resumable, one node all three: neither the contract, lost runs nor
#                                        placement hold any budget back
# If the contract were what keeps the measure low, "no contract" would raise it; if placement
# were, "one node" would; if the fair-share order itself fell short, even the last would.
#   bench/entitlement_study.sh [build/release/cmd/hourglass] [seed]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/cmd/hourglass}
SEED=${2:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }; }
# Written while simulating a moment only; the replays evaluate lab-month's 30 days, as the
# built-in scenario does (files do not carry the end of the evaluation).
run "$BIN" sim --scenario lab-month --seed "$SEED" --policies hourglass --quiet \
  --end-days 0.001 --write-scenario "$tmp/s"
# Copies of the workload with one column set to one value, found by its header name.
variant() {  # out column=value...
  python3 - "$tmp/s/workload.csv" "$@" <<'PY'
import sys
src, out, sets = sys.argv[1], sys.argv[2], [a.split("=", 1) for a in sys.argv[3:]]
lines = open(src).read().splitlines()
head = next(i for i, l in enumerate(lines) if not l.startswith("#"))
cols = lines[head].split(",")
with open(out, "w") as f:
    for i, l in enumerate(lines):
        if i > head:
            cells = l.split(",")
            for column, value in sets:
                cells[cols.index(column)] = value
            l = ",".join(cells)
        f.write(l + "\n")
PY
}
variant "$tmp/no_contract.csv" min_runtime=0
variant "$tmp/all_resumable.csv" resumable=true
variant "$tmp/any_shape.csv" gpus_per_node=0
variant "$tmp/relaxed.csv" min_runtime=0 resumable=true
variant "$tmp/relaxed_any_shape.csv" min_runtime=0 resumable=true gpus_per_node=0
# Copies where each funded job without a max_runtime gets one from its duration times a factor.
with_ends() {  # out factor
  python3 - "$tmp/s/workload.csv" "$@" <<'PY'
import math, sys
src, out, factor = sys.argv[1], sys.argv[2], float(sys.argv[3])
lines = open(src).read().splitlines()
head = next(i for i, l in enumerate(lines) if not l.startswith("#"))
col = {c: i for i, c in enumerate(lines[head].split(","))}
with open(out, "w") as f:
    for i, l in enumerate(lines):
        if i > head:
            cells = l.split(",")
            if cells[col["max_runtime"]] == "" and cells[col["budget"]] != "":
                hours = math.ceil(int(cells[col["duration"]]) * factor / 3600)
                cells[col["max_runtime"]] = str(max(int(cells[col["min_runtime"]]), hours * 3600))
            l = ",".join(cells)
        f.write(l + "\n")
PY
}
with_ends "$tmp/ends_known.csv" 1
with_ends "$tmp/ends_2x.csv" 2
# Timed events without some kinds (by the kind column), and the cluster as one node.
events_without() {  # pattern out
  awk -F, -v drop="$1" '/^#/ || $2 == "kind" || $2 !~ drop' "$tmp/s/events.csv" >"$2"
}
events_without '^share$|^limit$' "$tmp/no_share.csv"
events_without '^(health_fail|node_lost|repair|drain|undrain)$' "$tmp/no_faults.csv"
events_without '^(health_fail|node_lost|repair|drain|undrain)$' "$tmp/one_node_events.csv"
awk -F, '/^#/ || $1 == "name" { next } { g += $2 } END {
  print "# the whole cluster as one node"; print "name,gpus,block"; print "all," g ",b0" }' \
  "$tmp/s/cluster.csv" >"$tmp/one_node.csv"
printf '%-36s %9s %11s %11s %9s %11s %9s\n' variant occupancy entitlement funded/owed \
  unfunded "lost GPU-h" "257+ p90"
S=$tmp/s
# name:cluster:workload:events
for v in "as generated:$S/cluster.csv:$S/workload.csv:$S/events.csv" \
  "no contract:$S/cluster.csv:$tmp/no_contract.csv:$S/events.csv" \
  "all resumable:$S/cluster.csv:$tmp/all_resumable.csv:$S/events.csv" \
  "no share moves:$S/cluster.csv:$S/workload.csv:$tmp/no_share.csv" \
  "no node faults:$S/cluster.csv:$S/workload.csv:$tmp/no_faults.csv" \
  "one node:$tmp/one_node.csv:$tmp/any_shape.csv:$tmp/one_node_events.csv" \
  "ends known:$S/cluster.csv:$tmp/ends_known.csv:$S/events.csv" \
  "ends 2x:$S/cluster.csv:$tmp/ends_2x.csv:$S/events.csv" \
  "no contract, all resumable:$S/cluster.csv:$tmp/relaxed.csv:$S/events.csv" \
  "no contract, all resumable, one node:$tmp/one_node.csv:$tmp/relaxed_any_shape.csv:$tmp/one_node_events.csv"; do
  IFS=: read -r name cluster workload events <<<"$v"
  run "$BIN" sim --cluster "$cluster" --budgets "$S/budgets.toml" \
    --workload "$workload" --events "$events" --end-days 30 --policies hourglass \
    --quiet --json "$tmp/r.json"
  python3 - "$tmp/r.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["policies"]["hourglass"]
top = [b for b in r["budgets"] if b["depth"] == 1]
owed = sum(b["owed_gpu_hours"] for b in top)
delivered = sum(b["delivered_gpu_hours"] for b in top)
# None when no job of 257+ GPUs started in the month.
big = r["wait_s_by_size"].get("257+", {}).get("p90")
big = "-" if big is None else f"{big / 86400:.1f}d"
print(f"{sys.argv[2]:<36} {100 * r['occupancy']:8.1f}% {100 * r['entitlement_delivered']:10.1f}% "
      f"{100 * delivered / owed:10.1f}% {100 * r['unfunded_share']:8.1f}% "
      f"{r['lost_gpu_hours']:11.0f} {big:>9}")
PY
done
