// TF.js / Keras functional models (issue 29): importTfjsLayersModel maps a model built with the
// real @tensorflow/tfjs — several InputLayers, Embedding + GlobalAveragePooling1D or + Flatten, one
// Embedding on two inputs, Concatenate, Add, Dense, Dropout, Activation — to a graph plan; a
// reference forward pass of that plan (graph_plan_reference.mjs, float64) on the same examples
// equals model.predict within 1e-5; exportTfjsLayersModel writes the plan back as a functional
// model that tf.loadLayersModel loads and that predicts as the original. The same through the C++
// graph executor: tfjs_functional_executor.test.mjs.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { createExecutor, exportTfjsLayersModel, importTfjsLayersModel } from '../../js_bindings/src/index.js';
import { REPO_ROOT } from '../server/server_harness.mjs';
import { importingExecutor, maxDifference, referenceForward } from './graph_plan_reference.mjs';
import { functionalModels, predictTfjs, saved, toKeras3 } from './tfjs_functional_models.mjs';

const requireFromRoot = createRequire(path.join(REPO_ROOT, 'package.json'));
const tf = await import(pathToFileURL(requireFromRoot.resolve('@tensorflow/tfjs')).href);

let executor;
let importer;
let models;
before(async () => {
  await tf.setBackend('cpu');
  executor = await createExecutor();
  importer = importingExecutor(executor);
  models = functionalModels(tf);
});

function referencePredictions(plan, modelBytes, inputs) {
  return referenceForward(plan, executor.decodeSafetensors(modelBytes).tensors, inputs).predictions;
}

// import → the plan predicts as TF.js → export → tf.loadLayersModel predicts as the original →
// the export imports again to the same plan and tensors.
async function roundTrip(name, expectedModel) {
  const { model: original, examples } = models[name]();
  const imported = importTfjsLayersModel(importer, await saved(tf, original), undefined, { onWarning: assert.fail });
  assert.deepEqual(imported.plan.model, expectedModel);
  const expected = predictTfjs(tf, original, examples);
  const difference = maxDifference(referencePredictions(imported.plan, imported.model, examples.inputs), expected);
  assert.ok(difference < 1e-5, `${name}: the plan's forward differs from TF.js's by ${difference}`);

  const exported = exportTfjsLayersModel(executor, imported.plan, imported.model);
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
  const again = predictTfjs(tf, loaded, examples);
  assert.ok(maxDifference(again, expected) < 1e-5, `${name}: the exported model predicts otherwise (${maxDifference(again, expected)})`);

  const reimported = importTfjsLayersModel(importer, exported, undefined, { onWarning: assert.fail });
  assert.deepEqual(reimported.plan.model, imported.plan.model);
  assert.deepEqual(executor.decodeSafetensors(reimported.model).tensors, executor.decodeSafetensors(imported.model).tensors);
  return { imported, exported, loaded };
}

test('wide & deep: several ids inputs, a dense input, Concatenate, Dense relu, Dropout, a wide Embedding + Flatten, Add, sigmoid', async () => {
  const { imported, exported } = await roundTrip('wideAndDeep', {
    inputs: { body: { type: 'sparse_ids' }, sender: { type: 'sparse_ids' }, numeric: { type: 'dense', dim: 4 },
      cross: { type: 'sparse_ids' } },
    layers: [
      { type: 'embedding_bag', name: 'tokens', input: 'body', vocab: 50, dim: 6, combiner: 'mean' },
      { type: 'embedding_bag', name: 'sender_emb', input: 'sender', vocab: 20, dim: 3, combiner: 'mean' },
      { type: 'concatenate', name: 'deep_in', inputs: ['tokens', 'sender_emb', 'numeric'] },
      { type: 'dense', name: 'h1', input: 'deep_in', units: 16, activation: 'relu' },
      { type: 'dropout', name: 'drop1', input: 'h1', rate: 0.2, seed: 7 },
      { type: 'dense', name: 'deep_logit', input: 'drop1', units: 1 },
      { type: 'embedding_bag', name: 'wide', input: 'cross', vocab: 40, dim: 1, combiner: 'sum' },
      { type: 'add', name: 'logit', inputs: ['deep_logit', 'wide'] },
    ],
    output: 'logit',
    loss: 'sigmoid_cross_entropy',
  });
  const { plan } = imported;
  assert.deepEqual(plan.train.optimizer, { type: 'adam', learning_rate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-7 });
  assert.deepEqual(Object.keys(plan.updates).sort(), ['deep_logit/bias', 'deep_logit/weight', 'h1/bias', 'h1/weight',
    'sender_emb/weight', 'tokens/weight', 'wide/weight']);
  for (const table of ['tokens/weight', 'sender_emb/weight', 'wide/weight']) {
    assert.deepEqual(plan.updates[table], { encoding: 'row_sparse', aggregator: 'mean_over_contributors' });
  }
  assert.deepEqual(imported.tokenOffsets, { body: 0, sender: 0, cross: 0 });
  assert.equal(exported.modelTopology.class_name, 'Model');
  assert.deepEqual(exported.modelTopology.config.output_layers, [['logit_sigmoid', 0, 0]]);
  assert.equal(exported.trainingConfig.loss, 'binary_crossentropy');
});

