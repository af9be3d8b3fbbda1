#!/usr/bin/env bash
# Builds everything and runs the whole test suite (unit, property, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --preset release -j2
