// A two-input model with a shared embedding table trained end to end through the executor:
// datasetFromInputs, each table's distinct ids (the union over the inputs feeding it), one
// model:select request listing every table once, training on the selection equal to training on
// the full model, in the SIMD and the baseline build.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createExecutor } from '../../js_bindings/src/index.js';
import { ModelSource } from '../../js_bindings/src/leaf/model_source.js';

const plan = {
  model: {
    inputs: { body: 'sparse_ids', subject: 'sparse_ids', numeric: { type: 'dense', dim: 2 } },
    layers: [
      { type: 'embedding_bag', name: 'tokens', input: 'body', vocab: 4096, dim: 8, combiner: 'sum' },
      { type: 'embedding_bag', name: 'subject_emb', input: 'subject', table: 'tokens' },
      { type: 'concatenate', name: 'deep_in', inputs: ['tokens', 'subject_emb', 'numeric'] },
      { type: 'dense', name: 'h', units: 8, activation: 'relu' },
      { type: 'dropout', name: 'drop', rate: 0.2, seed: 1 },
      { type: 'dense', name: 'out', units: 1 },
    ],
    output: 'out',
    loss: 'sigmoid_cross_entropy',
  },
  train: { optimizer: { type: 'adam', learning_rate: 0.05 }, epochs: 2, batch_size: 8 },
  updates: {
    'tokens/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors' },
    'h/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
    'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
  },
};

function generator(seed) {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
}

function randomIds(next, examples, vocab, maxIds) {
  const offsets = [0];
  const ids = [];
  for (let i = 0; i < examples; i++) {
    const count = Math.floor(next() * (maxIds + 1));
    for (let k = 0; k < count; k++) ids.push(Math.floor(next() * vocab));
    offsets.push(ids.length);
  }
  return { offsets, ids, numFeatures: 4096 };
}

function randomInputs(seed, examples) {
  const next = generator(seed);
  const body = randomIds(next, examples, 2048, 8);
  const subject = randomIds(next, examples, 4096, 3);  // ids past body's: the union is larger
  const numeric = { dense: Array.from({ length: examples * 2 }, () => next() * 2 - 1), width: 2 };
  const labels = Array.from({ length: examples }, () => (next() < 0.5 ? 0 : 1));
  return { inputs: { body, subject, numeric }, labels };
}

// What model:select answers: each table's `rows` as a row-sparse tensor, the rest whole.
function selectAnswer(executor, model, tables) {
  const { tensors } = executor.decodeSafetensors(model);
  const out = { ...tensors };
  for (const [name, rows] of Object.entries(tables)) {
    const table = tensors[name];
    const dim = table.shape[1];
    const values = new Float32Array(rows.length * dim);
    rows.forEach((row, r) => values.set(table.data.subarray(row * dim, (row + 1) * dim), r * dim));
    out[name] = { encoding: 'row_sparse', indices: BigInt64Array.from(rows, BigInt), values, dense_shape: table.shape };
  }
  return executor.encodeSafetensors(out, { model_etag: '"e1"', round: '1' });
}

