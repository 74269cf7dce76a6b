// The demo page: form, live view and charts. All training happens in leaf_worker.js; this module
// only talks to the worker (typed messages, see the worker's header) and polls the population's
// status (GET /v1/populations/{p}, public) once a second.
//
// URL query: ?population=ID&token=CLIENT_TOKEN[&shard=I][&noniid=1] fills the form.
// window.fedleafDemo exposes a read-only snapshot of the page's state (for tests and curious
// visitors): {joined, status, evaluated, uploads, uploadedBytes, ...}.

import { ProtocolClient, ProtocolError } from './fedleaf/src/index.js';
import { formatBytes, formatCount, formatPercent } from './format.js';
import { accuracyChart, lossChart } from './charts.js';
import { renderGuarantee } from './privacy_panel.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const STATUS_POLL_MS = 1000;
const client = new ProtocolClient();  // the task repository that serves this page
const LOG_LINES = 6;

const state = {
  ready: false,
  joined: false,
  joining: false,
  population: '',
  status: null,
  evaluated: new Map(),     // round → {accuracy, loss, auc, examples}
  examples: 0,
  plan: null,               // {tableRows, touchedRows, denseUpdateBytes, batchSize, epochs}
  uploads: 0,
  uploadedBytes: 0,
  downloadedBytes: 0,
  lastUpdateBytes: 0,
  tab: 'idle',
  errors: [],
};
window.fedleafDemo = { get state() { return structuredClone({ ...state, evaluated: Object.fromEntries(state.evaluated) }); } };

const charts = { accuracy: null, loss: null };
let shardIndex = null;
let pickedShard = null;
let pollTimer = null;
let predictionId = 0;

// ---- the worker

const worker = new Worker('leaf_worker.js', { type: 'module', name: 'fedleaf-leaf' });
worker.onmessage = ({ data: message }) => handlers[message.type]?.(message);
worker.onerror = (event) => {
  event.preventDefault();
  showEngine(`The worker failed: ${event.message}`, 'bad');
};

const handlers = {
  ready({ version, simd }) {
    state.ready = true;
    const isolated = self.crossOriginIsolated ? 'cross-origin isolated' : 'not cross-origin isolated';
    showEngine(`wasm ${simd ? 'SIMD' : 'baseline'} · fedleaf ${version} · ${isolated}`, 'good');
    $('join').disabled = false;
  },
  fatal({ message }) {
    showEngine(message, 'bad');
  },
  data({ name, format, examples, spam }) {
    state.examples = examples;
    $('fact-examples').textContent = formatCount(examples);
    $('data-summary').textContent =
      `${name}: ${formatCount(examples)} ${format === 'svmlight' ? 'examples' : 'emails'} in this tab, ` +
      `${formatPercent(spam / examples, 0)} spam.`;
    $('data-summary').classList.remove('bad');
    if (state.joining) {
      worker.postMessage({ type: 'join', server: location.origin, population: state.population, token: $('token').value.trim() });
      state.joining = false;
      state.joined = true;
      setTab('waiting', 'Asking for a task…');
      startPolling();
    }
  },
  'data-error'({ message }) {
    state.joining = false;
    setJoined(false);
    $('data-summary').textContent = message;
    $('data-summary').classList.add('bad');
  },
  plan(plan) {
    state.plan = { ...state.plan, ...Object.fromEntries(Object.entries(plan).filter(([, v]) => v !== undefined)) };
    renderMeters();
  },
  event({ event }) {
    onLeafEvent(event);
  },
  evaluated({ round, accuracy, loss, auc, numExamples }) {
    state.evaluated.set(round, { accuracy, loss, auc, examples: numExamples });
    renderCharts();
    $('try-button').disabled = false;
    $('chart-note').textContent = `Each published model is evaluated in this tab's worker on ` +
      `${formatCount(numExamples)} held-out SpamAssassin emails. Latest: round ${round}, ` +
      `accuracy ${formatPercent(accuracy)}${auc !== undefined ? `, AUC ${auc.toFixed(3)}` : ''}.`;
  },
  prediction({ id, round, probabilities }) {
    if (id !== predictionId) return;
    const spam = probabilities[1];
    $('verdict').hidden = false;
    $('verdict-label').textContent = spam >= 0.5 ? `Spam · ${formatPercent(spam, 0)}` : `Not spam · ${formatPercent(1 - spam, 0)}`;
    $('verdict-label').className = spam >= 0.5 ? 'spam' : 'ham';
    $('verdict-round').textContent = round === 0 ? 'initial model' : `model after round ${round}`;
    $('verdict-bar').style.width = `${(spam * 100).toFixed(1)}%`;
    $('verdict-bar').className = `fill ${spam >= 0.5 ? 'spam' : 'ham'}`;
  },
  'prediction-error'({ message }) {
    $('verdict').hidden = true;
    $('try-note').textContent = message;
  },
  stopped({ reason, message }) {
    setJoined(false);
    if (reason === 'finished') setTab('done', 'The population has finished training.');
    else if (reason === 'error') setTab('error', message);
    else setTab('idle', 'Left the population.');
  },
  error({ message }) {
    log(message, 'bad');
  },
};

