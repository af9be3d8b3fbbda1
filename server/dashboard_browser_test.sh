#!/usr/bin/env bash
# ctest: the web dashboard (server/ui/) in headless Chromium against a real `hourglass up` (server,
# agent and SQLite). The script submits work with the CLI, then loads the page with --dump-dom and
# reads back what the browser drew from the API: the waiting job with its reason, the running
# job with its node and protection, the budget tree, the nodes (one drained by the operator), and
# that a user sees only their own jobs. A refused token and a missing one must say so and show
# nothing of the cluster.
# Exit 77 (ctest SKIP) only when no chromium is installed.
# Usage: dashboard_browser_test.sh path/to/hourglass
set -u
BIN="$1"
CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: chromium is not installed (Debian package 'chromium'; scripts/setup.sh)"
  exit 77
fi
T="$(mktemp -d)"
UP_PID=""
cleanup() {
  [ -n "$UP_PID" ] && kill "$UP_PID" 2> /dev/null && wait "$UP_PID" 2> /dev/null
  rm -rf "$T"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A server and one agent with 4 virtual GPUs, on a free port.
"$BIN" up --data "$T/data" --gpus 4 > "$T/up.log" 2>&1 &
UP_PID=$!
for _ in $(seq 1 100); do
  grep -q "^  export HOURGLASS_URL=" "$T/up.log" 2> /dev/null && break
  sleep 0.1
done
URL="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$T/up.log" | head -1)"
ADMIN="$(cat "$T/data/server/admin.token" 2> /dev/null)"
if [ -z "$URL" ] || [ -z "$ADMIN" ]; then
  cat "$T/up.log"
  echo "FAIL: hourglass up did not come up"
  exit 1
fi
export HOURGLASS_URL="$URL"
hg() { HOURGLASS_TOKEN="${TOKEN:-$ADMIN}" "$BIN" "$@"; }

# Budgets lab > alice; user bob, a member of alice. An unfunded sweep and a funded job of bob's
# ask for all 4 GPUs each: the funded one runs (protected for an hour), the sweep waits.
hg budget add lab > /dev/null || fail "budget add lab"
hg principal add bob --role user > "$T/bob.txt" || fail "principal add bob"
BOB="$(grep -o 'hg_[0-9a-f]*' "$T/bob.txt" | head -1)"
hg budget add alice --parent lab --share 2 --member bob > /dev/null || fail "budget add alice"
hg submit --name sweep-7 --gpus 4 -- sleep 600 > /dev/null || fail "submit sweep"
TOKEN="$BOB" hg submit --name train-42 --budget alice --gpus 4 --min-runtime 1h -- sleep 600 \
  > /dev/null || fail "submit train"
for _ in $(seq 1 100); do
  hg jobs 2> /dev/null | grep -q "train-42 .*running" && break
  sleep 0.1
done
hg jobs | grep -q "train-42 .*running" || fail "the funded job did not start: $(hg jobs)"

# Loads the dashboard and prints its DOM once the page's script has read the API.
dump() {
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$T")" --virtual-time-budget=4000 --dump-dom "$1" 2> /dev/null
}
# The text of the element with id $2 in the DOM file $1, tags replaced by " | ".
text_of() {
  python3 - "$1" "$2" << 'EOF'
import html, re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<(\w+)[^>]*\bid="%s"[^>]*>(.*?)</\1>' % re.escape(sys.argv[2]), dom, re.S)
if m:
    t = re.sub(r"<[^>]+>", " | ", m.group(2))
    print(html.unescape(re.sub(r"(\s*\|\s*)+", " | ", t)).strip(" |"))
EOF
}
expect_in() {  # file id text
  local t
  t="$(text_of "$1" "$2")"
  grep -qF -- "$3" <<< "$t" || fail "$(basename "$1") #$2 lacks '$3': $t"
}
expect_not_in() {
  local t
  t="$(text_of "$1" "$2")"
  if grep -qF -- "$3" <<< "$t"; then fail "$(basename "$1") #$2 shows '$3'"; fi
}

# The admin sees everything.
dump "$URL/#token=$ADMIN" > "$T/admin.html"
grep -q '<body data-state="ready"' "$T/admin.html" || fail "admin: the page did not finish: $(head -c 600 "$T/admin.html")"
expect_in "$T/admin.html" who "admin (admin)"
expect_in "$T/admin.html" pending "sweep-7 | admin | unfunded | batch | 4"
expect_in "$T/admin.html" pending "unfunded: runs only on idle GPUs"
expect_in "$T/admin.html" running "train-42 | bob | alice | batch | 4 | running | local"
expect_in "$T/admin.html" running " | until in "  # min_runtime 1 h
expect_in "$T/admin.html" budgets "lab | 1 | - | 4.0 | 4 | 0"  # entitled to all 4 GPUs
expect_in "$T/admin.html" budgets "alice | 2 | - | 4.0 | 4 | 0"
# Each budget's last 7 days (two bars a day) and its starts' p90 wait by class: train-42's start.
python3 - "$T/admin.html" << 'EOF' || fail "admin: the budgets' daily bars are missing"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
table = re.search(r'<table id="budgets">(.*?)</table>', dom, re.S).group(1)
rows = [r for r in re.findall(r"<tr>(.*?)</tr>", table, re.S) if "<svg" in r]
assert len(rows) == 2, len(rows)
for r in rows:
    assert r.count('class="owed"') == 7 and r.count('class="delivered"') == 7, r
