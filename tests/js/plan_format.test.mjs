// A leaf given a plan of a newer plan format (docs/design.md, "Versions") refuses it naming both
// versions, and trains and uploads nothing: runLeaf with the real wasm executor against a scripted
// server that hands out such a plan.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createExecutor, runLeaf, TextLeafData, VERSION } from '../../js_bindings/src/index.js';
import { SMALL_TEXT_PLAN } from '../e2e/browser/executor_cases.mjs';

const SERVER = 'http://leaf.test';
const NEWER = 1000;  // newer than any format this fedleaf reads

// One train task whose plan states `format` (or none), its model, and its upload, counted.
function scriptedServer(plan, model) {
  const state = { claims: 0, uploads: 0 };
  async function fetch(url, init = {}) {
    const path = new URL(url).pathname;
    if (path.endsWith('/tasks:claim')) {
      if (state.claims++ > 0) {
        return new Response(null, { status: 204, headers: { 'Retry-After': '0', 'Fedleaf-Population-State': 'finished' } });
      }
      return Response.json({
        task_id: 't0', round: 0, kind: 'train', lease_token: 'lease', lease_expires_at: Date.now() / 1000 + 60,
        plan, model_url: '/v1/populations/p/rounds/0/model', model_etag: '"m0"', upload_url: '/v1/tasks/t0/result',
      });
    }
    if (path.endsWith('/model')) return new Response(model, { status: 200, headers: { ETag: '"m0"' } });
    if (path === '/v1/tasks/t0/result' && init.method === 'PUT') {
      state.uploads += 1;
      return Response.json({ accepted: true }, { status: 201 });
    }
    return Response.json({ error: { code: 'not_found', message: path } }, { status: 404 });
  }
  return { fetch, state };
}

let lastServer;

async function runOnce(plan) {
  const executor = await createExecutor();
  const model = executor.initializeModel(SMALL_TEXT_PLAN, 1);
  const server = scriptedServer(plan, model);
  lastServer = server;
  const dataset = new TextLeafData(executor, {
    train: { texts: ['win a free prize now', 'notes from the design review'], labels: [1, 0] },
  });
  const events = [];
  const summary = await runLeaf({
    server: SERVER, population: 'p', token: 'c', executor, dataset, fetch: server.fetch, prefetch: 0,
    backoff: { baseMs: 1, maxMs: 5 }, onEvent: (e) => events.push(e),
  });
  dataset.delete();
  return { summary, events, uploads: server.state.uploads };
}

// The refusal comes from the first step that reads the plan (here the rows a select asks for):
// runLeaf stops with it, as with any plan the executor cannot read.
test('a plan of a newer format is refused naming both versions, and nothing is uploaded', async () => {
  const refused = new RegExp(`plan\\.format_version: the plan's format is ${NEWER}, newer than ` +
                             `this fedleaf \\(${VERSION.replaceAll('.', '\\.')}\\) reads \\(formats 1 to \\d+\\)`);
  let uploads = -1;
  await assert.rejects(async () => { ({ uploads } = await runOnce({ format_version: NEWER, ...SMALL_TEXT_PLAN })); },
                       refused);
  assert.equal(uploads, -1, 'runLeaf returned');
  assert.equal(lastServer.state.uploads, 0);
});

test('a plan stating no format, or the first, trains and uploads', async () => {
  for (const plan of [SMALL_TEXT_PLAN, { format_version: 1, ...SMALL_TEXT_PLAN }]) {
    const { summary, uploads } = await runOnce(plan);
    assert.deepEqual(summary, { uploaded: 1, dropped: 0, stopped: 'finished' });
    assert.equal(uploads, 1);
  }
});
