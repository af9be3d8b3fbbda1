#!/usr/bin/env bash
# The main job on an embedded default: installs what is needed, builds, and simulates the
# built-in contended month (lab-month) under Hourglass and the legacy priority system.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
mkdir -p out
build/release/cmd/hourglass sim --scenario lab-month --seed 1 --policies hourglass,priority \
  --json out/lab-month-seed1.json
echo "JSON report: out/lab-month-seed1.json"
