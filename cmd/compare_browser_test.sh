#!/usr/bin/env bash
# ctest: `hourglass sim compare` writes an HTML report whose six charts really render in headless
# Chromium. The page's inline check (sim/html_report.cc) measures every chart on load (size via
# getBBox, a legend entry per policy, drawn marks) and writes its verdict into the DOM; this script
# reads it back with --dump-dom. To show the check can fail, it also loads three broken copies (a
# chart missing, all marks emptied, a policy dropped from one legend) and expects failures.
# Also: same input -> byte-identical HTML and JSON; bad input -> exit 2, one line, nothing written.
# Exit 77 (ctest SKIP) only when no chromium is installed.
# Usage: compare_browser_test.sh path/to/hourglass [dir-for-the-screenshot]
set -u
BIN="$1"
OUT_DIR="${2:-.}"
CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: chromium is not installed (Debian package 'chromium'; scripts/setup.sh)"
  exit 77
fi
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A small Philly-format trace: 3 VCs over two days, 1-16 GPU jobs, a few debug ones. Fixed
# arithmetic, so the file is the same on every run.
{
  echo "timestamp,duration,num_gpus,gpu_time,cluster"
  for i in $(seq 0 239); do
    vc=$(printf "vc%d" $((i % 3)))
    gpus=$((1 << (i * 7 % 5)))
    dur=$(((i * 977) % 20000 + 60))
    [ $((i % 4)) -eq 0 ] && { gpus=1; dur=$((i % 25 * 60 + 30)); }
    min=$((i * 11))
    printf "2017-10-%02d %02d:%02d:00,%d.0,%d,%d.0,%s\n" $((2 + min / 1440)) $((min % 1440 / 60)) \
      $((min % 60)) "$dur" "$gpus" $((dur * gpus)) "$vc"
  done
} > "$T/trace.csv"

POLICIES=hourglass,priority,fifo-backfill,slurm-multifactor,kueue-quota
run_compare() {
  "$BIN" sim compare --workload "$T/trace.csv" --oversubscription 2 --policies "$POLICIES" \
    --quiet --html "$1" --json "$2" > "$3" 2> "$T/stderr"
}
if ! run_compare "$T/report.html" "$T/report.json" "$T/table.txt"; then
  cat "$T/stderr"
  echo "FAIL: hourglass sim compare failed"
  exit 1
fi
cat "$T/table.txt"
grep -q "^policy " "$T/table.txt" || fail "no table printed"
grep -q "Mapping of the Philly trace" "$T/table.txt" || fail "no mapping printed"
for p in ${POLICIES//,/ }; do grep -q "^$p " "$T/table.txt" || fail "no table row for $p"; done

# A loop other than the default is named with the results, since it moves them; the default
# loop is not.
if grep -q "^simulated loop:" "$T/table.txt"; then fail "the default loop is named"; fi
"$BIN" sim compare --workload "$T/trace.csv" --oversubscription 2 --policies hourglass --quiet \
  --interval 1 --cycle-while-waiting > "$T/loop.txt" 2> "$T/stderr" || fail "run with the loop flags failed"
grep -q "^simulated loop: a cycle on the first 1 s tick after an event, and on every tick while a job waits (--interval 1 --cycle-while-waiting;" "$T/loop.txt" ||
  fail "the loop flags are not named with the results"

# Determinism: a second run gives the same bytes.
run_compare "$T/again.html" "$T/again.json" "$T/again.txt" || fail "second run failed"
cmp -s "$T/report.html" "$T/again.html" || fail "HTML differs between two runs"
cmp -s "$T/report.json" "$T/again.json" || fail "JSON differs between two runs"
cmp -s "$T/table.txt" "$T/again.txt" || fail "table differs between two runs"

# Bad input: one line naming the option, exit 2, nothing written.
"$BIN" sim compare --workload "$T/trace.csv" --policies hourglass,nope --quiet \
  --html "$T/bad.html" --json "$T/bad.json" > /dev/null 2> "$T/bad.err"
rc=$?
[ "$rc" -eq 2 ] || fail "unknown policy: exit $rc, want 2"
[ "$(wc -l < "$T/bad.err")" -eq 1 ] || fail "unknown policy: want one error line, got: $(cat "$T/bad.err")"
grep -q -- "--policies" "$T/bad.err" || fail "unknown policy: error does not name --policies"
[ ! -e "$T/bad.html" ] && [ ! -e "$T/bad.json" ] || fail "unknown policy: a file was written"

# Loads a page and prints its DOM after the inline check ran.
dump_dom() {
  timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$T")" --dump-dom "file://$1" 2> /dev/null
}
# Prints "<charts ok>/<charts>" as the page's check reported it, or "none".
verdict() {
  local v
  v="$(grep -o 'data-charts="[0-9]*/[0-9]*"' "$1" | head -1 | sed 's/.*="\(.*\)"/\1/')"
  echo "${v:-none}"
}

dump_dom "$T/report.html" > "$T/report.dom"
sed -n '/<pre id="render-check">/,/<\/pre>/p' "$T/report.dom"
[ "$(verdict "$T/report.dom")" = "6/6" ] || fail "report: charts rendered $(verdict "$T/report.dom"), want 6/6"
[ "$(grep -c 'data-rendered="ok"' "$T/report.dom")" -eq 6 ] || fail "report: want 6 figures rendered ok"

# The check itself must fail on broken pages.
sed 's/data-chart="occupancy"/data-chart="gone"/' "$T/report.html" > "$T/missing.html"
dump_dom "$T/missing.html" > "$T/missing.dom"
[ "$(verdict "$T/missing.dom")" = "5/6" ] || fail "missing chart: got $(verdict "$T/missing.dom"), want 5/6"
grep -q "occupancy: FAIL missing" "$T/missing.dom" || fail "missing chart not named"

sed -e 's/\(<path class="mark"[^>]*\) d="[^"]*"/\1 d=""/' \
  -e 's/\(<rect class="mark"[^>]*\) width="[^"]*" height="[^"]*"/\1 width="0" height="0"/' \
  -e 's/\(<circle class="mark"[^>]*\) r="[^"]*"/\1 r="0"/' "$T/report.html" > "$T/empty.html"
dump_dom "$T/empty.html" > "$T/empty.dom"
[ "$(verdict "$T/empty.dom")" = "0/6" ] || fail "empty marks: got $(verdict "$T/empty.dom"), want 0/6"

sed '0,/class="legend-entry" data-series="priority"/s//class="legend-gone" data-series="priority"/' \
  "$T/report.html" > "$T/legend.html"
dump_dom "$T/legend.html" > "$T/legend.dom"
[ "$(verdict "$T/legend.dom")" = "5/6" ] || fail "legend lacking a policy: got $(verdict "$T/legend.dom"), want 5/6"
grep -q "owed-delivered: FAIL .*legend lacks priority" "$T/legend.dom" || fail "legend gap not named"

# A screenshot for people to judge readability (kept next to the test's working directory).
timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$(mktemp -d -p "$T")" --window-size=960,4800 --hide-scrollbars \
  --screenshot="$OUT_DIR/compare_report.png" "file://$T/report.html" > /dev/null 2>&1
[ -s "$OUT_DIR/compare_report.png" ] || fail "no screenshot written"
cp "$T/report.html" "$OUT_DIR/compare_report.html"

if [ "$fails" -gt 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "compare browser test: all checks passed (screenshot: $OUT_DIR/compare_report.png)"
