// runLeaf and the wasm executor against a real fedleaf-server on 127.0.0.1: completing tasks,
// aborting, surviving a server restart, late uploads, version refusal, and a small federated run
// whose eval loss decreases.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';

import {
  createExecutor, runLeaf, LeafStoppedError, ProtocolClient, TextLeafData, PROTOCOL_VERSION,
} from '../../js_bindings/src/index.js';
import { loadSpamAssassin } from '../../js_bindings/src/datasets/spamassassin.js';
import { spamAssassinClientData } from '../../js_bindings/src/node/simulate.js';
import { startServer, withServer, adminClient, tempDir } from '../server/server_harness.mjs';
import { textPlan } from '../e2e/browser/executor_cases.mjs';

const PLAN = textPlan({ vocab: 16384, dim: 8, optimizer: { type: 'adam', learning_rate: 0.03 }, batchSize: 16 });

let executor;
let records;
before(async () => {
  executor = await createExecutor();
  // A small, fixed slice of the corpus keeps every leaf's training short.
  const all = await loadSpamAssassin();
  records = all.filter((_, i) => i % 10 === 0);
});

async function createPopulation(server, spec) {
  return adminClient(server.url).createPopulation({ plan: PLAN, seed: 1, ...spec });
}

async function status(server, id) {
  return adminClient(server.url).status(id);
}

function leafData(index, count) {
  return new TextLeafData(executor, spamAssassinClientData(records, index, count));
}

const fast = { baseMs: 20, maxMs: 200 };

test('two leaves complete every task of a two-round population', () => withServer(async (server) => {
  const pop = await createPopulation(server, { rounds: 2, clients_per_round: 2 });
  const data = [leafData(0, 2), leafData(1, 2)];
  const summaries = await Promise.all(data.map((dataset) => runLeaf({
    server: server.url, population: pop.id, token: pop.client_token, executor, dataset, backoff: fast,
  })));
  assert.deepEqual(summaries.map((s) => s.uploaded), [2, 2], 'one task per leaf per round');
  assert.ok(summaries.every((s) => s.stopped === 'finished'));
  const st = await status(server, pop.id);
  assert.equal(st.state, 'finished');
  assert.deepEqual(st.history.filter((h) => h.round < 2).map((h) => h.reports), [2, 2]);
  data.forEach((d) => d.delete());
}));

test('an upload weighs nnz x (index + value bytes) plus the dense tensors and a header, within 10%', () => withServer(async (server) => {
  const pop = await createPopulation(server, { rounds: 1, clients_per_round: 1 });
  const data = leafData(0, 1);
  const uploads = [];
  await runLeaf({
    server: server.url, population: pop.id, token: pop.client_token, executor, dataset: data, backoff: fast,
    onEvent: (e) => { if (e.type === 'uploaded') uploads.push(e.bytes); },
  });
  const dim = PLAN.model.layers[0].dim;
  const rows = data.touchedRows(PLAN);
  const payload = rows * (8 + 4 * dim) + (dim * 2 + 2) * 4;  // I64 row ids, F32 rows; out/*
  assert.equal(uploads.length, 1);
  assert.ok(uploads[0] >= payload && uploads[0] <= payload * 1.1,
    `upload ${uploads[0]} bytes for ${rows} rows: payload ${payload}`);
  data.delete();
}));

test('a leaf aborted mid-training uploads nothing and its task goes to another leaf', () => withServer(async (server) => {
  const pop = await createPopulation(server, { rounds: 1, clients_per_round: 1, lease_s: 1 });
  const data = leafData(0, 1);
  const controller = new AbortController();
  const aborted = await runLeaf({
    server: server.url, population: pop.id, token: pop.client_token, executor, dataset: data,
    signal: controller.signal, backoff: fast,
    onEvent: (e) => { if (e.type === 'progress') controller.abort(new Error('stop')); },
  });
  assert.equal(aborted.stopped, 'aborted');
  assert.equal(aborted.uploaded, 0);
  assert.equal((await status(server, pop.id)).reports, 0);

  const second = await runLeaf({
    server: server.url, population: pop.id, token: pop.client_token, executor, dataset: data, backoff: fast,
  });
  assert.equal(second.uploaded, 1, 'the abandoned task returns to the pool when its lease expires');
  const st = await status(server, pop.id);
  assert.equal(st.state, 'finished');
  assert.equal(st.history[0].reports, 1, 'counted once');
  data.delete();
}));

test('a leaf survives a server restart mid-run and finishes the population', async () => {
  const dir = tempDir();
  let server = await startServer({ dir });
  const port = Number(new URL(server.url).port);
  const pop = await createPopulation(server, { rounds: 3, clients_per_round: 1 });
  const data = leafData(0, 1);
  let restarted;
  try {
    const summary = await runLeaf({
      server: server.url, population: pop.id, token: pop.client_token, executor, dataset: data, backoff: fast,
      onEvent: (e) => {
        if (e.type === 'uploaded' && !restarted) {
          restarted = server.kill().then(async () => { server = await startServer({ dir, port }); });
        }
      },
    });
    await restarted;
    assert.equal(summary.stopped, 'finished');
    const st = await status(server, pop.id);
    assert.equal(st.state, 'finished');
    assert.deepEqual(st.history.filter((h) => h.round < 3).map((h) => h.reports), [1, 1, 1]);
  } finally {
    data.delete();
    await restarted;
    await server.stop();
  }
});

