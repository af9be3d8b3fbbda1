#!/usr/bin/env bash
# What stopping a large gang costs it: runs `hourglass` on one lab-month seed with its decision
# log, and prints for the jobs of at least MIN_GPUS GPUs (65 by default) how often they were
# stopped for fair share and for drains, how large the jobs were that stopped them, and how long
# each stopped gang waited until it ran again (GPU-hours: the gang's GPUs times that wait; to the
# month's end if it never did). A gang is all or nothing: a 1-GPU job of a budget further below
# its share may stop a 512-GPU gang once its protection is over, and the gang then needs 512 GPUs
# again, on whole nodes.
#   bench/gang_stops.sh [build/release/cmd/hourglass] [seed] [min_gpus]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/cmd/hourglass}
SEED=${2:-1}
MIN_GPUS=${3:-65}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BIN" sim --scenario lab-month --seed "$SEED" --write-scenario "$tmp/s" >/dev/null 2>&1
"$BIN" sim --scenario lab-month --seed "$SEED" --policies hourglass --quiet \
  --decisions "$tmp/d.jsonl" --json "$tmp/r.json" >/dev/null
python3 - "$tmp/s/workload.csv" "$tmp/d.jsonl" "$tmp/r.json" "$MIN_GPUS" <<'PY'
import collections, csv, json, re, sys
workload, decisions, report, min_gpus = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
gpus = {}
with open(workload) as f:
    rows = csv.DictReader(line for line in f if not line.startswith("#"))
    for row in rows:
        gpus[int(row["id"])] = int(row["gpus"])
end = json.load(open(report))["end_s"]
runs = collections.defaultdict(list)  # gang -> [(t, action, reason)]
with open(decisions) as f:
    for line in f:
        d = json.loads(line)
        if d["action"] in ("start", "stop") and gpus.get(d["job"], 0) >= min_gpus:
            runs[d["job"]].append((d["t"], d["action"], d.get("reason", "")))
by_kind = collections.Counter()
stopper = collections.Counter()
waits = []
wait_gpu_hours = 0.0
for job, events in runs.items():
    for i, (t, action, reason) in enumerate(events):
        if action != "stop":
            continue
        kind = "fair share" if "further below its share" in reason else (
            "drain" if "draining" in reason else "other")
        by_kind[kind] += 1
        if kind != "fair share":
            continue
        m = re.search(r"\(job (\d+) needs the GPUs\)", reason)
        if m:
            g = gpus.get(int(m.group(1)), 0)
            stopper["1" if g <= 1 else "2-8" if g <= 8 else "9-64" if g <= 64 else "65+"] += 1
        again = next((t2 for t2, a2, _ in events[i + 1:] if a2 == "start"), None)
        wait = (again if again is not None else end) - t
        waits.append(wait / 3600)
        wait_gpu_hours += gpus[job] * wait / 3600
waits.sort()
def pct(p):
    return waits[min(len(waits) - 1, int(p * len(waits)))] if waits else 0.0
print(f"jobs of {min_gpus}+ GPUs stopped: " +
      ", ".join(f"{n} for {k}" for k, n in sorted(by_kind.items())))
print("fair-share stops by the size of the job that needed the GPUs: " +
      ", ".join(f"{k} GPUs {stopper[k]}" for k in ("1", "2-8", "9-64", "65+")))
print(f"wait until the gang ran again, after a fair-share stop: p50 {pct(0.5):.1f} h, "
      f"p75 {pct(0.75):.1f} h, max {pct(1.0):.1f} h; {wait_gpu_hours:,.0f} GPU-hours "
      f"(the gangs' GPUs times their waits)")
PY
