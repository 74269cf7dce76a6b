// Local training without a server: train() on the leaf's data, then applyUpdate() gives the
// trained model. A round aggregator is not the way: it applies the federated robust rules, and a
// round of one report changes no embedding row (min_contributors 2) and moves the dense layer
// only as far as the clip lets it.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createExecutor } from '../../js_bindings/src/index.js';
import { SMALL_TEXT_PLAN } from '../e2e/browser/executor_cases.mjs';

const TEXTS = ['win a free prize now click here', 'cheap meds online buy now', 'you are a winner claim cash',
  'meeting moved to thursday afternoon', 'patch for the build script attached', 'notes from the design review'];
const LABELS = [1, 1, 1, 0, 0, 0];

// The rows of `ids` of a [vocab, dim] F32 table.
function rows(tensors, ids) {
  const { data, shape: [, dim] } = tensors['emb/weight'];
  return Array.from(ids, (id) => Array.from(data.subarray(id * dim, (id + 1) * dim)));
}

test('training locally then applyUpdate changes the embedding and the loss on the training data falls', async () => {
  const executor = await createExecutor();
  const data = executor.datasetFromTexts(TEXTS, LABELS, SMALL_TEXT_PLAN);
  try {
    const model = executor.initializeModel(SMALL_TEXT_PLAN, 4);
    const { bytes: update } = await executor.train(SMALL_TEXT_PLAN, model, data);

    const trained = executor.applyUpdate(SMALL_TEXT_PLAN, model, update);

    const ids = data.distinctIds();
    const before = executor.decodeSafetensors(model).tensors;
    const after = executor.decodeSafetensors(trained).tensors;
    const { tensors: delta } = executor.decodeSafetensors(update);
    const changed = rows(after, ids).filter((row, i) => row.some((v, k) => v !== rows(before, ids)[i][k]));
    assert.equal(changed.length, ids.length, 'every row the data touch moved');
    const width = 4;
    delta['emb/weight'].indices.forEach((id, r) => {
      for (let k = 0; k < width; k++) {
        const expected = Math.fround(before['emb/weight'].data[Number(id) * width + k] + delta['emb/weight'].values[r * width + k]);
        assert.equal(after['emb/weight'].data[Number(id) * width + k], expected, `row ${id}: model + update`);
      }
    });
    const lossBefore = executor.evaluate(SMALL_TEXT_PLAN, model, data).loss;
    const lossAfter = executor.evaluate(SMALL_TEXT_PLAN, trained, data).loss;
    assert.ok(lossAfter < lossBefore, `training loss ${lossBefore} → ${lossAfter}`);

    // What the old recipe gave: a round of this one report leaves the embedding as it was.
    const round = executor.createRoundAggregator(SMALL_TEXT_PLAN, model);
    round.addResult(update);
    const publishedBytes = round.nextModel();
    const published = executor.decodeSafetensors(publishedBytes).tensors;
    round.delete();
    assert.deepEqual(rows(published, ids), rows(before, ids));
    const roundLoss = executor.evaluate(SMALL_TEXT_PLAN, publishedBytes, data).loss;
    assert.ok(lossAfter < roundLoss, `applyUpdate's loss ${lossAfter} is below the round's ${roundLoss}`);
  } finally {
    data.delete();
  }
});

test('applyUpdate refuses an update that does not fit the plan, naming the tensor', async () => {
  const executor = await createExecutor();
  const model = executor.initializeModel(SMALL_TEXT_PLAN, 4);
  const data = executor.datasetFromTexts(TEXTS, LABELS, SMALL_TEXT_PLAN);
  const { tensors } = executor.decodeSafetensors((await executor.train(SMALL_TEXT_PLAN, model, data)).bytes);
  data.delete();
  const encode = (t) => executor.encodeSafetensors(t, { kind: 'train', num_examples: '6', loss: '0.5' });

  assert.throws(() => executor.applyUpdate(SMALL_TEXT_PLAN, model, encode({ ...tensors, 'out/weight': { shape: [2, 4], data: new Float32Array(8) } })),
    { code: 'InvalidInput', message: /update 'out\/weight': dense_shape \[2, 4\] differs/ });
  const withoutEmbedding = { ...tensors };
  delete withoutEmbedding['emb/weight'];
  assert.throws(() => executor.applyUpdate(SMALL_TEXT_PLAN, model, encode(withoutEmbedding)),
    { code: 'InvalidInput', message: "train result: lacks tensor 'emb/weight' named in the plan's updates" });
  assert.throws(() => executor.applyUpdate(SMALL_TEXT_PLAN, model, 'bytes'),
    { name: 'TypeError', message: 'update: expected an ArrayBuffer, TypedArray or DataView, got string' });
});