test('a late upload gets 410: the leaf drops that task and claims the next', () => withServer(async (server) => {
  const pop = await createPopulation(server, { rounds: 1, clients_per_round: 1, lease_s: 0.3 });
  const data = leafData(0, 1);
  let slow = true;
  const slowFirstTask = {
    version: executor.version,
    async runTask(task, model, dataset, options) {
      const result = await executor.runTask(task, model, dataset, options);
      if (slow) {
        slow = false;
        await new Promise((r) => setTimeout(r, 700));  // past the 0.3 s lease
      }
      return result;
    },
  };
  const events = [];
  const summary = await runLeaf({
    server: server.url, population: pop.id, token: pop.client_token, executor: slowFirstTask,
    dataset: data, backoff: fast, onEvent: (e) => events.push(e),
  });
  const dropped = events.find((e) => e.type === 'dropped');
  assert.equal(dropped?.status, 410);
  assert.match(dropped.reason, /lease/);
  assert.equal(summary.uploaded, 1);
  assert.equal(summary.dropped, 1);
  assert.equal((await status(server, pop.id)).state, 'finished');
  data.delete();
}));

test('a leaf of another major version is stopped by a 426 naming both versions', () => withServer(async (server) => {
  const pop = await createPopulation(server, { rounds: 1, clients_per_round: 1 });
  const future = new ProtocolClient({ server: server.url, version: '7.3' });
  const executor = { runTask: () => assert.fail('must not train') };
  await assert.rejects(
    runLeaf({ server: server.url, population: pop.id, token: pop.client_token, executor, dataset: {}, client: future }),
    (e) => e instanceof LeafStoppedError && e.status === 426 && /7\.3/.test(e.message) &&
      e.message.includes(`fedleaf ${PROTOCOL_VERSION}`));
}));

test('4 leaves x 3 rounds finish and the eval loss of the global model decreases', () => withServer(async (server) => {
  const pop = await createPopulation(server, { rounds: 3, clients_per_round: 4 });
  const data = [0, 1, 2, 3].map((i) => leafData(i, 4));
  const summaries = await Promise.all(data.map((dataset) => runLeaf({
    server: server.url, population: pop.id, token: pop.client_token, executor, dataset, backoff: fast,
  })));
  assert.deepEqual(summaries.map((s) => s.uploaded), [3, 3, 3, 3]);
  const evalRecords = records.filter((r) => r.split === 'eval');
  const evalData = executor.datasetFromTexts(evalRecords.map((r) => r.text), evalRecords.map((r) => r.label), PLAN);
  const losses = [];
  for (let round = 0; round <= 3; round++) {
    const client = adminClient(server.url);
    const { bytes } = await client.downloadModel(client.modelUrl(pop.id, round));
    losses.push(executor.evaluate(PLAN, bytes, evalData).loss);
  }
  assert.ok(losses[3] < losses[0], `eval loss ${losses.join(' → ')}`);
  assert.ok(losses[1] < losses[0]);
  evalData.delete();
  data.forEach((d) => d.delete());
}));

test('a leaf downloading by select uploads the same update as with the full model and downloads fewer bytes', () => withServer(async (server) => {
  const runOne = async (download) => {
    const plan = structuredClone(PLAN);
    plan.updates['emb/weight'].download = download;
    const created = await adminClient(server.url).createPopulation({ plan, seed: 1, rounds: 1, clients_per_round: 1 });
    const data = leafData(0, 4);
    const seen = { uploads: [], selects: 0, downloaded: 0 };
    const recording = async (url, init = {}) => {
      if (init.method === 'PUT') seen.uploads.push(new Uint8Array(init.body));
      if (String(url).endsWith('/model:select')) seen.selects += 1;
      return fetch(url, init);
    };
    await runLeaf({
      server: server.url, population: created.id, token: created.client_token, executor, dataset: data,
      backoff: fast, maxTasks: 1, fetch: recording,
      onEvent: (e) => { if (e.type === 'downloaded') seen.downloaded += e.bytes; },
    });
    data.delete();
    return seen;
  };
  const full = await runOne('full');
  const selected = await runOne('select');
  assert.equal(full.selects, 0);
  assert.equal(selected.selects, 1);
  assert.equal(selected.uploads.length, 1);
  // The same bytes once the task ids (which differ between the two populations) are equal.
  const withoutTaskId = (bytes) => {
    const { tensors, metadata } = executor.decodeSafetensors(bytes);
    return executor.encodeSafetensors(tensors, { ...metadata, task_id: '' });
  };
  assert.deepEqual(withoutTaskId(selected.uploads[0]), withoutTaskId(full.uploads[0]));
  assert.ok(selected.downloaded < full.downloaded,
    `select downloaded ${selected.downloaded} bytes, full ${full.downloaded}`);
}));
