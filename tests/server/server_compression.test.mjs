// Compressed uploads and F16 downloads against the real fedleaf-server binary: a population whose
// plan asks for int8 + delta_varint uploads and "download_values": "f16" answers model:select
// and the full model (GET .../model, under the ETag of the F16 bytes, 304 on If-None-Match) with
// F16 values, refuses a compressed upload with a broken scale or a duplicate id (400 naming the
// tensor and the rule, nothing folded), and accepts a well-formed one; a leaf trains from the
// full F16 model and revalidates it by its ETag.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startServer, call, createPopulation, encodeSafetensors, PLAN, withServer, adminClient }
  from './server_harness.mjs';
import { createExecutor, runLeaf, ProtocolClient, TextLeafData } from '../../js_bindings/src/index.js';
import { ModelSource } from '../../js_bindings/src/leaf/model_source.js';
import { loadSpamAssassin } from '../../js_bindings/src/datasets/spamassassin.js';
import { spamAssassinClientData } from '../../js_bindings/src/node/simulate.js';
import { textPlan } from '../e2e/browser/executor_cases.mjs';

let server;
let population;

const COMPRESSED_PLAN = {
  ...PLAN,
  updates: {
    'emb/weight': { ...PLAN.updates['emb/weight'], compression: { values: 'int8', ids: 'delta_varint' },
                    download_values: 'f16' },
    'out/weight': { ...PLAN.updates['out/weight'], compression: { values: 'int8' }, download_values: 'f16' },
  },
};

before(async () => {
  server = await startServer();
  population = await createPopulation(server.url, { id: 'zip', plan: COMPRESSED_PLAN, rounds: 2, clients_per_round: 3 });
});
after(async () => { await server?.stop(); });

// The header of safetensors bytes (the harness' decoder knows no F16, I8 or U8 arrays).
function header(bytes) {
  const n = Number(bytes.readBigUInt64LE(0));
  return JSON.parse(bytes.subarray(8, 8 + n).toString());
}

// A compressed train result: emb/weight rows `ids` (delta varints `varints`) with int8 values and
// one scale per row, out/weight int8 in one block of 6 values.
function compressedResult({ varints, rows, scales }) {
  return encodeSafetensors([
    { name: 'emb/weight:dense_shape', dtype: 'I64', shape: [2], data: BigInt64Array.from([10n, 2n]) },
    { name: 'emb/weight:scales', dtype: 'F32', shape: [rows], data: Float32Array.from(scales) },
    { name: 'out/weight:scales', dtype: 'F32', shape: [1], data: Float32Array.from([0.001]) },
    { name: 'emb/weight:indices', dtype: 'U8', shape: [varints.length], data: Uint8Array.from(varints) },
    { name: 'emb/weight:values', dtype: 'I8', shape: [rows, 2], data: new Int8Array(2 * rows).fill(-100) },
    { name: 'out/weight', dtype: 'I8', shape: [3, 2], data: Int8Array.from([1, 2, 3, -4, 5, 127]) },
  ], {
    kind: 'train', num_examples: '4', loss: '0.5', 'emb/weight:encoding': 'row_sparse',
    'emb/weight:values_compression': 'int8', 'emb/weight:ids_compression': 'delta_varint',
    'out/weight:values_compression': 'int8',
  });
}

test('model:select answers the f16 download tensors as F16', async () => {
  const res = await call(`${server.url}/v1/populations/${population.id}/rounds/0/model:select`, {
    method: 'POST', token: population.client_token, body: JSON.stringify({ tensors: { 'emb/weight': [0, 3, 9] } }),
    headers: { 'Content-Type': 'application/json' },
  });
  assert.equal(res.status, 200);
  const h = header(res.bytes);
  assert.equal(h['emb/weight:values'].dtype, 'F16');
  assert.deepEqual(h['emb/weight:values'].shape, [3, 2]);
  assert.equal(h['emb/weight:indices'].dtype, 'I32', 'beside F16 values the row ids are I32');
  assert.equal(h['out/weight'].dtype, 'F16');
  assert.equal(h['out/bias'].dtype, 'F32', 'a tensor without download_values stays F32');
  assert.equal(h.__metadata__['emb/weight:values_compression'], 'f16');
});

test('a compressed upload with a broken scale or a duplicate id is a 400 naming it; a good one is accepted', async () => {
  const task = (await call(`${server.url}/v1/populations/${population.id}/tasks:claim`,
    { method: 'POST', token: population.client_token })).json;
  const put = (body) => call(`${server.url}${task.upload_url}`, { method: 'PUT', token: task.lease_token, body });

  const nan = await put(compressedResult({ varints: [0, 3], rows: 2, scales: [0.001, NaN] }));
  assert.equal(nan.status, 400);
  assert.match(nan.json.error.message, /tensor 'emb\/weight': int8 scale 1 is nan/);
  const negative = await put(compressedResult({ varints: [0, 3], rows: 2, scales: [-0.001, 0.001] }));
  assert.equal(negative.status, 400);
  assert.match(negative.json.error.message, /int8 scale 0 is -0.001/);
  const duplicate = await put(compressedResult({ varints: [3, 0], rows: 2, scales: [0.001, 0.001] }));
  assert.equal(duplicate.status, 400);
  assert.match(duplicate.json.error.message, /gap 0: ids must be strictly increasing/);
  const short = await put(compressedResult({ varints: [3], rows: 2, scales: [0.001, 0.001] }));
  assert.equal(short.status, 400);
  assert.match(short.json.error.message, /1 bytes cannot hold the 2 ids/);

  const status = await call(`${server.url}/v1/populations/${population.id}`, { token: population.client_token });
  assert.equal(status.json.reports, 0, 'nothing was folded');
  const good = await put(compressedResult({ varints: [0, 3], rows: 2, scales: [0.001, 0.002] }));
  assert.equal(good.status, 201, good.bytes.toString());
  const after = await call(`${server.url}/v1/populations/${population.id}`, { token: population.client_token });
  assert.equal(after.json.reports, 1);
});

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

