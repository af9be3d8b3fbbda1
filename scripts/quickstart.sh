#!/usr/bin/env bash
# The main job on an embedded default: installs what is needed, builds, starts a server with one
# local agent (`hourglass up`, SQLite under out/hourglass-up) and shows funded work preempting
# unfunded work with its reasons; then simulates the built-in contended month (lab-month) under
# Hourglass and the legacy priority system.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
mkdir -p out
rm -rf out/hourglass-up
build/release/cmd/hourglass up --data out/hourglass-up --gpus 4 --demo
echo
build/release/cmd/hourglass sim --scenario lab-month --seed 1 --policies hourglass,priority \
  --json out/lab-month-seed1.json
echo "JSON report: out/lab-month-seed1.json"