for (const simd of [true, false]) {
  test(`a two-input model with a shared table trains on its selected rows as on the full model (${simd ? 'SIMD' : 'baseline'} build)`, async () => {
    const executor = await createExecutor({ simd });
    const { inputs, labels } = randomInputs(11, 80);
    const data = executor.datasetFromInputs(inputs, labels);
    try {
      assert.equal(data.size, 80);
      assert.equal(data.numInputs, 3);
      // The shared table's rows: the union of both inputs' ids, sorted.
      const union = [...new Set([...inputs.body.ids, ...inputs.subject.ids])].sort((a, b) => a - b);
      assert.deepEqual([...data.distinctIdsFor(plan, 'tokens/weight')], union);
      const task = { kind: 'train', plan, round: 1, task_id: 't1' };
      assert.deepEqual([...executor.distinctIds(data, task, 'tokens/weight')], union);
      assert.throws(() => data.distinctIdsFor(plan, 'subject_emb/weight'),
        /'subject_emb\/weight' is no embedding table of the model \(tables: tokens\/weight\)/);

      // The leaf asks for each table once, with that table's ids, in one request.
      const parsed = executor.loadPlan(plan);
      assert.deepEqual(parsed.selectRequest(data).map((t) => t.name), ['tokens/weight']);
      const source = new ModelSource({ executor, dataset: data });
      const entries = source.selection(task, parsed);
      parsed.delete();
      assert.equal(entries.length, 1);
      assert.equal(entries[0].name, 'tokens/weight');
      assert.deepEqual([...entries[0].ids], union);

      const model = executor.initializeModel(plan, 3);
      const full = await executor.train(plan, model, data, { taskId: 't1' });
      const update = executor.decodeSafetensors(full.bytes);
      assert.deepEqual([...update.tensors['tokens/weight'].indices].map(Number), union);
      assert.equal(update.metadata.num_examples, '80');
      assert.deepEqual(full.bytes, executor.execute(plan, model, data, { taskId: 't1' }));

      const selected = await executor.train(plan, selectAnswer(executor, model, { 'tokens/weight': union }), data,
        { taskId: 't1' });
      assert.deepEqual(selected.bytes, full.bytes);

      const evaluation = executor.evaluate(plan, model, data);
      assert.equal(evaluation.numExamples, 80);
      assert.ok(evaluation.auc >= 0 && evaluation.auc <= 1);
      assert.equal(executor.predict(plan, model, data).length, 160);
    } finally {
      data.delete();
    }
  });
}

test('the same multi-input training gives the same bytes in both builds', async () => {
  const results = [];
  for (const simd of [true, false]) {
    const executor = await createExecutor({ simd });
    const { inputs, labels } = randomInputs(5, 40);
    const data = executor.datasetFromInputs(inputs, labels);
    try {
      results.push(executor.execute(plan, executor.initializeModel(plan, 9), data, { taskId: 'x' }));
    } finally {
      data.delete();
    }
  }
  assert.deepEqual(results[0], results[1]);
});

test('datasetFromInputs takes float targets for mean_squared_error and names what does not fit', async () => {
  const executor = await createExecutor();
  const regression = {
    model: {
      inputs: { ids: 'sparse_ids', x: { type: 'dense', dim: 1 } },
      layers: [{ type: 'embedding_bag', name: 'e', input: 'ids', vocab: 16, dim: 2 },
        { type: 'concatenate', name: 'j', inputs: ['e', 'x'] }, { type: 'dense', name: 'out', units: 1 }],
      loss: 'mean_squared_error',
    },
    train: { optimizer: { type: 'sgd', learning_rate: 0.1 } },
    updates: { 'e/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors' } },
  };
  const inputs = { ids: { offsets: [0, 1, 3], ids: [1, 2, 3] }, x: { dense: [0.5, -1], width: 1 } };
  const data = executor.datasetFromInputs(inputs, { targets: [1.5, -0.5], width: 1 });
  try {
    const result = await executor.train(regression, executor.initializeModel(regression, 1), data);
    assert.equal(result.numExamples, 2);
    assert.equal(result.accuracy, 0);
    assert.ok(Number.isFinite(result.loss));
  } finally {
    data.delete();
  }
  const unnamed = executor.datasetFromInputs({ ids: inputs.ids }, [0, 1]);
  try {
    assert.throws(() => executor.execute(regression, executor.initializeModel(regression, 1), unnamed),
      /dataset: no input 'x' \(plan\.model\.inputs\.x\)/);
  } finally {
    unnamed.delete();
  }
  assert.throws(() => executor.datasetFromInputs({ a: { offsets: [0, 1], ids: [-1] } }, [0]),
    /inputs\.a\.ids\[0\]/);
  assert.throws(() => executor.datasetFromInputs({ a: { dense: [1, 2, 3], width: 2 } }, [0]),
    /dataset input 'a': dense values has 3 entries/);
});