// ---- leaf events → tab state

function trainingSteps() {
  const plan = state.plan;
  if (!plan || !state.examples) return 0;
  return Math.ceil(state.examples / plan.batchSize) * plan.epochs;
}

// A buffered population (FedBuff) has versions instead of rounds: a task's round is the model
// version it trains on (0 is the initial model), and a new version is published every
// buffer_size reports.
const isBuffered = () => state.status?.mode === 'buffered';
const taskRound = (round) => (isBuffered() ? `version ${round}` : `round ${round + 1}`);

function onLeafEvent(event) {
  switch (event.type) {
    case 'claimed':
      setTab('busy', `Claimed ${event.task.kind} task #${event.task.id} of ${taskRound(event.task.round)}; downloading the model…`);
      log(`claimed ${event.task.kind} task #${event.task.id} (${taskRound(event.task.round)})`);
      setTrainProgress(0);
      break;
    case 'enrolled':
      log(`enrolled as device ${event.deviceId} (kept in this browser for this population)`);
      break;
    case 'downloaded':
      state.downloadedBytes += event.bytes;
      $('fact-down').textContent = formatBytes(state.downloadedBytes);
      setTab('busy', event.cached ? 'Model already here (cached); training…' : `Downloaded the model (${formatBytes(event.bytes)}); training…`);
      break;
    case 'progress': {
      const total = trainingSteps();
      setTab('busy', `Training · step ${formatCount(event.step)}${total ? ` of ${formatCount(total)}` : ''} · loss ${event.loss.toFixed(4)}`);
      setTrainProgress(total ? event.step / total : 0);
      break;
    }
    case 'trained':
      setTrainProgress(1);
      setTab('busy', `Trained on ${formatCount(event.numExamples)} emails in ${(event.ms / 1000).toFixed(1)} s (loss ${event.loss.toFixed(4)}); uploading the update…`);
      break;
    case 'uploaded':
      state.uploads += 1;
      state.uploadedBytes += event.bytes;
      state.lastUpdateBytes = event.bytes;
      setTab('waiting', `Update accepted (${formatBytes(event.bytes)}). Waiting for the next ${isBuffered() ? 'version' : 'round'}…`);
      log(`uploaded ${formatBytes(event.bytes)} for task #${event.taskId} (HTTP ${event.status})`);
      renderMeters();
      break;
    case 'dropped':
      log(`task #${event.taskId} dropped: ${event.reason}`, 'bad');
      setTab('waiting', 'The update was not used; asking for another task…');
      break;
    case 'idle':
      if (state.tab !== 'waiting') {
        setTab('waiting', isBuffered() ? 'Waiting for a task (this tab reported to this version, or every slot is taken)…'
          : 'Waiting for a task (the round has all the clients it needs)…');
      }
      break;
    case 'error':
      log(event.message, event.fatal ? 'bad' : '');
      break;
    case 'finished':
      setTab('done', 'The population has finished training.');
      log('population finished');
      break;
    default:
      break;
  }
}

