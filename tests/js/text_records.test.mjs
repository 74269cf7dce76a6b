// Texts are records: datasetFromTexts sends [{text}] down the one records path (a one-input text
// plan reads the record field "text"), and its datasets and trained bytes are pinned to what the
// text path gave before it was one (the constants were computed by the build before the change),
// in the SIMD and the baseline build; datasetFromRecords with a text plan gives the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

import { createExecutor } from '../../js_bindings/src/index.js';
import { loadSpamAssassin } from '../../js_bindings/src/datasets/spamassassin.js';

// scripts/demo/spam_plan.json as it was when the constants were computed (copied, so the pin does
// not move with the demo's settings).
const TEXT_PLAN = {
  model: {
    inputs: { tokens: 'sparse_ids' },
    layers: [
      { type: 'embedding_bag', name: 'emb', input: 'tokens', vocab: 262144, dim: 16, combiner: 'sqrtn' },
      { type: 'dense', name: 'out', units: 2 },
    ],
    loss: 'softmax_cross_entropy',
  },
  features: { hash: 'murmur3_32', num_buckets: 262144, ngrams: 1, binary: true },
  train: { optimizer: { type: 'adam', learning_rate: 0.03 }, epochs: 1, batch_size: 32 },
  updates: {
    'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors', download: 'select' },
    'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
    'out/bias': { encoding: 'dense', aggregator: 'weighted_mean' },
  },
};
// Signed bigrams without lowercasing: every option of the featurizer in play.
const SIGNED_PLAN = { ...TEXT_PLAN, features: { num_buckets: 262144, ngrams: 2, signed: true, lowercase: false, skip_headers: true } };

const PINS = {
  text: { ids: '922f1f30a21677c5bdb9737b35a411db2e279d522dd61f2c4de3e726cf6a15bf', update: 'e1920d4c844fda8248b2df2ede866ba897d5b0e1ca3660e2710c9432f6e03fea' },
  signed: { ids: '9602c7cb4a685a681cfca690708cff21c147fb5ba99a38b9ea3be3fcfe1bf152', update: 'e51cf7b5a5d323b7dc9e97f4c883dc72b06f7e5bbb94233aea59a95663b83b93' },
};

const corpus = (await loadSpamAssassin()).filter((_, i) => i % 25 === 0);  // ~240 emails
const texts = [...corpus.map((r) => r.text), '', 'naïve café — 東京 😀', 'nul\u0000inside', 'lone \ud800 surrogate',
  '"quoted" \\ back\\slash\ttab\r\n'];
const labels = [...corpus.map((r) => r.label), 0, 1, 0, 1, 0];

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const idsOf = (data) => {
  const ids = data.distinctIds();
  return sha256(new Uint8Array(ids.buffer, ids.byteOffset, ids.byteLength));
};

// The distinct ids' and the one-step update's digests of `data` under `plan`.
function digests(executor, plan, data) {
  const model = executor.initializeModel(plan, 7);
  return { ids: idsOf(data), update: sha256(executor.execute(plan, model, data, { taskId: 'pin' })) };
}

for (const simd of [true, false]) {
  test(`datasetFromTexts keeps the pinned ids and update bytes (${simd ? 'SIMD' : 'baseline'} build)`, async () => {
    const executor = await createExecutor({ simd });
    for (const [name, plan] of [['text', TEXT_PLAN], ['signed', SIGNED_PLAN]]) {
      const data = executor.datasetFromTexts(texts, labels, plan);
      try {
        assert.deepEqual(digests(executor, plan, data), PINS[name], name);
      } finally {
        data.delete();
      }
    }
  });
}

test('datasetFromRecords with records {text} and a text plan gives datasetFromTexts\' examples', async () => {
  const executor = await createExecutor();
  const fromTexts = executor.datasetFromTexts(texts, labels, TEXT_PLAN);
  const fromRecords = executor.datasetFromRecords(texts.map((text) => ({ text: text.toWellFormed() })), labels, TEXT_PLAN);
  const handle = executor.loadPlan(TEXT_PLAN);
  const viaHandle = executor.datasetFromRecords(texts.map((text) => ({ text: text.toWellFormed() })), labels, handle);
  try {
    for (const data of [fromRecords, viaHandle]) {
      assert.equal(data.numInputs, 1);
      assert.deepEqual(data.distinctIds(), fromTexts.distinctIds());
      assert.deepEqual(digests(executor, TEXT_PLAN, data), digests(executor, TEXT_PLAN, fromTexts));
    }
    // The text plan's input is the record field "text", unnamed (it feeds the plan's only input).
    const [column] = executor.featurizeRecords([{ text: 'win cash' }], TEXT_PLAN);
    assert.equal(column.name, '');
    assert.equal(column.ids.length, 2);
  } finally {
    handle.delete();
    fromTexts.delete();
    fromRecords.delete();
    viaHandle.delete();
  }
});
