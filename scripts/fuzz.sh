#!/usr/bin/env bash
# Fuzzes the parsers of user input with libFuzzer (clang, AddressSanitizer, UBSan): the CSV reader,
# the four scenario files, the Philly, generic CSV/JSONL and openb trace adapters, and the HTTP
# API's request bodies. Besides crashes and sanitizer reports, each target checks what the parser
# promises (fuzz/*_fuzz.cc). Every fuzz/*_fuzz.cc is run, seeded from fuzz/corpus/<name>/.
# Not part of the test command: a run takes minutes. A finding is saved as
# out/fuzz/<target>/crash-* (replay: build/fuzz/fuzz/<target> FILE) and the script exits 1.
#   scripts/fuzz.sh [seconds per target, default 60]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
status=0
for src in fuzz/*_fuzz.cc; do
  t=$(basename "$src" .cc)
  name=${t%_fuzz}
  work=out/fuzz/$t
  mkdir -p "$work"
  echo "== $t: ${SECONDS_EACH}s"
  # The working corpus grows in out/; the seeds in fuzz/corpus/ stay as committed.
  if ! (cd "$work" && "../../../build/fuzz/fuzz/$t" -max_total_time="$SECONDS_EACH" -max_len=8192 \
    -print_final_stats=1 . "../../../fuzz/corpus/$name" 2>&1 | tail -n 12); then
    status=1
  fi
  if compgen -G "$work/crash-*" >/dev/null || compgen -G "$work/leak-*" >/dev/null; then
    echo "$t: findings in $work" >&2
    status=1
  fi
done
exit $status