test('two inputs sharing one Embedding: the second lookup names the first one\'s table', async () => {
  const { imported, exported, loaded } = await roundTrip('sharedEmbedding', {
    inputs: { left: { type: 'sparse_ids' }, right: { type: 'sparse_ids' } },
    layers: [
      { type: 'embedding_bag', name: 'shared', input: 'left', vocab: 30, dim: 4, combiner: 'mean' },
      { type: 'embedding_bag', name: 'right_mean', input: 'right', table: 'shared', combiner: 'mean' },
      { type: 'concatenate', name: 'both', inputs: ['shared', 'right_mean'] },
      { type: 'dense', name: 'out', input: 'both', units: 3 },
    ],
    output: 'out',
    loss: 'softmax_cross_entropy',
  });
  assert.deepEqual(Object.keys(executor.decodeSafetensors(imported.model).tensors).sort(), ['out/bias', 'out/weight', 'shared/weight']);
  assert.equal(imported.plan.updates['right_mean/weight'], undefined, 'a shared table is one parameter');
  const embeddings = exported.modelTopology.config.layers.filter((l) => l.class_name === 'Embedding');
  assert.equal(embeddings.length, 1);
  assert.equal(embeddings[0].inbound_nodes.length, 2, 'one Embedding applied to both inputs');
  assert.deepEqual(exported.weightSpecs.map((w) => w.name), ['shared/embeddings', 'out/kernel', 'out/bias']);
  assert.equal(loaded.getLayer('out').getConfig().activation, 'softmax');
});

test('ids → Embedding + Flatten → Dense regression with mean_squared_error imports as a chain', async () => {
  const expected = {
    inputs: { tokens: 'sparse_ids' },
    layers: [{ type: 'embedding_bag', name: 'item_emb', input: 'tokens', vocab: 30, dim: 5, combiner: 'sum' },
      { type: 'dense', name: 'hidden', units: 8, activation: 'tanh' },
      { type: 'dense', name: 'rating', units: 1 }],
    loss: 'mean_squared_error',
  };
  const { imported, exported } = await roundTrip('regression', expected);
  assert.deepEqual(imported.plan.train.optimizer, { type: 'sgd', learning_rate: 0.05 });
  assert.equal(exported.modelTopology.class_name, 'Sequential', 'a chain plan exports as before');
  assert.deepEqual(exported.modelTopology.config.layers.map((l) => l.class_name), ['Embedding', 'Flatten', 'Dense', 'Dense']);
  assert.equal(exported.trainingConfig.loss, 'mean_squared_error');
  // The same model built with tf.sequential imports to the same plan.
  const { model: sequential } = models.regression({ sequential: true });
  const again = importTfjsLayersModel(importer, await saved(tf, sequential), undefined, { onWarning: assert.fail });
  assert.deepEqual(again.plan.model, expected);
});

test('the Keras 3 shape of a functional model.json imports as the TF.js one', async () => {
  for (const name of ['wideAndDeep', 'sharedEmbedding']) {
    const { model } = models[name]();
    const artifacts = await saved(tf, model);
    const keras3 = { ...artifacts, modelTopology: toKeras3(artifacts.modelTopology) };
    assert.notDeepEqual(keras3.modelTopology, artifacts.modelTopology);
    const fromKeras3 = importTfjsLayersModel(importer, keras3, undefined, { onWarning: assert.fail });
    const fromTfjs = importTfjsLayersModel(importer, artifacts, undefined, { onWarning: assert.fail });
    assert.deepEqual(fromKeras3.plan, fromTfjs.plan, name);
  }
});
