#!/usr/bin/env bash
# What philly-dev's debug wait would be if each project's debug jobs had the project's share of
# the GPUs to themselves (docs/open-work.md, "Debug wait on Philly"): for oversubscription 2, 2.5
# and 3 (or $LOADS) it writes the scenario as `hourglass sim` maps the trace, gives each project
# floor(its share of all shares x the cluster's GPUs) GPUs (at least one), runs its debug jobs
# alone on them first come first served, and prints the p50 and p90 wait over all debug jobs and
# the share that waits more than 30 s. No batch work runs, and no project lends its share to
# another. Not a strict bound (GPUs other projects leave unused, or another order within a
# project, can do better), but the scale of what a 30 s p90 asks of a policy that serves shares.
#   bench/debug_share_bound.sh [build/release/cmd/hourglass]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/cmd/hourglass}
read -r -a LOADS <<<"${LOADS:-2 2.5 3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| oversubscription | GPUs | debug jobs | p50 | p90 | waiting over 30 s |"
echo "|---|---|---|---|---|---|"
for k in "${LOADS[@]}"; do
  # A run of a few minutes of simulated time is enough to write the whole scenario.
  "$BIN" sim --philly ../shared/traces/philly-dev.csv --oversubscription "$k" \
    --policies hourglass --quiet --end-days 0.01 --write-scenario "$tmp/$k" >/dev/null 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
  python3 - "$tmp/$k" "$k" <<'PY'
import collections, csv, heapq, sys, tomllib
sys.path.insert(0, "bench")
from study_rows import wait
d, load = sys.argv[1], sys.argv[2]
gpus = sum(int(r["gpus"]) for r in csv.DictReader(l for l in open(f"{d}/cluster.csv")
                                                 if not l.startswith("#")))
with open(f"{d}/budgets.toml", "rb") as f:
    budgets = tomllib.load(f)["budget"]  # docs/formats.md: one [[budget]] table per budget
share = {b["name"]: b.get("share", 1.0) for b in budgets}
parent = {b["name"]: b["parent"] for b in budgets if "parent" in b}
programs = [b for b in share if b not in parent]
projects = [b for b in share if parent.get(b) in programs]
of_all = {}
for p in projects:
    siblings = sum(share[q] for q in projects if parent[q] == parent[p])
    of_all[p] = share[parent[p]] / sum(share[x] for x in programs) * share[p] / siblings
jobs = collections.defaultdict(list)
for r in csv.DictReader(l for l in open(f"{d}/workload.csv") if not l.startswith("#")):
    if r["class"] == "debug":
        jobs[r["budget"].split(".")[0]].append((int(r["submit"]), int(r["duration"]),
                                                int(r["gpus"])))
waits = []
for p, js in sorted(jobs.items()):
    free = [0] * max(1, int(of_all[p] * gpus))  # when each of the project's GPUs is next free
    for submit, duration, n in sorted(js):
        assert n == 1, "philly-dev's debug jobs ask for one GPU"
        start = max(submit, heapq.heappop(free))
        waits.append(start - submit)
        heapq.heappush(free, start + duration)
waits.sort()
pct = lambda q: waits[-(-q * len(waits) // 100) - 1]  # nearest rank, as the report's
over = sum(w > 30 for w in waits) / len(waits)
print(f"| {load} | {gpus} | {len(waits):,} | {wait(pct(50))} | {wait(pct(90))} | {over:.1%} |")
PY
done
