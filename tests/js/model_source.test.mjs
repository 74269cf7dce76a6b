// ModelSource (js_bindings/src/leaf/model_source.js) against a scripted client: select → full →
// ETag cache, and what each refusal means. runLeaf's own tests cover it over a fake fetch.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { LeafStoppedError } from '../../js_bindings/src/leaf/leaf_stopped_error.js';
import { ModelSource } from '../../js_bindings/src/leaf/model_source.js';
import { ProtocolError } from '../../js_bindings/src/protocol/protocol_error.js';

const SERVER = 'http://models.test/';
const httpError = (status) => new ProtocolError({ status, code: 'x', message: `status ${status}`, url: SERVER });
const SELECT_PLAN = {
  model: { layers: [{ type: 'embedding_bag', name: 'emb', vocab: 100, dim: 2 }] },
  updates: { 'emb/weight': { encoding: 'row_sparse', max_select_rows: 3 } },
};

function task(id, { plan = {}, etag = '"m1"', kind = 'train', modelUrl = '/v1/populations/p/rounds/1/model' } = {}) {
  return { task_id: id, round: 1, kind, plan, model_url: modelUrl, model_etag: etag };
}

// A client answering selectModel with `selectAnswer` (bytes or an error to throw) and
// downloadModel as a server holding `model` under `etag` would.
function fakeClient({ selectAnswer = new Uint8Array([9, 9]), model = new Uint8Array([1, 2, 3]), etag = '"m1"' } = {}) {
  const calls = [];
  return {
    calls,
    url: (path) => new URL(path, SERVER),
    async selectModel(population, round, entries) {
      calls.push({ call: 'select', population, round, entries });
      if (selectAnswer instanceof Error) throw selectAnswer;
      return selectAnswer;
    },
    async downloadModel(url, { etag: ifNoneMatch } = {}) {
      calls.push({ call: 'download', url: url.href, ifNoneMatch });
      if (model instanceof Error) throw model;
      return ifNoneMatch === etag ? { kind: 'not_modified', etag } : { kind: 'model', bytes: model, etag };
    },
  };
}

// An executor whose select request (the plan's C++ facts in a real one: plan_handle.test.mjs) is
// the table emb/weight with `distinctIds` for SELECT_PLAN (or a handle of it), none for another
// plan, recording what it was asked with.
function source(client, { distinctIds = [3, 7] } = {}) {
  const events = [];
  const asked = [];
  const models = new ModelSource({
    client, population: 'p', token: 'client-token', dataset: { name: 'data' },
    executor: {
      asked,
      selectRequest: (dataset, task, plan) => {
        asked.push({ dataset, task, plan });
        if (plan !== SELECT_PLAN && !plan.parsed) return [];
        return [{ name: 'emb/weight', ids: Uint32Array.from(distinctIds), vocab: 100, maxSelectRows: 3, padding: null }];
      },
    },
    retry: (what, call) => call(),
    emit: (event) => events.push(event),
  });
  return { models, events, asked };
}

const downloaded = (events) => events.map(({ taskId, bytes, cached, select }) => ({ taskId, bytes, cached, select }));

test('a select plan fetches the rows of the data\'s distinct ids', async () => {
  const client = fakeClient();
  const { models, events, asked } = source(client);
  const t = task('t0', { plan: SELECT_PLAN });
  const handle = { parsed: true };
  assert.deepEqual(await models.fetch(t, handle), new Uint8Array([9, 9]));
  // The executor is asked with the plan the caller parsed once, else the task's plan.
  assert.deepEqual(asked, [{ dataset: { name: 'data' }, task: t, plan: handle }]);
  await models.fetch(t);
  assert.equal(asked[1].plan, SELECT_PLAN);
  client.calls.splice(1);
  events.splice(1);
  assert.deepEqual(client.calls.map((c) => c.call), ['select']);
  assert.equal(client.calls[0].population, 'p');
  assert.deepEqual(client.calls[0].entries.map(({ name, ids }) => ({ name, ids: [...ids] })), [{ name: 'emb/weight', ids: [3, 7] }]);
  assert.deepEqual(downloaded(events), [{ taskId: 't0', bytes: 2, cached: false, select: true }]);
});

