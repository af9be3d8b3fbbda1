#!/usr/bin/env bash
# What `--large-job-gpus G` trades on lab-month seeds 1-3, off (0) and at G (bench/option_study.sh).
#   bench/large_job_study.sh [build/release/cmd/hourglass] [G, default 65]
set -euo pipefail
cd "$(dirname "$0")/.."
exec bench/option_study.sh "${1:-build/release/cmd/hourglass}" --large-job-gpus 0 "${2:-65}"
