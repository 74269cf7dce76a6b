// The demo's leaf, in a module Web Worker so the page never blocks: it loads the wasm executor,
// holds this tab's data, runs runLeaf against the task repository, evaluates every published
// round's model on the held-out SpamAssassin emails, and classifies texts for "try the model".
// Emails are kept raw (headers and body): the population's plan decides, task by task, whether
// they train as text (a plan with top-level "features") or as records of fields (a plan whose
// model inputs carry "features", e.g. the demo's wide & deep plan) — EmailLeafData, a LeafData of
// one record per email carrying both; a pasted email becomes the same record.
//
// Messages (every one has a `type`):
//   page → worker  load-data {source: {kind: 'shard', url, name} | {kind: 'own', text, fileName}}
//                  join {server, population, token}      stop {}
//                  status {status}   (GET /v1/populations/{p}, polled by the page)
//                  predict {id, text}
//   worker → page  ready {version, simd}                  fatal {message}
//                  data {name, format, examples, spam}    data-error {message}
//                  plan {tableRows, touchedRows, denseUpdateBytes, modelBytes, batchSize, epochs}
//                  event {event}   (runLeaf's events, with the task reduced to {id, round, kind})
//                  evaluated {round, accuracy, loss, auc, numExamples}
//                  prediction {id, round, probabilities} | prediction-error {id, message}
//                  stopped {reason, message?}             error {message}
//
// The leaf takes one task per round (see runLoop).

import { createExecutor, indexedDbDeviceStore, runLeaf, ProtocolClient } from './fedleaf/src/index.js';
import { EmailLeafData } from './fedleaf/src/datasets/email_leaf_data.js';
import { planTakesRecords } from './fedleaf/src/leaf/leaf_data.js';

const EVAL_URL = 'data/spamassassin/eval.json';

let executor;
let local = null;       // {source: EmailLeafData | svmlight data, name}
let evalParts = null;   // {texts, labels} of the held-out emails
let evalSource = null;  // EmailLeafData over evalParts (featurized with the plan's features)
let plan = null;
let population = null;  // {server, population, token}
let leaf = null;        // {controller} of the running loop
let latest = { round: -1, bytes: null };
const evaluated = new Set();
let evaluating = false;
let pendingStatus = null;

const post = (message) => self.postMessage(message);

function errorText(error) {
  return error?.message ?? String(error);
}

// svmlight data is featurized already: one dataset for every one-input plan.
class SvmlightData {
  constructor(dataset) {
    this.dataset = dataset;
  }
  datasetFor(task) {
    if (planTakesRecords(task?.plan)) {
      throw new Error('svmlight data is featurized already: it fits a one-input plan, not this plan of records');
    }
    return this.dataset;
  }
  touchedRows() {
    return this.dataset.numDistinctIds;
  }
  delete() {
    this.dataset.delete();
  }
}

async function fetchJson(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.json();
}

async function loadData(source) {
  const { parseLocalData } = await import('./local_data.js');
  let next;
  let summary;
  if (source.kind === 'shard') {
    const records = await fetchJson(source.url);
    const texts = records.map((r) => r.text);
    const labels = records.map((r) => r.label);
    next = new EmailLeafData(executor, { train: { texts, labels } });
    summary = { format: 'spamassassin', examples: texts.length, spam: labels.filter((l) => l === 1).length };
  } else {
    const parsed = parseLocalData(source.text, source.fileName);
    if (parsed.format === 'svmlight') {
      const dataset = executor.datasetFromSvmlight(parsed.svmlight);
      const spam = dataset.labels.reduce((n, l) => n + (l === 1 ? 1 : 0), 0);
      next = new SvmlightData(dataset);
      summary = { format: 'svmlight', examples: dataset.size, spam };
    } else {
      next = new EmailLeafData(executor, { train: { texts: parsed.texts, labels: parsed.labels } });
      summary = { format: parsed.format, examples: parsed.texts.length, spam: parsed.labels.filter((l) => l === 1).length };
    }
  }
  local?.source.delete();
  local = { source: next, name: source.name ?? source.fileName ?? 'your data' };
  post({ type: 'data', name: local.name, ...summary });
  if (plan) postPlanStats();
}

// Rows of every embedding table of the plan's model: its tables as the C++ parse found them.
function embeddingRows(p) {
  const parsed = executor.loadPlan(p, { inference: true });
  try {
    return parsed.tables.reduce((n, table) => n + table.vocab, 0);
  } finally {
    parsed.delete();
  }
}

// What a dense upload of every tensor in plan.updates would weigh (F32), from the model's shapes.
function denseUpdateBytes(p, modelBytes) {
  const { tensors } = executor.decodeSafetensors(modelBytes);
  return Object.keys(p.updates ?? {}).reduce((n, name) => n + (tensors[name]?.data.byteLength ?? 0), 0);
}

function postPlanStats(modelBytes) {
  let touchedRows = 0;
  try {
    touchedRows = local ? local.source.touchedRows(plan) : 0;
  } catch (error) {
    post({ type: 'error', message: `this tab's data does not fit the plan: ${errorText(error)}` });
  }
  post({
    type: 'plan',
    tableRows: embeddingRows(plan),
    touchedRows,
    denseUpdateBytes: modelBytes ? denseUpdateBytes(plan, modelBytes) : undefined,
    modelBytes: modelBytes?.length,
    batchSize: plan.train?.batch_size ?? 32,
    epochs: plan.train?.epochs ?? 1,
  });
}