// ---- rendering

function showEngine(text, kind) {
  $('engine').textContent = text;
  $('engine').className = `engine ${kind}`;
}

function setTab(kind, text) {
  state.tab = kind;
  const el = $('tab-state');
  el.className = `tab-state ${kind}`;
  el.querySelector('.text').textContent = text;
}

function setTrainProgress(fraction) {
  const bar = $('train-progress');
  bar.setAttribute('aria-valuenow', fraction.toFixed(2));
  bar.querySelector('.bar').style.width = `${Math.min(100, fraction * 100).toFixed(1)}%`;
}

function log(text, kind = '') {
  const item = document.createElement('li');
  if (kind) item.className = kind;
  const time = document.createElement('time');
  time.textContent = new Date().toLocaleTimeString('en-GB');
  item.append(time, ` ${text}`);
  $('log').prepend(item);
  while ($('log').children.length > LOG_LINES) $('log').lastChild.remove();
}

function renderMeters() {
  const plan = state.plan ?? {};
  const dense = (plan.denseUpdateBytes ?? 0) * state.uploads;
  $('bytes-up').textContent = formatBytes(state.uploadedBytes);
  if (state.uploads > 0 && dense > 0) {
    $('bytes-up-bar').style.width = `${Math.max(0.5, (100 * state.uploadedBytes) / dense).toFixed(2)}%`;
    $('bytes-dense-bar').style.width = '100%';
    $('bytes-detail').textContent = `${state.uploads} update${state.uploads > 1 ? 's' : ''}; dense updates would have been ` +
      `${formatBytes(dense)}: ${(dense / state.uploadedBytes).toFixed(0)}× more.`;
  }
  if (plan.tableRows) {
    const fraction = plan.touchedRows / plan.tableRows;
    $('rows').textContent = `${formatCount(plan.touchedRows)} of ${formatCount(plan.tableRows)}`;
    $('rows-bar').style.width = `${Math.max(0.5, fraction * 100).toFixed(2)}%`;
    $('rows-detail').textContent = `This tab's emails touch ${formatPercent(fraction)} of the embedding tables' rows; ` +
      'only those rows are trained and uploaded.';
  }
}

function renderStatus(status) {
  renderGuarantee($('privacy-guarantee'), status.privacy);
  if (status.mode === 'buffered') {
    renderBufferedStatus(status);
    return;
  }
  const finished = status.state === 'finished';
  $('round-label').textContent = finished
    ? `Finished · ${status.rounds} round${status.rounds > 1 ? 's' : ''}`
    : `Round ${status.round + 1} of ${status.rounds}`;
  const target = status.clients_per_round;
  const reports = finished ? target : status.reports;
  const bar = $('round-progress');
  bar.setAttribute('aria-valuemax', String(target));
  bar.setAttribute('aria-valuenow', String(reports));
  bar.querySelector('.bar').style.width = `${Math.min(100, (100 * reports) / target).toFixed(1)}%`;
  const closed = status.history.filter((r) => r.status === 'closed' && r.round < status.rounds);
  const last = closed[closed.length - 1];
  $('round-detail').textContent = finished
    ? `Population “${status.id}” trained ${status.rounds} rounds with ${target} reports each.`
    : `${reports} of ${target} reports in this round` +
      (last?.duration_s != null ? ` · the last round took ${last.duration_s.toFixed(1)} s` : '') +
      ` · population “${status.id}”`;
}

