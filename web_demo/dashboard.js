// The operator dashboard: lists populations (GET /v1/populations, admin token), shows one
// population's rounds and rejected uploads (GET /v1/populations/{p}) and the server's counters
// (GET /metrics), refreshed every 2 s. The admin token lives in a variable of this module only:
// never in storage, the URL or a cookie.
//
// A buffered population (status "mode": "buffered", FedBuff) has versions instead of rounds:
// history entry v is version v's buffer (0-based, as tasks and models name it), its reports and
// their staleness (the server's record: mean / max per version, the counts in the cell's title and
// a chart); the stats say the mode, the version, the buffer's reports of buffer_size, the train
// tasks out of the concurrency, max_staleness and the stale uploads refused (409, reason
// "stale"). A synchronous population's page is as it was before the mode existed.
//
// A private population (status "privacy") adds a stat of ε spent and planned, the guarantee in
// words and a chart of ε after each round against max_epsilon (status privacy.epsilon_by_round).

import { ProtocolClient, ProtocolError } from './fedleaf/src/index.js';
import { formatBytes, formatCount, formatDuration, formatPercent } from './format.js';
import { COLORS, roundsChart } from './charts.js';

const $ = (id) => document.getElementById(id);
const REFRESH_MS = 2000;
const client = new ProtocolClient();  // the task repository that serves this page

let adminToken = '';
let selected = null;
let timer = null;
const charts = {};

// "3 (12) / 1 / 250": reports the robust clip scaled down (over all tensors; in parentheses the
// rows the row clip scaled down, for rounds that recorded them) / reports whose example count was
// capped / rows left unchanged below min_contributors (over all tensors; rounds recorded before
// it was counted show two numbers); the cell's title names each count and the example cap; "–"
// while the round is open (the counts are recorded when it closes).
function robustCounts(robust) {
  if (!robust || robust.capped === undefined) return '–';
  const total = (perTensor) => Object.values(perTensor ?? {}).reduce((n, c) => n + c, 0);
  let clipped = formatCount(total(robust.clipped));
  if (robust.clipped_rows !== undefined) clipped += ` (${formatCount(total(robust.clipped_rows))})`;
  const counts = [clipped, formatCount(robust.capped)];
  if (robust.withheld_rows !== undefined) counts.push(formatCount(total(robust.withheld_rows)));
  const span = document.createElement('span');
  span.textContent = counts.join(' / ');
  const cap = robust.example_cap ?? 'none';
  span.title = [
    `reports clipped: ${total(robust.clipped)}`,
    ...(robust.clipped_rows !== undefined ? [`rows clipped: ${total(robust.clipped_rows)}`] : []),
    `reports capped: ${robust.capped} (example cap ${cap})`,
    ...(robust.withheld_rows !== undefined ? [`rows withheld: ${total(robust.withheld_rows)}`] : []),
  ].join('\n');
  return span;
}