async function modelOf(round) {
  const { server, population: id } = population;
  const client = new ProtocolClient({ server });
  // Public and immutable: no token, and the browser's HTTP cache serves repeats.
  try {
    return (await client.downloadModel(client.modelUrl(id, round), { token: false })).bytes;
  } catch (error) {
    throw new Error(`model of round ${round}: ${error.status ? `HTTP ${error.status}: ` : ''}${errorText(error)}`);
  }
}

// Evaluates, in order, every published model not evaluated yet: rounds 0 .. status.round (the
// model of round r is published when round r - 1 closes; round 0's is the initial model, drawn
// as the baseline). Needs the plan, which arrives with the population status.
async function evaluateRounds(status) {
  if (evaluating) {
    pendingStatus = status;
    return;
  }
  evaluating = true;
  try {
    if (!plan) return;
    if (!evalParts) {
      const records = await fetchJson(EVAL_URL);
      evalParts = { texts: records.map((r) => r.text), labels: records.map((r) => r.label) };
    }
    if (!evalSource) evalSource = new EmailLeafData(executor, { train: evalParts });
    const dataset = evalSource.datasetFor({ kind: 'train', plan });
    for (let round = 0; round <= status.round; round++) {
      if (evaluated.has(round)) continue;
      const bytes = await modelOf(round);
      const metrics = executor.evaluate(plan, bytes, dataset);
      evaluated.add(round);
      if (round > latest.round) latest = { round, bytes };
      post({ type: 'evaluated', round, ...metrics });
    }
  } catch (error) {
    post({ type: 'error', message: `evaluation: ${errorText(error)}` });
  } finally {
    evaluating = false;
    if (pendingStatus) {
      const next = pendingStatus;
      pendingStatus = null;
      evaluateRounds(next);
    }
  }
}

// runLeaf's event, small enough to post (the task's plan stays here).
function slimEvent(event) {
  if (event.type === 'claimed') {
    const { task } = event;
    return { type: 'claimed', task: { id: task.task_id, round: task.round, kind: task.kind } };
  }
  if (event.type === 'error') return { type: 'error', message: errorText(event.error), fatal: event.fatal };
  return event;
}

function onLeafEvent(event) {
  if (event.type === 'claimed' && !plan) {
    plan = event.task.plan;
    modelOf(event.task.round).then(postPlanStats, (error) => post({ type: 'error', message: errorText(error) }));
  }
  post({ type: 'event', event: slimEvent(event) });
}

// One runLeaf loop for as long as the tab takes part. A tab is one client holding one shard:
// runLeaf's claims carry min_round, so the server gives it one train task per round, and while
// the round is open the server's retry hint is short, so the tab joins the next round promptly.
async function runLoop() {
  const controller = new AbortController();
  leaf = { controller };
  try {
    const result = await runLeaf({
      server: population.server,
      population: population.population,
      token: population.token,
      dataset: local.source,
      executor,
      prefetch: 0,
      signal: controller.signal,
      onEvent: onLeafEvent,
      // A private population's device credential survives a reload of the tab (not a wipe of the
      // site's data: then the tab enrolls as a new device, docs/design.md "Privacy").
      deviceStore: globalThis.indexedDB ? indexedDbDeviceStore() : undefined,
    });
    post({ type: 'stopped', reason: result.stopped });
  } catch (error) {
    post({ type: 'stopped', reason: 'error', message: errorText(error) });
  } finally {
    leaf = null;
  }
}

function onStatus(status) {
  // The status carries the plan, so a tab can evaluate models before it gets a task.
  if (!plan && status.plan) {
    plan = status.plan;
    modelOf(status.round).then(postPlanStats, (error) => post({ type: 'error', message: errorText(error) }));
  }
  evaluateRounds(status);
}

// What this worker learned about a population: dropped when the tab joins another one.
function forgetPopulation() {
  plan = null;
  latest = { round: -1, bytes: null };
  evaluated.clear();
  evalSource?.delete();
  evalSource = null;
}

function predict({ id, text }) {
  try {
    if (!plan || !latest.bytes) throw new Error('no model yet: join the population first');
    // The pasted email as the corpus's are held: one record serving the plan, text or records.
    const one = new EmailLeafData(executor, { train: { texts: [text], labels: [0] } });
    try {
      const probabilities = executor.predict(plan, latest.bytes, one.datasetFor({ plan }));
      post({ type: 'prediction', id, round: latest.round, probabilities: Array.from(probabilities) });
    } finally {
      one.delete();
    }
  } catch (error) {
    post({ type: 'prediction-error', id, message: errorText(error) });
  }
}

self.onmessage = async ({ data: message }) => {
  try {
    switch (message.type) {
      case 'load-data':
        try {
          await loadData(message.source);
        } catch (error) {
          post({ type: 'data-error', message: errorText(error) });
        }
        break;
      case 'join':
        if (leaf) break;
        if (population?.population !== message.population || population?.server !== message.server) {
          forgetPopulation();
        }
        population = { server: message.server, population: message.population, token: message.token };
        runLoop();
        break;
      case 'stop':
        leaf?.controller.abort(new Error('stopped by the visitor'));
        population = population && { ...population, stopped: true };
        break;
      case 'status':
        if (population || plan) onStatus(message.status);
        break;
      case 'predict':
        predict(message);
        break;
      default:
        post({ type: 'error', message: `unknown message type ${message.type}` });
    }
  } catch (error) {
    post({ type: 'error', message: errorText(error) });
  }
};

try {
  executor = await createExecutor();
  post({ type: 'ready', version: executor.version, simd: executor.simd });
} catch (error) {
  post({ type: 'fatal', message: `the wasm executor did not load: ${errorText(error)}` });
}
