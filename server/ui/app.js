// Hourglass dashboard: a read-only view of the queue, the running jobs, the budgets and the nodes,
// drawn from the server's /v1 API with the reader's own token, so each reader sees what the API
// lets them see (a user their own jobs, an admin everyone's). Every value from the server is set
// with textContent, never as HTML: job names and reasons come from users.
'use strict';

const REFRESH_MS = 5000;
// The head of the queue (#waiting=N shows N, up to 5,000): a queue of tens of thousands would
// make every refresh slow to read and to draw, and its head is what waits longest.
const PENDING_SHOWN = 500;
const PENDING_MAX = 5000;
// Running jobs are bounded by the GPUs, yet a large cluster runs thousands: the oldest are shown.
const RUNNING_SHOWN = 1000;
const TOKEN_KEY = 'hourglass-token';

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// The address's fragment: #token=...&job=ID.
function fragment() {
  return new URLSearchParams(window.location.hash.replace(/^#/, ''));
}

// A token given in the address (#token=...) is kept in this tab and taken out of the address, so
// that it is neither bookmarked nor left in the history; the rest of the fragment stays.
function readToken() {
  const f = fragment();
  const given = f.get('token');
  if (given) {
    sessionStorage.setItem(TOKEN_KEY, given);
    f.delete('token');
    const rest = f.toString();
    history.replaceState(null, '', window.location.pathname + window.location.search +
                                       (rest ? '#' + rest : ''));
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

function pendingShown() {
  const n = parseInt(fragment().get('waiting') || '', 10);
  return n > 0 ? Math.min(n, PENDING_MAX) : PENDING_SHOWN;
}

// The job whose history is open (#job=ID), or null.
function openJob() {
  const id = fragment().get('job');
  return id && /^[0-9]+$/.test(id) ? id : null;
}

async function api(path) {
  const token = sessionStorage.getItem(TOKEN_KEY) || '';
  let r;
  try {
    r = await fetch(path, {headers: {Authorization: 'Bearer ' + token}, cache: 'no-store'});
  } catch (e) {
    throw new ApiError(0, 'the server did not answer (' + e.message + ')');
  }
  let body = null;
  try {
    body = await r.json();
  } catch (e) {
    body = null;
  }
  if (!r.ok) {
    const err = body && body.error;
    const why = err ? err.field + ': ' + err.reason : r.statusText;
    throw new ApiError(r.status, why);
  }
  return body;
}

// --- formatting -------------------------------------------------------------------------------

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function span(seconds) {
  const s = Math.abs(seconds);
  if (s < 90) return Math.round(s) + ' s';
  if (s < 90 * 60) return Math.round(s / 60) + ' min';
  if (s < 36 * 3600) return (s / 3600).toFixed(1) + ' h';
  return (s / 86400).toFixed(1) + ' d';
}

// A server time (seconds since the epoch) said relative to now, with the exact time as a tooltip.
function when(cell, at) {
  if (at === null || at === undefined) {
    cell.textContent = '-';
    return;
  }
  const d = at - Date.now() / 1000;
  cell.textContent = Math.abs(d) < 1 ? 'now' : d > 0 ? 'in ' + span(d) : span(d) + ' ago';
  cell.title = new Date(at * 1000).toISOString();
}

// GPU-hours: tenths once there are tens of them; hundredths on a small or young cluster, where a
// budget's first minutes would otherwise read 0.0.
function hours(v) {
  if (v === null || v === undefined) return '-';
  return Number(v).toFixed(Math.abs(v) >= 10 ? 1 : 2);
}

// Fills a table: a header row from `cols`, then one row per item; each column is
// {label, num?, cell(td, item)}.
function fill(table, cols, items, empty) {
  table.replaceChildren();
  const head = el('tr');
  for (const c of cols) head.appendChild(el('th', c.label, c.num ? 'num' : ''));
  table.appendChild(head);
  if (items.length === 0) {
    const tr = el('tr');
    const td = el('td', empty, 'empty');
    td.colSpan = cols.length;
    tr.appendChild(td);
    table.appendChild(tr);
    return;
  }
  for (const it of items) {
    const tr = el('tr');
    for (const c of cols) {
      const td = el('td', null, c.num ? 'num' : c.cls || '');
      c.cell(td, it);
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
}

const text = (f) => (td, x) => {
  td.textContent = f(x);
};

// --- views ------------------------------------------------------------------------------------

const JOB_COLS = [
  {
    label: 'id',
    num: true,
    cell: (td, j) => {
      const a = el('a', j.id);
      a.href = '#job=' + j.id;
      td.appendChild(a);
    },
  },
  {label: 'name', cell: text((j) => j.name)},
  {label: 'user', cell: text((j) => j.user)},
  {label: 'budget', cell: text((j) => j.budget || 'unfunded')},
  {label: 'class', cell: text((j) => j.class)},
  {label: 'GPUs', num: true, cell: text((j) => j.gpus)},
];

// The server lists them oldest first (id order is submission order; a requeued job keeps its
// place), as they are shown.
function renderPending(list) {
  const waiting = list.jobs;
  const more = document.getElementById('pending-more');
  more.replaceChildren();
  if (list.total > waiting.length) {
    more.appendChild(el('span', 'The first ' + waiting.length + ' of ' + list.total +
                                    ' waiting jobs are shown. '));
    if (waiting.length < PENDING_MAX) {
      const f = fragment();
      f.set('waiting', String(Math.min(list.total, PENDING_MAX)));
      const a = el('a', 'Show ' + (list.total > PENDING_MAX ? 'the first ' + PENDING_MAX : 'all'));
      a.href = '#' + f.toString();
      more.appendChild(a);
    }
  }
  fill(document.getElementById('pending'), JOB_COLS.concat([
    {label: 'waiting', cell: (td, j) => when(td, j.queued_since)},
    {label: 'estimated start', cell: (td, j) => when(td, j.estimated_start_at)},
    {label: 'why it waits', cls: 'reason', cell: text((j) => j.reason || 'submitted')},
  ]), waiting, 'no job waits');
}

// Unfunded work is never protected; funded work until its protected_until (its min_runtime, or
// a session's lease), after which it may be stopped for a budget further below its share.
function protection(td, j) {
  if (!j.budget) {
    td.textContent = 'no (unfunded)';
  } else if (j.protected_until === null || j.protected_until <= j.started_at) {
    td.textContent = 'no (min_runtime 0)';
  } else if (j.protected_until <= Date.now() / 1000) {
    when(td, j.protected_until);
    td.textContent = 'no longer: ended ' + td.textContent;
  } else {
    when(td, j.protected_until);
    td.textContent = 'until ' + td.textContent;
  }
  if (j.protected_until) td.title = new Date(j.protected_until * 1000).toISOString();
}

function renderRunning(list) {
  const running = list.jobs;  // oldest first, as the server lists them
  document.getElementById('running-more').textContent = list.total > running.length ?
      'The first ' + running.length + ' of ' + list.total + ' running jobs are shown.' :
      '';
  fill(document.getElementById('running'), JOB_COLS.concat([
    {
      label: 'state',
      cell: (td, j) => {
        td.textContent = j.state;
        td.className = 'state-' + j.state;
      },
    },
    {label: 'nodes', cell: text((j) => (j.placement || []).map((p) => p.node).join(', '))},
    {label: 'started', cell: (td, j) => when(td, j.started_at)},
    {label: 'protected', cell: protection},
    {label: 'reason', cls: 'reason', cell: text((j) => j.reason)},
  ]), running, 'no job runs');
}

// "batch 12 s · debug 3 s": the p90 queue wait of the window's starts below a budget, by class.
function waits(u) {
  if (!u || !u.wait_s) return '';
  return Object.keys(u.wait_s).sort().map((c) => c + ' ' + span(u.wait_s[c].p90) + ' (' +
                                                   u.wait_s[c].count + ')').join(' · ');
}

// Seven days, oldest first: an outlined bar for what the budget was owed each day, a filled one
// for what it got, on the budget's own scale; the numbers are in the tooltip.
function daily(td, u) {
  if (!u || !u.daily || u.daily.length === 0) return;
  const NS = 'http://www.w3.org/2000/svg';
  const W = 10, H = 22;
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('width', String(u.daily.length * W));
  svg.setAttribute('height', String(H));
  svg.setAttribute('class', 'daily');
  const top = Math.max(1e-9, ...u.daily.map((d) => Math.max(d.owed_gpu_hours,
                                                            d.delivered_gpu_hours)));
  const lines = [];
  u.daily.forEach((d, i) => {
    const bar = (v, cls, inset) => {
      const h = Math.max(v > 0 ? 1 : 0, (v / top) * (H - 1));
      const r = document.createElementNS(NS, 'rect');
      r.setAttribute('x', String(i * W + inset));
      r.setAttribute('y', String(H - h));
      r.setAttribute('width', String(W - 2 - 2 * inset));
      r.setAttribute('height', String(h));
      r.setAttribute('class', cls);
      svg.appendChild(r);
    };
    bar(d.owed_gpu_hours, 'owed', 0);
    bar(d.delivered_gpu_hours, 'delivered', 2);
    lines.push(new Date(d.from * 1000).toISOString().slice(0, 10) + ': delivered ' +
               hours(d.delivered_gpu_hours) + ' of ' + hours(d.owed_gpu_hours) + ' GPU-h owed');
  });
  const title = document.createElementNS(NS, 'title');
  title.textContent = lines.join('\n');
  svg.appendChild(title);
  td.appendChild(svg);
}

function renderBudgets(budgets, usage) {
  const byName = new Map((usage || []).map((u) => [u.name, u]));
  fill(document.getElementById('budgets'), [
    {
      label: 'budget',
      cell: (td, b) => {
        td.textContent = b.name;
        td.title = b.path;
        td.style.paddingLeft = 8 + 16 * (b.path.split('/').length - 1) + 'px';
      },
    },
    {label: 'share', num: true, cell: text((b) => b.share)},
    {label: 'limit', num: true, cell: text((b) => (b.limit === null ? '-' : b.limit))},
    {label: 'entitled GPUs', num: true, cell: text((b) => Number(b.entitled_gpus).toFixed(1))},
    {label: 'running GPUs', num: true, cell: text((b) => b.running_gpus)},
    {label: 'waiting jobs', num: true, cell: text((b) => b.pending_jobs)},
    {label: 'owed GPU-h', num: true, cell: text((b) => hours(b.owed_7d_gpu_hours))},
    {label: 'delivered GPU-h', num: true, cell: text((b) => hours(b.delivered_7d_gpu_hours))},
    {
      label: 'delivered / owed',
      cell: (td, b) => {
        if (!(b.owed_7d_gpu_hours > 0)) {
          td.textContent = '-';
          return;
        }
        const r = b.delivered_7d_gpu_hours / b.owed_7d_gpu_hours;
        const meter = el('span', null, 'meter');
        const fillBar = el('i');
        fillBar.style.width = Math.min(100, r * 100).toFixed(0) + '%';
        meter.appendChild(fillBar);
        td.appendChild(meter);
        td.appendChild(el('span', (r * 100).toFixed(0) + '%', r < 0.98 ? 'under' : 'over'));
      },
    },
    {label: 'last 7 days', cell: (td, b) => daily(td, byName.get(b.name))},
    {label: 'p90 wait (starts)', cell: text((b) => waits(byName.get(b.name)))},
    {
      label: 'take-back cool-down',
      cell: (td, b) => {
        const c = b.take_back_cooldowns || [];
        td.textContent = c.length === 0 ? '' : c.map((x) => 'from ' + x.budget).join(', ');
        if (c.length > 0) td.title = c.map((x) => x.budget + ' until ' +
                                                  new Date(x.until * 1000).toISOString()).join('\n');
      },
    },
  ], budgets, 'no budget yet');
}

function renderNodes(nodes) {
  fill(document.getElementById('nodes'), [
    {label: 'node', cell: text((n) => n.name)},
    {label: 'block', cell: text((n) => n.block)},
    {
      label: 'state',
      cell: (td, n) => {
        td.textContent = n.state;
        td.className = 'state-' + n.state;
      },
    },
    {label: 'GPUs used', num: true, cell: text((n) => n.used_gpus + ' / ' + n.gpus)},
    {label: 'jobs', cell: text((n) => (n.jobs || []).join(', '))},
    {label: 'last heartbeat', cell: (td, n) => when(td, n.last_heartbeat_at)},
    {
      label: 'drain',
      cell: (td, n) => {
        if (n.state !== 'draining' && n.state !== 'drained') return;
        const parts = [n.drain_cause || '', n.drain_reason || ''].filter((s) => s);
        if (n.drain_empty_by) {
          parts.push('empty by ' + new Date(n.drain_empty_by * 1000).toISOString());
        }
        if (n.drain_waits_for) parts.push('waits for job ' + n.drain_waits_for);
        td.textContent = parts.join('; ');
      },
    },
  ], nodes, 'no node has registered');
}

// One job: what it asked for, where it stands, and every decision about it with its reason (what
// `hourglass show ID` prints). A job the reader may not see says so in place of its fields.
function renderJob(id, job, events) {
  document.getElementById('job').hidden = false;
  const title = document.getElementById('job-title');
  const fields = document.getElementById('job-fields');
  const table = document.getElementById('job-events');
  if (job instanceof Error) {
    title.textContent = 'Job ' + id;
    fill(fields, [{label: 'error', cell: text((e) => e.message)}], [job], '');
    table.replaceChildren();
    return;
  }
  title.textContent = 'Job ' + job.id + ': ' + job.name;
  // [label, value]: a value that is a function fills its cell; a time is said relative to now.
  const at = (t) => (t === null || t === undefined ? null : (td) => when(td, t));
  const rows = [
    ['state', job.state + (job.reason ? ': ' + job.reason : '')],
    ['user', job.user],
    ['budget', job.budget || 'unfunded: runs only on idle GPUs, stopped first'],
    ['shape', job.gpus + ' GPUs' + (job.gpus_per_node ? ', ' + job.gpus_per_node + ' per node' : '')],
    ['class', job.class],
    ['min_runtime', span(job.min_runtime_s)],
    ['max_runtime', job.max_runtime_s === null ? '-' : span(job.max_runtime_s)],
    ['resumable', job.resumable ? 'yes: requeued if stopped' : 'no: a stop ends it'],
    ['grace', span(job.grace_s)],
    ['attempts', job.attempts],
    // A pending job's placement and start are its last run's (a requeued job has had one).
    [job.state === 'pending' ? 'last placement' : 'placement',
     (job.placement || []).map((p) => p.node + ' [' + p.gpus.join(',') + ']').join(', ') || '-'],
    ['submitted', at(job.submitted_at)],
    [job.state === 'pending' ? 'last started' : 'started', at(job.started_at)],
    ['ended', at(job.ended_at)],
    ['estimated start', at(job.estimated_start_at)],
    ['protected',
     job.state === 'running' || job.state === 'stopping' ? (td) => protection(td, job) : null],
  ];
  fill(fields, [
    {label: 'field', cell: text((r) => r[0])},
    {
      label: 'value',
      cell: (td, r) => {
        if (typeof r[1] === 'function') r[1](td);
        else td.textContent = r[1];
      },
    },
  ], rows.filter((r) => r[1] !== null), '');
  fill(table, [
    {label: 'when', cell: (td, e) => when(td, e.at)},
    {label: 'what', cell: text((e) => e.kind)},
    {label: 'why', cls: 'reason', cell: text((e) => e.reason)},
  ], events.events, 'no decision yet');
}

function tile(label, value, note) {
  const t = el('div', null, 'tile');
  t.appendChild(el('b', value));
  t.appendChild(el('span', label));
  if (note) t.title = note;
  return t;
}

function renderSummary(running, pending, nodes) {
  const up = nodes.filter((n) => n.state === 'ready' || n.state === 'draining');
  const gpus = up.reduce((s, n) => s + n.gpus, 0);
  const used = up.reduce((s, n) => s + n.used_gpus, 0);
  const shown = running.total > running.jobs.length ? ' shown below' : '';
  const unfunded = running.jobs.filter((j) => !j.budget).reduce((s, j) => s + j.gpus, 0);
  const down = nodes.length - up.length;
  document.getElementById('summary').replaceChildren(
      tile('GPUs in use', used + ' / ' + gpus, 'on ready and draining nodes'),
      tile('unfunded GPUs', unfunded, 'held by the running jobs you may see' + shown),
      tile('jobs running', running.total),
      tile('jobs waiting', pending.total),
      tile('nodes out', down, 'drained or lost'));
}

// --- the loop ---------------------------------------------------------------------------------

// A refused token hides the views and asks for another; any other failure keeps the last views
// on screen under the message, and the loop tries again.
function showError(message, askToken) {
  const e = document.getElementById('error');
  e.textContent = message;
  e.hidden = false;
  document.getElementById('login').hidden = !askToken;
  if (askToken) document.getElementById('views').hidden = true;
  document.body.dataset.state = 'error';
}

// Each start (a new token, a job opened or closed) begins a new loop; a refresh of an older one
// that is still in flight then neither draws nor schedules another, so there is one loop.
let timer = null;
let generation = 0;

async function refresh(gen) {
  try {
    const id = openJob();
    // A job the reader may not see is reported in its panel; the rest of the page still loads.
    const one = (path) => api(path).catch((e) => (e.status === 401 ? Promise.reject(e) : e));
    const [who, running, pending, budgets, usage, nodes, job, events] = await Promise.all([
      api('/v1/whoami'), api('/v1/jobs?state=running&order=oldest&limit=' + RUNNING_SHOWN),
      api('/v1/jobs?state=pending&order=oldest&limit=' + pendingShown()), api('/v1/budgets'),
      api('/v1/usage'), api('/v1/nodes'), id ? one('/v1/jobs/' + id) : null,
      id ? one('/v1/jobs/' + id + '/events') : null,
    ]);
    if (gen !== generation) return;
    if (id) {
      renderJob(id, job, events instanceof Error ? {events: []} : events);
    } else {
      document.getElementById('job').hidden = true;
    }
    document.getElementById('who').textContent = who.name + ' (' + who.role + ')';
    renderSummary(running, pending, nodes.nodes);
    renderPending(pending);
    renderRunning(running);
    renderBudgets(budgets.budgets, usage.budgets);
    renderNodes(nodes.nodes);
    document.getElementById('updated').textContent =
        'updated ' + new Date().toLocaleTimeString() + ', every ' + REFRESH_MS / 1000 + ' s';
    document.getElementById('error').hidden = true;
    document.getElementById('login').hidden = true;
    document.getElementById('views').hidden = false;
    document.body.dataset.state = 'ready';
  } catch (e) {
    if (gen !== generation) return;
    if (e.status === 401 || e.status === 403) {
      showError('The token was refused (' + e.status + ', ' + e.message + '). Enter another.', true);
      return;  // no point asking again with the same token
    }
    showError('Could not read the cluster: ' + e.message + '. Trying again.', false);
  }
  timer = setTimeout(() => refresh(gen), REFRESH_MS);
}

function start() {
  clearTimeout(timer);
  refresh(++generation);
}

document.getElementById('login').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const v = document.getElementById('token-input').value.trim();
  if (!v) return;
  sessionStorage.setItem(TOKEN_KEY, v);
  document.getElementById('token-input').value = '';
  start();
});

window.addEventListener('hashchange', () => {
  if (readToken()) start();
});

if (readToken()) {
  start();
} else {
  showError('Enter an API token (hourglass up prints the admin\'s).', true);
}
