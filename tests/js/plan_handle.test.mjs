// A plan parsed once (executor.loadPlan: a PlanHandle over the wasm module's Plan): the facts the
// C++ parse derives (the tables, their owners, lookups, inputs and download rules; the select
// request of a dataset), every entry point taking it giving the bytes it gives from the plan's
// JSON, and no handle outliving its use.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createExecutor } from '../../js_bindings/src/index.js';

// Table "tokens" read by two lookups (body, subject), table "wide" on a third input; tokens
// downloads by select with a cap and padding, wide is uploaded dense (so downloaded whole).
const plan = {
  model: {
    inputs: { subject: 'sparse_ids', body: 'sparse_ids', cross: 'sparse_ids' },
    layers: [
      { type: 'embedding_bag', name: 'tokens', input: 'body', vocab: 300, dim: 4, combiner: 'sum' },
      { type: 'embedding_bag', name: 'subject_emb', input: 'subject', table: 'tokens' },
      { type: 'embedding_bag', name: 'wide', input: 'cross', vocab: 50, dim: 1 },
      { type: 'concatenate', name: 'all', inputs: ['tokens', 'subject_emb', 'wide'] },
      { type: 'dense', name: 'out', units: 1 },
    ],
    loss: 'sigmoid_cross_entropy',
  },
  train: { optimizer: { type: 'adam', learning_rate: 0.05 }, batch_size: 4 },
  updates: {
    'tokens/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors', max_select_rows: 200,
      select_padding: { multiple: 16 } },
    'wide/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
    'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
  },
};

function csr(seed, n, vocab, maxIds) {
  let state = seed;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const offsets = [0];
  const ids = [];
  for (let i = 0; i < n; i++) {
    const count = Math.floor(next() * (maxIds + 1));
    for (let k = 0; k < count; k++) ids.push(Math.floor(next() * vocab));
    offsets.push(ids.length);
  }
  return { offsets, ids, numFeatures: vocab };
}

function dataset(executor, n = 30) {
  const labels = Array.from({ length: n }, (_, i) => i % 2);
  return executor.datasetFromInputs({ body: csr(1, n, 300, 6), subject: csr(2, n, 300, 3), cross: csr(3, n, 50, 2) },
    labels);
}

const sortedUnion = (...lists) => [...new Set(lists.flat())].sort((a, b) => a - b);

test('a plan\'s tables come from its C++ parse: owner, lookups, inputs, shape, download rules', async () => {
  const executor = await createExecutor();
  const parsed = executor.loadPlan(plan);
  try {
    assert.equal(parsed.kind, 'train');
    assert.deepEqual(parsed.tables, [
      { name: 'tokens/weight', owner: 'tokens', lookups: ['tokens', 'subject_emb'], inputs: ['body', 'subject'],
        vocab: 300, dim: 4, download: 'select', maxSelectRows: 200, padding: { multiple: 16 } },
      { name: 'wide/weight', owner: 'wide', lookups: ['wide'], inputs: ['cross'], vocab: 50, dim: 1,
        download: 'full', maxSelectRows: 0, padding: null },
    ]);
  } finally {
    parsed.delete();
  }
  // "download": "full" on a row_sparse table: no table downloads by select.
  const full = structuredClone(plan);
  full.updates['tokens/weight'].download = 'full';
  delete full.updates['tokens/weight'].max_select_rows;
  delete full.updates['tokens/weight'].select_padding;
  const data = dataset(executor);
  const fullParsed = executor.loadPlan(full);
  assert.deepEqual(fullParsed.selectRequest(data), []);
  fullParsed.delete();
  data.delete();
  assert.throws(() => executor.loadPlan({ ...plan, train: undefined }), /plan\.train: missing/);
  assert.equal(executor.loadPlan({ model: plan.model }, { inference: true }).tables.length, 2);
});

