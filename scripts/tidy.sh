#!/usr/bin/env bash
# clang-tidy over the project's sources with the checks in .clang-tidy (every finding an error).
# Needs a configured build for compile_commands.json: `cmake --preset release` (bench and fuzz
# sources are checked when that build has them). About 10 minutes on 2 cores.
#   scripts/tidy.sh [build dir] [file regex]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
FILES=${2:-"$PWD/(core|sim|server|store|agent|cli|cmd|tests|fuzz|bench)/"}
[[ -f $BUILD/compile_commands.json ]] || { echo "tidy: no $BUILD/compile_commands.json; run cmake --preset release" >&2; exit 2; }
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
