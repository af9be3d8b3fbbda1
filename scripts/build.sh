#!/usr/bin/env bash
# Configures and builds the release preset (warnings are errors) with two jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release >/dev/null
cmake --build --preset release -j2
