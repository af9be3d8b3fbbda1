#!/usr/bin/env bash
# How good a waiting job's estimated start is (the server's `estimated_start_at`): runs
# `hourglass` on lab-month seed N (or philly-dev at oversubscription K with --philly K) with
# --explain, reads each `pending` line that carries an `estimated_start` (written when the job's
# reason changes, so the first estimate of each wait) and the job's next start after it, and prints
# per kind of wait: how many estimates, how many of those jobs started in the run, how many
# started before the estimate, how many within 10 minutes and within an hour of it, and the
# absolute error's p50 and p90.
#   bench/eta_accuracy.sh [build/release/cmd/hourglass] SEED [END_DAYS]
#   bench/eta_accuracy.sh [build/release/cmd/hourglass] --philly K
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/release/cmd/hourglass
if [[ ${1:-} != --* && ${1:-} == */* ]]; then
  BIN=$1
  shift
fi
if [[ ${1:-} == --philly ]]; then
  workload=(--philly ../shared/traces/philly-dev.csv --oversubscription "${2:?usage: --philly K}")
else
  workload=(--scenario lab-month --seed "${1:?usage: bench/eta_accuracy.sh [BIN] SEED [END_DAYS]}")
  [[ -n ${2:-} ]] && workload+=(--end-days "$2")
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BIN" sim "${workload[@]}" --policies hourglass --quiet --explain --decisions "$tmp/d.jsonl" \
  >/dev/null
python3 - "$tmp/d.jsonl" <<'EOF'
import bisect, json, statistics, sys

starts, estimates = {}, []
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d["action"] == "start":
        starts.setdefault(d["job"], []).append(d["t"])
    elif d["action"] == "pending" and "estimated_start" in d:
        r = d["reason"]
        kind = ("holds the reservation" if r.startswith("holds a reservation")
                else "victims leaving" if r.startswith("GPUs are being freed")
                else "waits for protected work" if "still protected" in r
                else "other")
        estimates.append((kind, d["job"], d["t"], d["estimated_start"]))
print("| wait | estimates | started | before the estimate | within 10 min | within 1 h | error p50 | error p90 |")
print("|---|---|---|---|---|---|---|---|")
for kind in ("holds the reservation", "victims leaving", "waits for protected work", "other"):
    rows = [e for e in estimates if e[0] == kind]
    if not rows:
        continue
    errors, before = [], 0
    for _, job, t, eta in rows:
        s = starts.get(job, [])
        i = bisect.bisect_left(s, t)
        if i == len(s):
            continue
        errors.append(abs(s[i] - eta) / 3600)
        before += s[i] < eta
    n = len(errors)
    pct = lambda k: f"{100 * k / n:.1f}%" if n else "-"
    p90 = statistics.quantiles(errors, n=10)[8] if n >= 2 else float("nan")
    print(f"| {kind} | {len(rows)} | {n} | {pct(before)} | {pct(sum(e <= 1 / 6 for e in errors))} "
          f"| {pct(sum(e <= 1 for e in errors))} | {statistics.median(errors) if n else float('nan'):.2f} h "
          f"| {p90:.2f} h |")
EOF