test('the select request: each select table once, with the union of its inputs\' ids', async () => {
  const executor = await createExecutor();
  const data = dataset(executor);
  const parsed = executor.loadPlan(plan);
  try {
    const union = sortedUnion(csr(1, 30, 300, 6).ids, csr(2, 30, 300, 3).ids);
    const [tokens, ...rest] = parsed.selectRequest(data);
    assert.deepEqual(rest, []);
    assert.deepEqual({ ...tokens, ids: [...tokens.ids] },
      { name: 'tokens/weight', ids: union, vocab: 300, maxSelectRows: 200, padding: { multiple: 16 } });
    assert.deepEqual([...parsed.tableRows(data, 'wide/weight')], sortedUnion(csr(3, 30, 50, 2).ids));
    assert.deepEqual([...data.distinctIdsFor(parsed, 'tokens/weight')], union);
    assert.deepEqual([...data.distinctIdsFor(plan, 'tokens/weight')], union);
    assert.equal(parsed.touchedRows(data), union.length + parsed.tableRows(data, 'wide/weight').length);
    assert.deepEqual(executor.selectRequest(data, { kind: 'train', plan }).map((t) => [...t.ids]), [union]);
  } finally {
    parsed.delete();
    data.delete();
  }
});

test('every entry point gives the same bytes from a PlanHandle as from the plan object', async () => {
  for (const simd of [true, false]) {
    const executor = await createExecutor({ simd });
    const data = dataset(executor);
    const parsed = executor.loadPlan(plan);
    const model = executor.initializeModel(plan, 7);
    assert.deepEqual(executor.initializeModel(parsed, 7), model);
    const task = { kind: 'train', plan, task_id: 't1' };
    const trained = executor.execute(plan, model, data, { taskId: 't1' });
    assert.deepEqual(executor.execute(parsed, model, data, { taskId: 't1' }), trained);
    assert.deepEqual((await executor.train(parsed, model, data, { taskId: 't1' })).bytes, trained);
    assert.deepEqual((await executor.runTask(task, model, data, { plan: parsed })).bytes, trained);
    assert.deepEqual(executor.evaluate(parsed, model, data), executor.evaluate(plan, model, data));
    const evaluated = await executor.runTask({ ...task, kind: 'evaluate' }, model, data);
    assert.deepEqual((await executor.runTask({ ...task, kind: 'evaluate' }, model, data, { plan: parsed })).bytes,
      evaluated.bytes);
    assert.deepEqual(executor.predict(parsed, model, data), executor.predict({ model: plan.model }, model, data));

    // The session holds the plan: the handle may be deleted while it trains.
    const training = executor.train(parsed, model, data, { taskId: 't1', sliceMs: 0 });
    parsed.delete();
    assert.deepEqual((await training).bytes, trained);
    assert.throws(() => executor.execute(parsed, model, data), /this PlanHandle was deleted/);
    data.delete();
  }
});

// A leaked handle would keep its plan (here with 100 kB layer names, several copies each) in wasm
// memory: 300 would be well over 100 MB.
test('plans parsed for one call, and handles deleted, free their memory', async () => {
  const executor = await createExecutor();
  const big = structuredClone(plan);
  const name = 'x'.repeat(100_000);
  big.model.layers[4].name = name;
  big.updates = { [`${name}/weight`]: { encoding: 'dense', aggregator: 'weighted_mean' } };
  const data = dataset(executor);
  const model = executor.initializeModel(big, 1);
  executor.predict(big, model, data);
  const before = executor.wasmMemoryBytes;
  for (let i = 0; i < 300; i++) {
    executor.loadPlan(big).delete();
    executor.predict(big, model, data);
    assert.throws(() => executor.execute({ ...big, kind: 'bogus' }, model, data), /plan\.kind/);
  }
  assert.ok(executor.wasmMemoryBytes - before < 8 << 20,
    `wasm memory grew from ${before} to ${executor.wasmMemoryBytes} bytes`);
  data.delete();
});
