// POST /v1/populations/{p}/rounds/{r}/model:select against the real fedleaf-server binary: both
// body forms, every validation rule (400 naming it), auth and not-found answers, and the answer
// decoded against the rows of the published model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, call, createPopulation, decodeSafetensors, initialModel, trainResult, PLAN,
} from './server_harness.mjs';

const BINARY = 'application/vnd.fedleaf.select-ids';
let server;
let population;  // PLAN: emb/weight [10, 2] row_sparse (select by default), out/weight dense

before(async () => {
  server = await startServer({ args: ['--max-body-bytes', '4096'] });
  population = await createPopulation(server.url, { id: 'sel', rounds: 2, clients_per_round: 3 });
});
after(async () => { await server?.stop(); });

// The binary body: u16 name length | name | u32 count | count x u32 id, little-endian.
function binaryBody(tensors) {
  const parts = [];
  for (const [name, ids] of Object.entries(tensors)) {
    const nameBytes = Buffer.from(name, 'utf8');
    const head = Buffer.alloc(2 + nameBytes.length + 4);
    head.writeUInt16LE(nameBytes.length, 0);
    nameBytes.copy(head, 2);
    head.writeUInt32LE(ids.length, 2 + nameBytes.length);
    const body = Buffer.alloc(4 * ids.length);
    ids.forEach((id, i) => body.writeUInt32LE(id, 4 * i));
    parts.push(head, body);
  }
  return Buffer.concat(parts);
}

function select({ pop = population, round = 0, body, type = 'application/json', token, headers = {} }) {
  return call(`${server.url}/v1/populations/${pop.id}/rounds/${round}/model:select`, {
    method: 'POST', token: token ?? pop.client_token, body,
    headers: type ? { 'Content-Type': type, ...headers } : headers,
  });
}
const selectJson = (tensors, options = {}) => select({ body: JSON.stringify({ tensors }), ...options });
const selectBinary = (tensors, options = {}) => select({ body: binaryBody(tensors), type: BINARY, ...options });

async function assertRejected(responsePromise, status, fragment) {
  const res = await responsePromise;
  assert.equal(res.status, status, `status of ${res.bytes}`);
  assert.ok(res.json?.error?.message.includes(fragment),
            `message ${JSON.stringify(res.json?.error?.message)} lacks ${JSON.stringify(fragment)}`);
  return res;
}

test('the JSON and binary forms give the same bytes, decoding to the requested rows', async () => {
  const ids = [0, 3, 9];
  const json = await selectJson({ 'emb/weight': ids });
  const binary = await selectBinary({ 'emb/weight': ids });

  assert.equal(json.status, 200);
  assert.equal(json.headers.get('content-type'), 'application/octet-stream');
  assert.equal(json.headers.get('cache-control'), 'no-store');
  assert.deepEqual(binary.bytes, json.bytes);
  const { tensors, metadata } = decodeSafetensors(json.bytes);
  const model = decodeSafetensors(initialModel()).tensors;
  assert.deepEqual(Array.from(tensors['emb/weight:indices'].data), ids.map(BigInt));
  assert.deepEqual(tensors['emb/weight:values'].shape, [3, 2]);
  assert.deepEqual(Array.from(tensors['emb/weight:values'].data),
                   ids.flatMap((r) => Array.from(model['emb/weight'].data.slice(2 * r, 2 * r + 2))));
  assert.deepEqual(Array.from(tensors['emb/weight:dense_shape'].data), [10n, 2n]);
  assert.equal(tensors['emb/weight'], undefined);
  assert.deepEqual(tensors['out/weight'], model['out/weight']);
  assert.deepEqual(tensors['out/bias'], model['out/bias']);
  assert.equal(metadata['emb/weight:encoding'], 'row_sparse');
  assert.equal(metadata.model_etag, population.model_etag);
  assert.equal(metadata.round, '0');
});

test('an empty id list answers zero rows; an empty selection answers the whole model', async () => {
  const none = await selectBinary({ 'emb/weight': [] });
  assert.equal(none.status, 200);
  const { tensors } = decodeSafetensors(none.bytes);
  assert.deepEqual(tensors['emb/weight:values'].shape, [0, 2]);
  const empty = await select({ body: Buffer.alloc(0), type: BINARY });
  assert.equal(empty.status, 200);
  assert.deepEqual(decodeSafetensors(empty.bytes).tensors['emb/weight'],
                   decodeSafetensors(initialModel()).tensors['emb/weight']);
});