test('the full model sends the f16 download tensors as F16 under the ETag of those bytes; 304 on it', async () => {
  const url = `${server.url}/v1/populations/${population.id}/rounds/0/model`;
  const res = await call(url);
  const again = await call(url);
  const notModified = await call(url, { headers: { 'If-None-Match': res.headers.get('etag') } });
  const f32Tagged = await call(url, { headers: { 'If-None-Match': `"${population.model_etag}"` } });

  assert.equal(res.status, 200);
  const h = header(res.bytes);
  assert.equal(h['emb/weight'].dtype, 'F16');
  assert.deepEqual(h['emb/weight'].shape, [10, 2], 'whole: no rows selected');
  assert.equal(h['out/weight'].dtype, 'F16');
  assert.equal(h['out/bias'].dtype, 'F32', 'a tensor without download_values stays F32');
  assert.equal(h.__metadata__['emb/weight:values_compression'], 'f16');
  assert.equal(h.__metadata__.model_etag, population.model_etag);
  assert.equal(res.headers.get('etag'), `"${sha256(res.bytes)}"`);
  assert.notEqual(res.headers.get('etag'), `"${population.model_etag}"`);
  assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  assert.equal(again.headers.get('etag'), res.headers.get('etag'));
  assert.deepEqual(again.bytes, res.bytes);
  assert.equal(notModified.status, 304);
  assert.equal(f32Tagged.status, 200, 'the F32 ETag names other bytes');
});

test('a leaf trains from the full F16 model (download "full") and revalidates it by its ETag', async () => {
  const executor = await createExecutor();
  const records = (await loadSpamAssassin()).filter((_, i) => i % 10 === 0);
  const plan = textPlan({ vocab: 16384, dim: 8, optimizer: { type: 'adam', learning_rate: 0.03 }, batchSize: 16 });
  for (const name of Object.keys(plan.updates)) plan.updates[name].download_values = 'f16';
  plan.updates['emb/weight'].download = 'full';
  await withServer(async (srv) => {
    const admin = adminClient(srv.url);
    const pop = await admin.createPopulation({ plan, seed: 1, rounds: 1, clients_per_round: 1, eval_tasks_per_round: 0 });
    const dataset = new TextLeafData(executor, spamAssassinClientData(records, 0, 1));
    const downloads = [];
    const summary = await runLeaf({
      server: srv.url, population: pop.id, token: pop.client_token, executor, dataset,
      backoff: { baseMs: 20, maxMs: 200 },
      onEvent: (e) => { if (e.type === 'downloaded') downloads.push(e); },
    });
    assert.equal(summary.uploaded, 1);
    const full = await call(`${srv.url}/v1/populations/${pop.id}/rounds/0/model`);
    const f32Bytes = 4 * (16384 * 8 + 8 * 2 + 2);
    assert.equal(downloads.length, 1);
    assert.equal(downloads[0].select, false);
    assert.equal(downloads[0].bytes, full.bytes.length);
    assert.ok(full.bytes.length < 0.6 * f32Bytes, `${full.bytes.length} bytes: F16, not ${f32Bytes}`);
    const st = await admin.status(pop.id);
    assert.equal(st.state, 'finished');
    assert.equal(st.history[0].reports, 1, 'the upload trained on the F16 model was folded');

    // The leaf's model cache: a second task on the same round's model revalidates (304), no bytes.
    const client = new ProtocolClient({ server: srv.url });
    const task = { task_id: 't', kind: 'evaluate', round: 0, plan, model_url: `/v1/populations/${pop.id}/rounds/0/model`,
      model_etag: pop.model_etag };
    const events = [];
    const models = new ModelSource({ client, population: pop.id, token: pop.client_token, executor: {}, dataset: null,
      retry: (what, fn) => fn(), emit: (e) => events.push(e) });
    const first = await models.fetch(task);
    const second = await models.fetch({ ...task, task_id: 'u' });
    assert.deepEqual(Buffer.from(first), full.bytes);
    assert.equal(second, first, 'served from the cache');
    assert.deepEqual(events.map(({ bytes, cached }) => ({ bytes, cached })),
      [{ bytes: full.bytes.length, cached: false }, { bytes: 0, cached: true }]);
    dataset.delete();
  });
});
