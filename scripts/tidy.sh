#!/usr/bin/env bash
# clang-tidy with the checks in .clang-tidy, every finding an error.
#   scripts/tidy.sh          the sources the binary is built from (core, sim, server, store, tls, agent,
#                            cli, cmd): what CI runs, about 9 minutes on 2 cores
#   scripts/tidy.sh --all    the tests, benchmarks and fuzz targets too: about 20 minutes
# Needs the release build's compile_commands.json (`cmake --preset release`, or scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build/release
FILES="$PWD/(core|sim|server|store|tls|agent|cli|cmd)/[a-z_]+(?<!_test)\.cc$"
if [[ ${1:-} == --all ]]; then
  FILES="$PWD/(core|sim|server|store|tls|agent|cli|cmd|tests|fuzz|bench)/"
elif [[ $# -gt 0 ]]; then
  echo "usage: scripts/tidy.sh [--all]" >&2
  exit 2
fi
[[ -f $BUILD/compile_commands.json ]] || { echo "tidy: no $BUILD/compile_commands.json; run scripts/build.sh" >&2; exit 2; }
TIDY=$(command -v run-clang-tidy-14 || command -v run-clang-tidy) || { echo "tidy: run-clang-tidy not found (Debian package clang-tidy)" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if "$TIDY" -p "$BUILD" -j "$(nproc)" -quiet "$FILES" >"$log" 2>&1; then
  echo "tidy: clean"
else
  grep -E 'warning:|error:' "$log" | sed 's/\x1b\[[0-9;]*m//g' | sort -u >&2
  echo "tidy: findings above" >&2
  exit 1
fi
