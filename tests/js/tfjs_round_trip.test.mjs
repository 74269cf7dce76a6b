// Import → export gives back the model (issue 37, defect 1): for every TF.js model the import
// tests load (tfjs_functional_models.mjs; the Sequential ones of tfjs_interop.test.mjs, built here
// the same way), exportTfjsLayersModel of the untrained import loads in TF.js and predicts on the
// ORIGINAL inputs — the Keras tokens, in the original dtype — what the original model predicts,
// within 1e-6; its topology equals the original's up to the normalisations js_bindings/README.md
// lists ("What comes back"), which essentials() below applies; its loss is the original's; and
// it imports again to the same plan.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { createExecutor, exportTfjsLayersModel, importTfjsLayersModel } from '../../js_bindings/src/index.js';
import { REPO_ROOT } from '../server/server_harness.mjs';
import { maxDifference } from './graph_plan_reference.mjs';
import { functionalModels, maskZeroModel, predictTfjs, saved } from './tfjs_functional_models.mjs';

const requireFromRoot = createRequire(path.join(REPO_ROOT, 'package.json'));
const tf = await import(pathToFileURL(requireFromRoot.resolve('@tensorflow/tfjs')).href);

let executor;
before(async () => {
  await tf.setBackend('cpu');
  executor = await createExecutor();
});

// The config fields a loaded model computes with; the others (initializers, regularizers,
// constraints, trainable, a layer's dtype) are written with fedleaf's defaults.
const KEPT = {
  InputLayer: ['batch_input_shape', 'dtype', 'sparse'],
  Embedding: ['input_dim', 'output_dim', 'mask_zero'],
  Dense: ['units', 'activation', 'use_bias'],
  Activation: ['activation'],
  Dropout: ['rate', 'seed'],
  SpatialDropout1D: ['rate', 'seed'],
  Concatenate: ['axis'],
};
const DROPOUTS = new Set(['Dropout', 'SpatialDropout1D']);

// TF.js's model.save leaves mask_zero out when it is false.
const DEFAULTS = { mask_zero: false };

function kept(layer) {
  return Object.fromEntries((KEPT[layer.class_name] ?? []).map((field) => [field, layer.config[field] ?? DEFAULTS[field] ?? null]));
}

// A topology as the README's normalisations leave it: per layer its class, name, kept fields and
// the layers it reads (a functional model's layers in any order); a Sequential model's input shape on a node of its own; Dropouts and
// SpatialDropout1Ds between an Embedding and its pooling as Dropouts after the pooling.
function essentials(topology) {
  const { class_name: className, config } = topology.model_config ?? topology;
  if (className !== 'Sequential') {
    return { className, name: config.name, input_layers: config.input_layers, output_layers: config.output_layers,
      layers: config.layers.map((l) => ({ class_name: l.class_name, name: l.name, ...kept(l), inbound: l.inbound_nodes }))
        .sort((a, b) => a.name.localeCompare(b.name)) };
  }
  const layers = [{ class_name: 'InputLayer', batch_input_shape: config.layers[0].config.batch_input_shape }];
  const push = (layer) => layers.push({ class_name: layer.class_name, name: layer.config.name, ...kept(layer), after: layers.length - 1 });
  const moved = [];
  let afterEmbedding = false;
  for (const layer of config.layers) {
    if (afterEmbedding && DROPOUTS.has(layer.class_name)) {
      moved.push({ ...layer, class_name: 'Dropout' });
      continue;
    }
    push(layer);
    afterEmbedding = layer.class_name === 'Embedding';
    if (!afterEmbedding) moved.splice(0).forEach(push);
  }
  return { className, name: config.name, layers };
}