EOF
expect_in "$T/admin.html" budgets "| batch "
expect_in "$T/admin.html" budgets " (1)"
expect_in "$T/admin.html" nodes "local | ready | 4 / 4 | 2 | "  # then its last heartbeat's age
expect_in "$T/admin.html" summary "4 / 4 | GPUs in use | 0 | unfunded GPUs | 1 | jobs running | 1 | jobs waiting | 0 | nodes out"
grep -q 'id="login" hidden' "$T/admin.html" || fail "admin: the token form is shown"

# A job's history (#job=ID, as its id's link opens): its fields and every decision with its reason.
dump "$URL/#token=$ADMIN&job=2" > "$T/job.html"
grep -q '<body data-state="ready"' "$T/job.html" || fail "job view: the page did not finish"
expect_in "$T/job.html" job-title "Job 2: train-42"
expect_in "$T/job.html" job-fields "budget | alice"
expect_in "$T/job.html" job-fields "min_runtime | 60 min"
expect_in "$T/job.html" job-fields "resumable | no: a stop ends it"
expect_in "$T/job.html" job-fields "placement | local [0,1,2,3]"
expect_in "$T/job.html" job-fields "protected | until in "
expect_in "$T/job.html" job-events "submitted"
expect_in "$T/job.html" job-events "started | started on free GPUs"
expect_in "$T/job.html" pending "sweep-7"  # the rest of the page as before
grep -q 'id="job" hidden' "$T/admin.html" || fail "admin: a job view is open without #job"

# A long queue shows its head: with #waiting=1, the oldest waiting job and how many wait in all.
hg submit --name sweep-8 --gpus 4 -- sleep 600 > /dev/null || fail "submit sweep-8"
dump "$URL/#token=$ADMIN&waiting=1" > "$T/head.html"
expect_in "$T/head.html" pending-more "The first 1 of 2 waiting jobs are shown. | Show all"
expect_in "$T/head.html" pending "sweep-7"
expect_not_in "$T/head.html" pending "sweep-8"
expect_in "$T/head.html" summary "1 | jobs running | 2 | jobs waiting"

# Drained by the operator, the node says why and what it waits for: bob's job, protected for an
# hour, keeps it draining. Nothing is entitled to GPUs that are leaving.
hg drain local --reason "disk check" > /dev/null || fail "drain"
dump "$URL/#token=$ADMIN" > "$T/drain.html"
expect_in "$T/drain.html" nodes "local | draining | 4 / 4 | 2 | "
expect_in "$T/drain.html" nodes " | operator; disk check; empty by "
expect_in "$T/drain.html" nodes "; waits for job 2"
expect_in "$T/drain.html" budgets "alice | 2 | - | 0.0 | 4 | 0"

# bob sees his own job, not the admin's sweep; the budgets and nodes are everyone's.
dump "$URL/#token=$BOB" > "$T/bob.html"
grep -q '<body data-state="ready"' "$T/bob.html" || fail "bob: the page did not finish"
expect_in "$T/bob.html" who "bob (user)"
expect_in "$T/bob.html" running "train-42"
expect_in "$T/bob.html" pending "no job waits"
expect_not_in "$T/bob.html" pending "sweep-7"
expect_in "$T/bob.html" budgets "alice"
# Another user's job: refused in its panel, the rest of the page shown.
dump "$URL/#token=$BOB&job=1" > "$T/bob-job.html"
grep -q '<body data-state="ready"' "$T/bob-job.html" || fail "bob, job 1: the page did not finish"
expect_in "$T/bob-job.html" job-fields "authorization: not your job"
expect_not_in "$T/bob-job.html" job-events "sweep-7"
expect_in "$T/bob-job.html" running "train-42"

# A refused token: the reason, the form, no data.
dump "$URL/#token=hg_0000000000000000000000000000000000000000000000000000000000000000" > "$T/bad.html"
grep -q '<body data-state="error"' "$T/bad.html" || fail "bad token: not an error state"
expect_in "$T/bad.html" error "The token was refused (401, authorization: unknown token)"
grep -q 'id="login" hidden' "$T/bad.html" && fail "bad token: no form to enter another"
grep -q 'id="views" hidden' "$T/bad.html" || fail "bad token: the views are shown"
grep -q 'train-42' "$T/bad.html" && fail "bad token: a job is on the page"

# No token at all: asked for one, nothing requested.
dump "$URL/" > "$T/none.html"
expect_in "$T/none.html" error "Enter an API token"
grep -q 'id="login" hidden' "$T/none.html" && fail "no token: no form"

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "dashboard: every check passed"