test('the full model is fetched when the data exceed max_select_rows, the task is not train, or the server refuses the selection', async () => {
  for (const [why, client, options, t] of [
    ['too many rows', fakeClient(), { distinctIds: [1, 2, 3, 4] }, task('t0', { plan: SELECT_PLAN })],
    ['an evaluate task', fakeClient(), {}, task('t0', { plan: SELECT_PLAN, kind: 'evaluate' })],
    ['404', fakeClient({ selectAnswer: httpError(404) }), {}, task('t0', { plan: SELECT_PLAN })],
    ['405', fakeClient({ selectAnswer: httpError(405) }), {}, task('t0', { plan: SELECT_PLAN })],
  ]) {
    const { models, events } = source(client, options);
    assert.deepEqual(await models.fetch(t), new Uint8Array([1, 2, 3]), why);
    assert.equal(client.calls.at(-1).call, 'download', why);
    assert.deepEqual(downloaded(events), [{ taskId: 't0', bytes: 3, cached: false, select: false }], why);
  }
});

test('the last full model is served from memory for its ETag and revalidated for another', async () => {
  const client = fakeClient();
  const { models, events } = source(client);
  const first = await models.fetch(task('t0'));
  assert.equal(await models.fetch(task('t1')), first, 'same ETag: no request');
  assert.equal(await models.fetch(task('t2', { etag: '"m2"' })), first, 'another ETag: 304 keeps the bytes');
  assert.deepEqual(client.calls, [
    { call: 'download', url: `${SERVER}v1/populations/p/rounds/1/model`, ifNoneMatch: undefined },
    { call: 'download', url: `${SERVER}v1/populations/p/rounds/1/model`, ifNoneMatch: '"m1"' },
  ]);
  assert.deepEqual(downloaded(events), [
    { taskId: 't0', bytes: 3, cached: false, select: false },
    { taskId: 't1', bytes: 0, cached: true, select: false },
    { taskId: 't2', bytes: 0, cached: true, select: false },
  ]);
});

test("the memory cache matches the task's model_etag, not the header ETag (quoted, or of F16 bytes)", async () => {
  const client = fakeClient({ etag: '"f16-bytes-hash"' });
  const { models, events } = source(client);
  const first = await models.fetch(task('t0', { etag: 'm1' }));
  assert.equal(await models.fetch(task('t1', { etag: 'm1' })), first, 'same model_etag: no request');
  assert.equal(client.calls.length, 1);
  assert.deepEqual(downloaded(events).map((e) => e.cached), [false, true]);
});

test('only the newest model is kept: another URL downloads again without If-None-Match', async () => {
  const client = fakeClient();
  const { models } = source(client);
  await models.fetch(task('t0'));
  await models.fetch(task('t1', { modelUrl: '/v1/populations/p/rounds/2/model' }));
  await models.fetch(task('t2'));
  assert.deepEqual(client.calls.map((c) => c.ifNoneMatch), [undefined, undefined, undefined]);
});

test('a refusal no retry fixes stops the leaf; a 426 names the version', async () => {
  const { models: downloads } = source(fakeClient({ model: httpError(403) }));
  await assert.rejects(downloads.fetch(task('t0')),
    (e) => e instanceof LeafStoppedError && e.status === 403 && e.message === 'model download failed with HTTP 403: status 403');
  const { models: selects } = source(fakeClient({ selectAnswer: httpError(426) }));
  await assert.rejects(selects.fetch(task('t0', { plan: SELECT_PLAN })),
    (e) => e instanceof LeafStoppedError && e.status === 426 && /^server refused this leaf's version: /.test(e.message));
});