// The Sequential models of tfjs_interop.test.mjs (smaller vocabularies), with int32 token rows.
function sequentialModels() {
  const uniform = (seed) => tf.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed });
  const glorot = (seed) => tf.initializers.glorotUniform({ seed });
  const tokens = (vocab, offset, length = 3) => {
    const values = Array.from({ length: 8 * length }, (_, i) => offset + ((i * 7 + 3) % vocab));
    return { tfjs: { tokens: { values, shape: [8, length], dtype: 'int32' } } };
  };
  const spam = (maskZero) => () => {
    const model = tf.sequential({ name: 'spam' });
    model.add(tf.layers.embedding({ name: 'emb', inputDim: 40 + (maskZero ? 1 : 0), outputDim: 8, maskZero,
      embeddingsInitializer: uniform(1) }));
    model.add(tf.layers.globalAveragePooling1d({ name: 'pool' }));
    model.add(tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid', kernelInitializer: glorot(2) }));
    model.compile({ optimizer: tf.train.adam(0.05), loss: 'binaryCrossentropy' });
    return { model, examples: tokens(40, maskZero ? 1 : 0) };
  };
  return {
    spam: spam(false),
    spamMaskZero: spam(true),
    dropouts() {
      const model = tf.sequential();
      model.add(tf.layers.embedding({ name: 'emb', inputDim: 30, outputDim: 4, embeddingsInitializer: uniform(5) }));
      model.add(tf.layers.spatialDropout1d({ name: 'drop_tokens', rate: 0.2 }));
      model.add(tf.layers.dropout({ name: 'drop_more', rate: 0.1 }));
      model.add(tf.layers.globalAveragePooling1d({ name: 'pool' }));
      model.add(tf.layers.dropout({ name: 'drop', rate: 0.5, seed: 3 }));
      model.add(tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid', kernelInitializer: glorot(6) }));
      model.compile({ optimizer: tf.train.adam(0.01), loss: 'binaryCrossentropy' });
      return { model, examples: tokens(30, 0) };
    },
    denseSoftmax() {
      const model = tf.sequential();
      model.add(tf.layers.dense({ name: 'hidden', units: 5, inputShape: [3], activation: 'relu', kernelInitializer: glorot(3),
        biasInitializer: tf.initializers.constant({ value: 0.1 }) }));
      model.add(tf.layers.dense({ name: 'out', units: 3, activation: 'softmax', kernelInitializer: glorot(4) }));
      model.compile({ optimizer: tf.train.sgd(0.1), loss: 'sparseCategoricalCrossentropy' });
      const values = [0.5, -1, 2, 0, 0.25, -0.75, 3, 1, -2];
      return { model, examples: { tfjs: { x: { values, shape: [3, 3], dtype: 'float32' } } } };
    },
  };
}

const functional = (name) => (tf_) => functionalModels(tf_)[name]();
const MODELS = {
  wideAndDeep: functional('wideAndDeep'),
  sharedEmbedding: functional('sharedEmbedding'),
  regression: functional('regression'),
  regressionSequential: (tf_) => functionalModels(tf_).regression({ sequential: true }),
  maskZero: maskZeroModel,
  ...Object.fromEntries(Object.entries(sequentialModels()).map(([name, make]) => [name, () => make()])),
};

for (const [name, make] of Object.entries(MODELS)) {
  test(`${name}: the export of the import is the original model, up to the README's normalisations`, async () => {
    const { model: original, examples } = make(tf);
    const artifacts = await saved(tf, original);
    const imported = importTfjsLayersModel(executor, artifacts, undefined, { onWarning: () => {} });
    const exported = exportTfjsLayersModel(executor, imported.plan, imported.model);

    const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
    const expected = predictTfjs(tf, original, examples);
    const difference = maxDifference(predictTfjs(tf, loaded, examples), expected);
    assert.ok(difference < 1e-6, `the export predicts on the original inputs ${difference} away from the original`);
    assert.deepEqual(essentials(exported.modelTopology), essentials(artifacts.modelTopology));
    assert.equal(exported.trainingConfig.loss, artifacts.trainingConfig.loss);
    assert.deepEqual(importTfjsLayersModel(executor, exported, undefined, { onWarning: () => {} }).plan, imported.plan);
  });
}

test('mask_zero: the export is Embedding(V + 1, mask_zero) with row 0 kept, on float32 tokens, categorical_crossentropy', async () => {
  const { model: original } = maskZeroModel(tf);
  const imported = importTfjsLayersModel(executor, await saved(tf, original), undefined, { onWarning: assert.fail });
  assert.deepEqual(imported.tokenOffsets, { tokens: 1 });
  assert.equal(imported.plan.model.layers[0].vocab, 25);
  const row0 = Array.from(original.getLayer('word_emb').getWeights()[0].dataSync().slice(0, 4));
  assert.deepEqual(imported.plan.tfjs, { name: 'topics', functional: true, loss: 'categorical_crossentropy',
    inputs: { tokens: { name: 'words', dtype: 'float32' } }, poolings: { word_emb: 'words_mean' },
    mask_zero: { word_emb: row0 }, output_activation: 'probs' });

  const exported = exportTfjsLayersModel(executor, imported.plan, imported.model);
  const byName = Object.fromEntries(exported.modelTopology.config.layers.map((l) => [l.name, l]));
  assert.deepEqual([byName.word_emb.config.input_dim, byName.word_emb.config.mask_zero], [26, true]);
  assert.deepEqual(byName.words.config.dtype, 'float32');
  assert.deepEqual(Array.from(new Float32Array(exported.weightData, 0, 26 * 4)),
    Array.from(original.getLayer('word_emb').getWeights()[0].dataSync()), 'row 0, then the plan\'s 25 rows');
  // Padding (token 0) reads row 0 in TF.js, whose GlobalAveragePooling1D ignores the mask: the
  // export, which kept the row, pads as the original does.
  const padded = { tfjs: { words: { values: [0, 3, 7, 0, 0, 12, 25, 1], shape: [2, 4], dtype: 'float32' } } };
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
  assert.ok(maxDifference(predictTfjs(tf, loaded, padded), predictTfjs(tf, original, padded)) < 1e-6);

  // A hand-edited section is checked.
  const broken = { ...imported.plan, tfjs: { ...imported.plan.tfjs, mask_zero: { word_emb: [1, 2] } } };
  assert.throws(() => exportTfjsLayersModel(executor, broken, imported.model),
    /TF.js model export: plan.tfjs.mask_zero.word_emb: expected row 0 of the table, 4 numbers/);
});