// A buffered population: the open version's buffer fills to buffer_size reports, then the next
// version is published; tasks out (training now) against the concurrency.
function renderBufferedStatus(status) {
  const finished = status.state === 'finished';
  const { buffer_size: target, concurrency } = status.buffered;
  $('round-label').textContent = finished
    ? `Finished · ${status.rounds} version${status.rounds > 1 ? 's' : ''} published`
    : `Version ${status.round} of ${status.rounds}`;
  const reports = finished ? target : status.reports;
  const bar = $('round-progress');
  bar.setAttribute('aria-valuemax', String(target));
  bar.setAttribute('aria-valuenow', String(reports));
  bar.querySelector('.bar').style.width = `${Math.min(100, (100 * reports) / target).toFixed(1)}%`;
  $('round-detail').textContent = finished
    ? `Population “${status.id}” (buffered) published ${status.rounds} versions, one every ${target} reports.`
    : `${reports} of ${target} reports in this version's buffer · ${status.tasks_out ?? 0} of ${concurrency} ` +
      `tasks out · population “${status.id}” (buffered)`;
}

function renderCharts() {
  if (!globalThis.Chart) return;
  charts.accuracy ??= accuracyChart($('accuracy-chart'));
  charts.loss ??= lossChart($('loss-chart'));
  const rounds = [...state.evaluated.keys()].filter((r) => r > 0).sort((a, b) => a - b);
  const initial = state.evaluated.get(0);
  charts.accuracy.data.labels = rounds.map(String);
  charts.accuracy.data.datasets[0].data = rounds.map((r) => state.evaluated.get(r).accuracy * 100);
  charts.accuracy.data.datasets[1].data = rounds.map(() => (initial ? initial.accuracy * 100 : null));
  charts.accuracy.update();
  $('accuracy-chart').parentElement.classList.toggle('has-data', rounds.length > 0);

  const trained = (state.status?.history ?? []).filter((r) => r.status === 'closed' && r.mean_train_loss != null);
  const last = Math.max(0, ...rounds, ...trained.map((r) => r.round + 1));
  const labels = Array.from({ length: last }, (_, i) => i + 1);
  charts.loss.data.labels = labels.map(String);
  charts.loss.data.datasets[0].data = labels.map((r) => state.evaluated.get(r)?.loss ?? null);
  charts.loss.data.datasets[1].data = labels.map((r) => trained.find((h) => h.round + 1 === r)?.mean_train_loss ?? null);
  charts.loss.update();
  $('loss-chart').parentElement.classList.toggle('has-data', last > 0);
}

// ---- status polling

async function pollStatus() {
  try {
    const status = await client.status(state.population);
    state.status = status;
    renderStatus(status);
    renderCharts();
    worker.postMessage({ type: 'status', status });
    if (status.state === 'finished' && !state.joined) return;  // nothing will change any more
  } catch (error) {
    if (!(error instanceof ProtocolError)) {
      $('round-detail').textContent = `The server is not reachable: ${error.message}`;
    } else {
      $('round-detail').textContent = error.message;
      $('round-label').textContent = 'Population not available';
      // No such population (or a malformed id): asking again will not help until the form changes.
      if (error.status >= 400 && error.status < 500 && error.status !== 429) return;
    }
  }
  pollTimer = setTimeout(pollStatus, STATUS_POLL_MS);
}

function startPolling() {
  clearTimeout(pollTimer);
  pollStatus();
}

// ---- the form

function dataKind() {
  return document.querySelector('input[name="data-kind"]:checked').value;
}

function setJoined(joined) {
  state.joined = joined;
  $('join').hidden = joined;
  $('leave').hidden = !joined;
  for (const el of document.querySelectorAll('#join-form input, #join-form select, #join-form textarea')) {
    el.disabled = joined;
  }
}

