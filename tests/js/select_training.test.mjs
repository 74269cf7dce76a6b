// Training through wasm on the rows model:select answers gives the update bytes of training on
// the full table, in the SIMD and the baseline build.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createExecutor } from '../../js_bindings/src/index.js';
import { selectionIds } from '../../js_bindings/src/protocol/model_select.js';

const plan = {
  model: {
    inputs: { t: 'sparse_ids' },
    layers: [{ type: 'embedding_bag', name: 'emb', input: 't', vocab: 4096, dim: 8, combiner: 'sqrtn' },
      { type: 'dense', name: 'out', units: 2 }],
    loss: 'softmax_cross_entropy',
  },
  train: { optimizer: { type: 'adam', learning_rate: 0.05 }, epochs: 2, batch_size: 8 },
  updates: {
    'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors', select_padding: { multiple: 64 } },
    'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
    'out/bias': { encoding: 'dense', aggregator: 'weighted_mean' },
  },
};

function randomCsr(seed, examples, vocab) {
  let state = seed;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const offsets = [0];
  const ids = [];
  const labels = [];
  for (let i = 0; i < examples; i++) {
    const count = 1 + Math.floor(next() * 10);
    for (let k = 0; k < count; k++) ids.push(Math.floor(next() * vocab));
    offsets.push(ids.length);
    labels.push(next() < 0.5 ? 0 : 1);
  }
  return { offsets, ids, labels, numFeatures: vocab };
}

// What model:select answers for `rows`: emb/weight's rows as a row-sparse tensor, the rest whole.
function selectAnswer(executor, model, rows) {
  const { tensors } = executor.decodeSafetensors(model);
  const table = tensors['emb/weight'];
  const dim = table.shape[1];
  const values = new Float32Array(rows.length * dim);
  rows.forEach((row, r) => values.set(table.data.subarray(row * dim, (row + 1) * dim), r * dim));
  return executor.encodeSafetensors({
    ...tensors,
    'emb/weight': {
      encoding: 'row_sparse', indices: BigInt64Array.from(rows, BigInt), values, dense_shape: table.shape,
    },
  }, { model_etag: '"e1"', round: '1' });
}

for (const simd of [true, false]) {
  test(`training on selected rows gives the update bytes of the full table (${simd ? 'SIMD' : 'baseline'} build)`, async () => {
    const executor = await createExecutor({ simd });
    const data = executor.datasetFromCsr(randomCsr(3, 60, 4096));
    try {
      const model = executor.initializeModel(plan, 5);
      const full = await executor.train(plan, model, data, { taskId: 't1' });
      const distinct = executor.distinctIds(data);
      assert.ok(distinct.length > 100 && distinct.every((id, i) => i === 0 || distinct[i - 1] < id));
      const [table] = executor.selectRequest(data, { kind: 'train', plan });
      assert.deepEqual(table.ids, distinct);
      const rows = selectionIds(table.ids, table);
      assert.equal(rows.length % 64, 0);
      const answer = selectAnswer(executor, model, rows);
      assert.ok(answer.length * 4 < model.length, 'the selection is a fraction of the model');
      const selected = await executor.train(plan, answer, data, { taskId: 't1' });
      assert.deepEqual(selected.bytes, full.bytes);

      const missing = selectAnswer(executor, model, rows.filter((id) => id !== distinct[7]));
      await assert.rejects(executor.train(plan, missing, data),
        new RegExp(`model tensor 'emb/weight': the data touch row ${distinct[7]}, which the selected rows do not hold`));
    } finally {
      data.delete();
    }
  });
}

test('a dataset whose few ids spread up to 2^32 - 2 keeps its distinct ids without a range-sized bitmap', async () => {
  const executor = await createExecutor();
  const top = 2 ** 32 - 2;
  const data = executor.datasetFromCsr({ offsets: [0, 2, 3, 5], ids: [top, 7, 7, 3_000_000_000, top], labels: [0, 1, 0] });
  try {
    assert.equal(data.numFeatures, 2 ** 32 - 1);
    assert.equal(data.numDistinctIds, 3);
    assert.deepEqual([...data.distinctIds()], [7, 3_000_000_000, top]);
    const part = data.subset([1, 2]);
    try {
      assert.deepEqual([...part.distinctIds()], [7, 3_000_000_000, top]);
      const first = data.subset([1]);
      assert.deepEqual([...first.distinctIds()], [7]);
      first.delete();
    } finally {
      part.delete();
    }
    // Such ids do not fit a table of the plan's vocabulary: the first one out of range is named.
    const model = executor.initializeModel(plan, 5);
    await assert.rejects(executor.train(plan, model, data),
      /dataset: id 4294967294 of example 0 is not below plan\.model\.layers\[0\]\.vocab 4096/);
  } finally {
    data.delete();
  }
});

// Regression: the session borrowed the dataset's memory, so a delete() between two slices of
// train() left it reading freed memory (a trap, or another dataset's examples).
test('a dataset deleted while train() runs stays alive for the session: the same update bytes', async () => {
  const executor = await createExecutor();
  const model = executor.initializeModel(plan, 5);
  const kept = executor.datasetFromCsr(randomCsr(7, 600, 4096));
  const expected = await executor.train(plan, model, kept, { taskId: 't1' });
  kept.delete();

  const data = executor.datasetFromCsr(randomCsr(7, 600, 4096));
  let deletedAt = 0;
  const others = [];
  const got = await executor.train(plan, model, data, {
    taskId: 't1',
    sliceMs: 0.01,
    onProgress: (step, _loss, total) => {
      if (deletedAt) return;
      assert.ok(step < total, 'deleted before the last step');
      data.delete();
      deletedAt = step;
      // New datasets take the memory a freed one would leave.
      for (let i = 0; i < 4; i++) others.push(executor.datasetFromCsr(randomCsr(100 + i, 600, 4096)));
    },
  });
  assert.ok(deletedAt > 0);
  assert.equal(got.numExamples, 600);
  assert.deepEqual(got.bytes, expected.bytes);
  for (const d of others) d.delete();
});