test('every validation rule answers 400 naming it', async () => {
  await assertRejected(selectJson({ 'emb/weight': [3, 1] }), 400,
                       "tensor 'emb/weight': row ids must be sorted strictly ascending (no duplicates): 1 at position 1 follows 3");
  await assertRejected(selectBinary({ 'emb/weight': [2, 2] }), 400,
                       'row ids must be sorted strictly ascending (no duplicates): 2 at position 1 follows 2');
  await assertRejected(selectJson({ 'emb/weight': [4, 10] }), 400,
                       "tensor 'emb/weight': row id 10 is out of range: the tensor has 10 rows");
  await assertRejected(selectBinary({ 'emb/weight': [4294967295] }), 400, 'row id 4294967295 is out of range');
  await assertRejected(selectJson({ 'emb/weight': [-1] }), 400, 'row id -1 is not a row id');
  await assertRejected(selectJson({ nope: [1] }), 400, "tensor 'nope': unknown tensor");
  await assertRejected(selectJson({ 'out/weight': [0] }), 400,
                       "tensor 'out/weight' is not marked select: its plan encoding is 'dense'");
  await assertRejected(selectJson({ 'out/bias': [0] }), 400,
                       "tensor 'out/bias' is not marked select: the plan's updates do not name it");
  await assertRejected(select({ body: '{"tensors": {"emb/weight": [1], "emb/weight": [2]}}' }), 400,
                       "tensor 'emb/weight' is listed twice");
  await assertRejected(select({ body: Buffer.concat([binaryBody({ 'emb/weight': [1] }), binaryBody({ 'emb/weight': [2] })]), type: BINARY }),
                       400, "tensor 'emb/weight' is listed twice");
  await assertRejected(select({ body: binaryBody({ 'emb/weight': [1, 2] }).subarray(0, 20), type: BINARY }), 400,
                       "tensor 'emb/weight': 2 row ids run past the end of the body");
  await assertRejected(select({ body: '{"tensors": ' }), 400, 'not valid JSON');
  await assertRejected(select({ body: '{"rows": {}}' }), 400, "unknown field 'rows'");
  await assertRejected(select({ body: '{}', type: 'text/plain' }), 400,
                       `Content-Type must be application/json or ${BINARY}, got 'text/plain'`);
  await assertRejected(select({ body: '{}', type: null }), 400, 'Content-Type must be');
});

test('max_select_rows and download "full" in the plan are enforced', async () => {
  const plan = structuredClone(PLAN);
  plan.updates['emb/weight'].max_select_rows = 2;
  const capped = await createPopulation(server.url, { id: 'sel-capped', plan });
  assert.equal((await selectJson({ 'emb/weight': [1, 2] }, { pop: capped })).status, 200);
  await assertRejected(selectJson({ 'emb/weight': [1, 2, 3] }, { pop: capped }), 400,
                       "tensor 'emb/weight': 3 row ids exceed the plan's max_select_rows of 2");

  const fullPlan = structuredClone(PLAN);
  fullPlan.updates['emb/weight'].download = 'full';
  const full = await createPopulation(server.url, { id: 'sel-full', plan: fullPlan });
  await assertRejected(selectJson({ 'emb/weight': [1] }, { pop: full }), 400,
                       "tensor 'emb/weight' is not marked select: the plan asks for it whole (download 'full')");
});

test('auth, unknown population or round, method, version and size answers', async () => {
  const body = JSON.stringify({ tensors: { 'emb/weight': [1] } });
  const url = `${server.url}/v1/populations/sel/rounds/0/model:select`;
  await assertRejected(call(url, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } }),
                       401, 'Authorization');
  await assertRejected(select({ body, token: 'not-the-token' }), 403, 'client token does not match');
  await assertRejected(select({ body, pop: { id: 'missing', client_token: 'x' } }), 404,
                       "population 'missing' does not exist");
  await assertRejected(select({ body, round: 1 }), 404, 'round 1 of population');
  await assertRejected(select({ body, round: 'x' }), 404, "round 'x' is not a number");
  await assertRejected(call(url, { method: 'GET', token: population.client_token }), 405, 'allowed: POST');
  const noVersion = await fetch(url, { method: 'POST', body, headers: {
    Authorization: `Bearer ${population.client_token}`, 'Content-Type': 'application/json' } });
  assert.equal(noVersion.status, 426);
  const big = await select({ body: binaryBody({ 'emb/weight': Array.from({ length: 2000 }, (_, i) => i) }), type: BINARY });
  assert.equal(big.status, 413);
});

test('after a round closes, each round answers from its own model', async () => {
  const pop = await createPopulation(server.url, { id: 'sel-rounds', rounds: 2, clients_per_round: 1 });
  const task = (await call(`${server.url}/v1/populations/${pop.id}/tasks:claim`,
                           { method: 'POST', token: pop.client_token })).json;
  const before = await selectJson({ 'emb/weight': [1, 3] }, { pop });
  const uploaded = await call(`${server.url}${task.upload_url}`, {
    method: 'PUT', token: task.lease_token,
    body: trainResult({ rows: [1, 3], rowValue: 0.5, denseValue: 0.25, numExamples: 2 }) });
  assert.equal(uploaded.status, 201);

  const round1 = await selectJson({ 'emb/weight': [1, 3] }, { pop, round: 1 });
  const round0 = await selectJson({ 'emb/weight': [1, 3] }, { pop, round: 0 });

  assert.equal(round1.status, 200);
  assert.deepEqual(round0.bytes, before.bytes);
  const model1 = await call(`${server.url}/v1/populations/${pop.id}/rounds/1/model`);
  const full = decodeSafetensors(model1.bytes).tensors['emb/weight'].data;
  const { tensors, metadata } = decodeSafetensors(round1.bytes);
  assert.deepEqual(Array.from(tensors['emb/weight:values'].data),
                   [full[2], full[3], full[6], full[7]]);
  assert.equal(metadata.model_etag, model1.headers.get('etag').replaceAll('"', ''));
  assert.equal(metadata.round, '1');
  assert.notEqual(metadata.model_etag, decodeSafetensors(round0.bytes).metadata.model_etag);
});