function fillShards() {
  const nonIid = $('non-iid').checked;
  const select = $('shard');
  select.replaceChildren();
  for (const shard of shardIndex.shards.filter((s) => s.non_iid === nonIid)) {
    const option = document.createElement('option');
    option.value = shard.file;
    option.dataset.name = `${nonIid ? 'Non-IID shard' : 'Shard'} ${shard.index + 1} of ${shard.of}`;
    option.textContent = `${shard.index + 1} of ${shard.of} · ${formatCount(shard.examples)} emails · ` +
      `${formatPercent(shard.spam / shard.examples, 0)} spam`;
    select.append(option);
  }
  // The same shard number across IID / non-IID; a random one at first, so tabs differ.
  pickedShard ??= params.has('shard') ? Number(params.get('shard'))
    : Math.floor(Math.random() * select.options.length);
  select.selectedIndex = Math.min(Math.max(0, pickedShard), select.options.length - 1);
}

async function loadShardIndex() {
  try {
    const response = await fetch('data/spamassassin/index.json');
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    shardIndex = await response.json();
    fillShards();
  } catch (error) {
    $('shard').replaceChildren(new Option('No shards on this server'));
    log(`SpamAssassin shards are not available (${error.message}); use your own emails`, 'bad');
  }
}

async function join(event) {
  event.preventDefault();
  const population = $('population').value.trim();
  const token = $('token').value.trim();
  if (!population || !token) {
    $('data-summary').textContent = 'Enter the population and its client token (the operator gives both).';
    $('data-summary').classList.add('bad');
    (population ? $('token') : $('population')).focus();
    return;
  }
  let source;
  if (dataKind() === 'shard') {
    const option = $('shard').selectedOptions[0];
    if (!shardIndex || !option) return;
    source = { kind: 'shard', url: `data/spamassassin/${option.value}`, name: option.dataset.name };
  } else {
    const file = $('own-file').files[0];
    const text = file ? await file.text() : $('own-text').value;
    source = { kind: 'own', text, fileName: file?.name ?? '', name: file ? file.name : 'Your emails' };
  }
  if (population !== state.population) forgetPopulation();
  state.population = population;
  state.joining = true;
  setJoined(true);
  $('data-summary').textContent = 'Reading the data…';
  $('round-label').textContent = 'Joining…';
  worker.postMessage({ type: 'load-data', source });
}

// Counters and charts belong to one population: start afresh when the tab joins another.
function forgetPopulation() {
  Object.assign(state, { status: null, plan: null, uploads: 0, uploadedBytes: 0, downloadedBytes: 0, lastUpdateBytes: 0 });
  state.evaluated.clear();
  $('bytes-up').textContent = '0 B';
  $('bytes-up-bar').style.width = '0';
  $('bytes-dense-bar').style.width = '0';
  $('bytes-detail').textContent = 'No update uploaded yet.';
  $('rows').textContent = '–';
  $('rows-bar').style.width = '0';
  $('fact-down').textContent = '0 B';
  $('verdict').hidden = true;
  renderCharts();
}

function leave() {
  worker.postMessage({ type: 'stop' });
  setTab('idle', 'Leaving…');
}

function tryModel(event) {
  event.preventDefault();
  const text = $('try-text').value.trim();
  if (!text) {
    $('try-text').focus();
    return;
  }
  predictionId += 1;
  $('try-note').textContent = 'Uses the latest global model, in this tab: the text is not sent anywhere.';
  worker.postMessage({ type: 'predict', id: predictionId, text });
}

$('population').value = params.get('population') ?? '';
$('token').value = params.get('token') ?? '';
$('non-iid').checked = params.get('noniid') === '1';
$('join-form').addEventListener('submit', join);
$('leave').addEventListener('click', leave);
$('try-form').addEventListener('submit', tryModel);
$('non-iid').addEventListener('change', fillShards);
$('shard').addEventListener('change', () => { pickedShard = $('shard').selectedIndex; });
for (const radio of document.querySelectorAll('input[name="data-kind"]')) {
  radio.addEventListener('change', () => {
    $('shard-panel').hidden = dataKind() !== 'shard';
    $('own-panel').hidden = dataKind() !== 'own';
  });
}
loadShardIndex();
if ($('population').value.trim()) {
  state.population = $('population').value.trim();
  startPolling();
}
