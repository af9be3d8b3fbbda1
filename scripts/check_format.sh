#!/usr/bin/env bash
# Fails if any C++ source differs from clang-format's output.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files '*.h' '*.cc' | xargs clang-format --dry-run --Werror
echo "format: clean"