// "0.021 / 0.15 / 0.14": the bound each tensor's robust clip used in the round (rms or L2 norm,
// as the plan's clip says; an open round shows the adaptive bounds it clips at), tensors in name
// order, named in the cell's title; "–" when no tensor is clipped.
function clipBounds(robust) {
  const entries = Object.entries(robust?.clip_bound ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  if (entries.length === 0) return '–';
  const span = document.createElement('span');
  span.textContent = entries.map(([, bound]) => bound.toPrecision(2)).join(' / ');
  span.title = entries.map(([tensor, bound]) => `${tensor}: ${bound}`).join('\n');
  return span;
}

// Each cell of `tr` labelled with its column's visible header: a narrow screen shows the table's
// rows as blocks of "label value" lines (style.css, table.stack), which fit a phone's width.
function labelCells(tr, table) {
  const heads = [...table.tHead.rows[0].cells].filter((th) => !th.hidden).map((th) => th.textContent);
  [...tr.cells].forEach((td, k) => { td.dataset.label = heads[k] ?? ''; });
}

// "0.50 / 1": a closed version's mean and largest staleness; the title has the counts
// ("staleness 0: 3 reports"); "–" while the version is open (recorded when it closes).
function stalenessCell(staleness) {
  if (!staleness) return '–';
  const span = document.createElement('span');
  span.textContent = `${staleness.mean.toFixed(2)} / ${staleness.max}`;
  span.title = Object.entries(staleness.counts).sort(([a], [b]) => Number(a) - Number(b))
    .map(([s, n]) => `staleness ${s}: ${n} report${n === 1 ? '' : 's'}`).join('\n');
  return span;
}

function cell(text, { num = false, className = '' } = {}) {
  const td = document.createElement('td');
  if (num) td.className = 'num';
  if (className) td.classList.add(className);
  if (text instanceof Node) td.append(text); else td.textContent = text;
  return td;
}

function pill(text) {
  const span = document.createElement('span');
  span.className = `pill ${text}`;
  span.textContent = text;
  return span;
}

function setServerState(text, kind) {
  $('server-state').textContent = text;
  $('server-state').className = `engine ${kind}`;
}

function renderPopulations(populations) {
  const body = $('populations').tBodies[0];
  body.replaceChildren();
  if (populations.length === 0) {
    const tr = document.createElement('tr');
    tr.append(cell('No populations yet: scripts/demo.sh or POST /v1/populations creates one.', { className: 'empty' }));
    tr.firstChild.colSpan = 4;
    body.append(tr);
    return;
  }
  for (const p of populations) {
    const tr = document.createElement('tr');
    if (p.id === selected) tr.className = 'selected';
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'link';
    button.textContent = p.id;
    button.setAttribute('aria-label', `Show population ${p.id}`);
    button.addEventListener('click', () => {
      selected = p.id;
      refresh();
    });
    // A buffered population counts model versions, not rounds, and has no clients per round.
    const buffered = p.mode === 'buffered';
    const done = p.state === 'finished' ? p.rounds : p.round + (buffered ? 0 : 1);
    const progress = `${buffered ? 'version ' : ''}${done} of ${p.rounds}`;
    tr.append(cell(button), cell(pill(p.state)), cell(progress, { num: true }),
      cell(buffered ? 'buffered' : formatCount(p.clients_per_round), { num: true }));
    body.append(tr);
  }
}

function stat(label, value, title = '') {
  const div = document.createElement('div');
  div.className = 'stat';
  if (title) div.title = title;
  const span = document.createElement('span');
  span.textContent = label;
  const strong = document.createElement('strong');
  strong.textContent = value;
  div.append(span, strong);
  return div;
}

function renderDetail(status) {
  const buffered = status.mode === 'buffered';
  for (const el of [$('detail'), ...document.querySelectorAll('[data-detail]')]) el.hidden = false;
  for (const el of document.querySelectorAll('[data-buffered]')) el.hidden = !buffered;
  for (const el of document.querySelectorAll('[data-privacy]')) el.hidden = !status.privacy;
  $('detail-title').textContent = `Population “${status.id}”`;
  const finished = status.state === 'finished';
  const rejected = Object.values(status.rejections ?? {}).reduce((a, b) => a + b, 0);
  const trainRounds = status.history.filter((r) => r.round < status.rounds);
  const uploaded = trainRounds.reduce((n, r) => n + r.upload_bytes, 0);
  $('detail-stats').replaceChildren(...(buffered ? bufferedStats(status) : [
    stat('State', status.state),
    stat('Round', finished ? `${status.rounds} of ${status.rounds}` : `${status.round + 1} of ${status.rounds}`),
    stat('Reports this round', finished ? '–' : `${status.reports} of ${status.clients_per_round}`),
    stat('Train tasks per round', formatCount(status.train_tasks_per_round)),
    stat('Lease', `${status.lease_s} s`),
    stat('Round deadline', `${status.round_deadline_s} s`),
  ]), stat('Uploaded in total', formatBytes(uploaded)), stat('Rejected uploads', formatCount(rejected)),
  ...(status.privacy ? [privacyStat(status.privacy)] : []));
  if (status.privacy) $('privacy-guarantee').textContent = status.privacy.guarantee;

  // Rounds are shown 1-based; versions as the server names them (version v trains on model v).
  const label = (r) => String(buffered ? r.round : r.round + 1);
  $('rounds-title').textContent = buffered ? 'Versions' : 'Rounds';
  $('rounds-unit').textContent = buffered ? 'Version' : 'Round';
  const rounds = $('rounds').tBodies[0];
  rounds.replaceChildren();
  for (const r of trainRounds) {
    const tr = document.createElement('tr');
    tr.append(cell(label(r)), cell(pill(r.status)), cell(formatCount(r.reports), { num: true }));
    if (buffered) tr.append(cell(stalenessCell(r.staleness), { num: true, className: 'staleness' }));
    tr.append(
      cell(formatCount(r.examples), { num: true }), cell(formatBytes(r.upload_bytes), { num: true }),
      cell(r.mean_train_loss == null ? '–' : r.mean_train_loss.toFixed(4), { num: true }),
      cell(r.mean_train_accuracy == null ? '–' : formatPercent(r.mean_train_accuracy), { num: true }),
      cell(r.eval?.accuracy == null ? '–' : formatPercent(r.eval.accuracy), { num: true }),
      cell(robustCounts(r.robust), { num: true }),
      cell(clipBounds(r.robust), { num: true, className: 'clip-bound' }),
      cell(r.duration_s == null ? 'open' : formatDuration(r.duration_s), { num: true }));
    labelCells(tr, $('rounds'));
    rounds.append(tr);
  }

  const rejections = $('rejections').tBodies[0];
  rejections.replaceChildren();
  const reasons = Object.entries(status.rejections ?? {});
  if (reasons.length === 0) {
    const tr = document.createElement('tr');
    tr.append(cell('None: every upload was accepted.', { className: 'empty' }), cell(''));
    rejections.append(tr);
  }
  for (const [reason, count] of reasons.sort((a, b) => b[1] - a[1])) {
    const tr = document.createElement('tr');
    tr.append(cell(reason.replaceAll('_', ' ')), cell(formatCount(count), { num: true }));
    rejections.append(tr);
  }
  renderCharts(trainRounds, status.clients_per_round, { buffered, label });
  if (status.privacy) renderPrivacyChart(trainRounds, status.privacy, label);
}

// "ε 1.23 of 4.00": spent after the rounds released, and what the configured run reaches.
function privacyStat(privacy) {
  return stat('Privacy ε spent', `${privacy.epsilon_spent.toFixed(2)} of ${privacy.epsilon_at_end.toFixed(2)}`,
    `device-level (ε, δ = ${privacy.delta}) by DP-FTRL: noise multiplier ${privacy.noise_multiplier}, ` +
    `clip norm ${privacy.clip_norm}, max ε ${privacy.max_epsilon}`);
}

// ε after each closed round (epsilon_by_round[r]: after round r, 0-based), none for the open one.
function renderPrivacyChart(rounds, privacy, label) {
  if (!globalThis.Chart) return;
  charts.privacy ??= roundsChart($('privacy-chart'), [
    { label: 'ε spent', color: COLORS.accent }, { label: 'max ε', color: COLORS.warn, dashed: true }],
  { yTitle: 'ε' });
  charts.privacy.data.labels = rounds.map(label);
  charts.privacy.data.datasets[0].data = rounds.map((r) => privacy.epsilon_by_round[r.round] ?? null);
  charts.privacy.data.datasets[1].data = rounds.map(() => privacy.max_epsilon);
  charts.privacy.update();
}

// A buffered population's stats: its mode and what bounds it, the open version and its buffer,
// the train tasks out now, and the uploads refused as too stale (409).
function bufferedStats(status) {
  const finished = status.state === 'finished';
  const b = status.buffered;
  const weight = b.staleness_weight.weight === 'polynomial'
    ? `1/(1+s)^${b.staleness_weight.exponent}` : b.staleness_weight.weight;
  return [
    stat('State', status.state),
    stat('Mode', 'buffered', 'FedBuff: a version every buffer_size reports, no barrier'),
    stat('Version', finished ? `${status.rounds} of ${status.rounds}` : `${status.round} of ${status.rounds}`),
    stat('Reports in this version', finished ? '–' : `${status.reports} of ${b.buffer_size}`),
    stat('Train tasks out', `${formatCount(status.tasks_out ?? 0)} of ${formatCount(b.concurrency)}`),
    stat('Max staleness', String(b.max_staleness), `a report is weighed ${weight} (s: its staleness); past ` +
      `${b.max_staleness} it is refused (409)`),
    stat('Stale uploads refused (409)', formatCount(status.rejections?.stale ?? 0)),
    stat('Lease', `${status.lease_s} s`),
  ];
}

function renderCharts(rounds, target, { buffered, label }) {
  if (!globalThis.Chart) return;
  const unit = buffered ? 'version' : 'round';
  charts.reports ??= roundsChart($('reports-chart'), [
    { label: 'reports', color: COLORS.accent }, { label: 'clients per round', color: COLORS.neutral, dashed: true }]);
  charts.train ??= roundsChart($('train-chart'), [
    { label: 'train loss', color: COLORS.warn }, { label: 'train accuracy', color: COLORS.accent },
    { label: 'eval accuracy (leaves)', color: COLORS.second }]);
  charts.bytes ??= roundsChart($('bytes-chart'), [{ label: 'uploaded kB', color: COLORS.accent }],
    { yTitle: 'kB' });
  $('reports-title').textContent = `Reports per ${unit}`;
  $('loss-title').textContent = `Train loss and accuracy per ${unit}`;
  $('bytes-title').textContent = `Bytes uploaded per ${unit}`;
  charts.reports.data.datasets[1].label = buffered ? 'buffer size' : 'clients per round';
  const labels = rounds.map(label);
  const set = (chart, series) => {
    chart.data.labels = labels;
    chart.options.scales.x.title.text = unit;
    series.forEach((values, i) => { chart.data.datasets[i].data = values; });
    chart.update();
  };
  set(charts.reports, [rounds.map((r) => r.reports), rounds.map(() => target)]);
  set(charts.train, [rounds.map((r) => r.mean_train_loss), rounds.map((r) => r.mean_train_accuracy),
    rounds.map((r) => r.eval?.accuracy ?? null)]);
  set(charts.bytes, [rounds.map((r) => r.upload_bytes / 1000)]);
  if (buffered) {
    charts.staleness ??= roundsChart($('staleness-chart'), [
      { label: 'mean staleness', color: COLORS.accent }, { label: 'largest', color: COLORS.warn }],
    { yTitle: 'versions behind', xTitle: 'version' });
    set(charts.staleness, [rounds.map((r) => r.staleness?.mean ?? null), rounds.map((r) => r.staleness?.max ?? null)]);
  }
}

// Prometheus text → [[series, value]] without histogram buckets.
function parseMetrics(text) {
  return text.split('\n')
    .filter((line) => line && !line.startsWith('#') && !line.includes('_bucket{'))
    .map((line) => {
      const at = line.lastIndexOf(' ');
      return [line.slice(0, at), Number(line.slice(at + 1))];
    });
}

function renderMetrics(series) {
  const body = $('metrics').tBodies[0];
  body.replaceChildren();
  for (const [name, value] of series) {
    const tr = document.createElement('tr');
    const code = document.createElement('code');
    code.textContent = name.replace(/^fedleaf_/, '');
    const shown = name.includes('bytes') ? formatBytes(value)
      : name.includes('seconds_sum') ? formatDuration(value) : formatCount(value);
    tr.append(cell(code), cell(shown, { num: true }));
    body.append(tr);
  }
}

async function refresh() {
  clearTimeout(timer);
  try {
    const { populations } = await client.listPopulations({ token: adminToken });
    setServerState(`Connected · ${populations.length} population${populations.length === 1 ? '' : 's'}`, 'good');
    selected ??= populations.find((p) => p.state === 'running')?.id ?? populations[0]?.id ?? null;
    renderPopulations(populations);
    if (selected) {
      renderDetail(await client.status(selected));
      // A server without /metrics still has a dashboard; an unreachable one does not.
      const metrics = await client.metrics().catch((error) => {
        if (error instanceof ProtocolError) return null;
        throw error;
      });
      if (metrics !== null) renderMetrics(parseMetrics(metrics));
    }
    $('login-note').textContent = '';
  } catch (error) {
    if (error.status === 401 || error.status === 403) {
      adminToken = '';
      setServerState('Not connected', '');
      $('login-note').textContent = `The server refused the token: ${error.message}`;
      $('login-note').classList.add('bad');
      return;
    }
    setServerState(`Server unreachable: ${error.message}`, 'bad');
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

$('login').addEventListener('submit', (event) => {
  event.preventDefault();
  adminToken = $('admin-token').value.trim();
  $('admin-token').value = '';
  $('login-note').classList.remove('bad');
  $('login-note').textContent = 'Connecting…';
  if (adminToken) refresh();
});
