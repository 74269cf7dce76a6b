// The round trip of issue 29, capability 4, through fedleaf's own executor: a functional model
// built with the real @tensorflow/tfjs is imported; executor.predict on
// executor.datasetFromInputs({name: {ids, offsets} | {dense, width}}, labels) equals TF.js's
// model.predict within 1e-5 for the three models of tfjs_functional_models.mjs (wide & deep, two
// inputs sharing one Embedding, Embedding + Flatten regression with mean_squared_error); the
// wide & deep model trains one federated round against a real fedleaf-server; the export loads
// with tf.loadLayersModel and predicts as fedleaf does within 1e-5; one local Adam step of an
// imported model equals one step of TF.js's fit within 1e-5.
//
// What predict returns per example (executor.predict, core/train/predict.h): [1 - p, p] for the
// sigmoid loss, the class probabilities for softmax, the output values (width units) for
// mean_squared_error. Labels: class ids, or float targets for mean_squared_error (given to
// datasetFromInputs as {targets, width}).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { createExecutor, exportTfjsLayersModel, importTfjsLayersModel, runLeaf } from '../../js_bindings/src/index.js';
import { REPO_ROOT, adminClient, startServer } from '../server/server_harness.mjs';
import { maxDifference } from './graph_plan_reference.mjs';
import { functionalModels, predictTfjs, saved } from './tfjs_functional_models.mjs';

const requireFromRoot = createRequire(path.join(REPO_ROOT, 'package.json'));
const tf = await import(pathToFileURL(requireFromRoot.resolve('@tensorflow/tfjs')).href);

let executor;
let models;
before(async () => {
  await tf.setBackend('cpu');
  executor = await createExecutor();
  models = functionalModels(tf);
});

// The examples' inputs under the plan's input names: a one-input model imports as a chain, whose
// input is 'tokens' (ids) or 'x' (dense) whatever the InputLayer's name (tfjs_layers_import.js);
// a graph keeps the InputLayers' names.
function planInputs(plan, inputs) {
  const names = Object.keys(plan.model.inputs);
  const columns = Object.values(inputs);
  return names.length === 1 && columns.length === 1 ? { [names[0]]: columns[0] } : inputs;
}

// datasetFromInputs' labels: class ids, or {targets, width} for mean_squared_error (the models
// here have one label per example: the regression's output has one unit).
function labelsFor(plan, labels) {
  return plan.model.loss === 'mean_squared_error' ? { targets: labels, width: 1 } : labels;
}

// The examples' fedleaf inputs restricted to `rows` (CSR ids re-based, dense rows sliced).
function subset(inputs, rows) {
  return Object.fromEntries(Object.entries(inputs).map(([name, c]) => {
    if (c.dense) return [name, { dense: rows.flatMap((r) => c.dense.slice(r * c.width, (r + 1) * c.width)), width: c.width }];
    const ids = [];
    const offsets = [0];
    for (const r of rows) {
      ids.push(...c.ids.slice(c.offsets[r], c.offsets[r + 1]));
      offsets.push(ids.length);
    }
    return [name, { ids, offsets }];
  }));
}

// executor.predict per example, as TF.js gives it: [p] (sigmoid), probabilities, or outputs.
function fedleafPredictions(plan, modelBytes, examples) {
  const dataset = executor.datasetFromInputs(planInputs(plan, examples.inputs), labelsFor(plan, examples.labels));
  const flat = Array.from(executor.predict(plan, modelBytes, dataset));
  dataset.delete();
  const n = examples.labels.length;
  const width = flat.length / n;
  const rows = Array.from({ length: n }, (_, i) => flat.slice(i * width, (i + 1) * width));
  return plan.model.loss === 'sigmoid_cross_entropy' ? rows.map(([, p]) => [p]) : rows;
}

for (const name of ['wideAndDeep', 'sharedEmbedding', 'regression', 'gated']) {
  test(`${name}: fedleaf's executor predicts as TF.js, and the export as fedleaf`, async () => {
    const { model: original, examples } = models[name]();
    const { plan, model } = importTfjsLayersModel(executor, await saved(tf, original), undefined, { onWarning: assert.fail });
    const fromTfjs = predictTfjs(tf, original, examples);
    const fromFedleaf = fedleafPredictions(plan, model, examples);
    assert.ok(maxDifference(fromFedleaf, fromTfjs) < 1e-5, `fedleaf and TF.js differ by ${maxDifference(fromFedleaf, fromTfjs)}`);

    const loaded = await tf.loadLayersModel(tf.io.fromMemory(exportTfjsLayersModel(executor, plan, model)));
    assert.ok(maxDifference(predictTfjs(tf, loaded, examples), fromFedleaf) < 1e-5);
  });
}

test('wide & deep: import → one federated round against a real server → export → TF.js predicts as fedleaf', { timeout: 120_000 }, async () => {
  const { model: original, examples } = models.wideAndDeep();
  const { plan, model } = importTfjsLayersModel(executor, await saved(tf, original), undefined, { onWarning: assert.fail });
  assert.ok(maxDifference(fedleafPredictions(plan, model, examples), predictTfjs(tf, original, examples)) < 1e-5);

  const server = await startServer();
  let trained;
  try {
    const admin = adminClient(server.url);
    const { id, client_token: token } = await admin.createPopulation({ plan,
      initial_model_b64: Buffer.from(model).toString('base64'), rounds: 1, clients_per_round: 2 });
    const halves = [0, 1].map((leaf) => examples.labels.map((_, i) => i).filter((i) => i % 2 === leaf));
    const datasets = halves.map((rows) => executor.datasetFromInputs(subset(examples.inputs, rows), rows.map((r) => examples.labels[r])));
    const summaries = await Promise.all(datasets.map((dataset) => runLeaf({
      server: server.url, population: id, token, executor, dataset, backoff: { baseMs: 20, maxMs: 200 },
    })));
    datasets.forEach((d) => d.delete());
    assert.deepEqual(summaries.map((s) => s.uploaded), [1, 1], 'each leaf trained the round');
    const round1 = await admin.downloadModel(admin.modelUrl(id, 1), { token: false });
    assert.equal(round1.kind, 'model');
    trained = round1.bytes;
  } finally {
    await server.stop();
  }
  assert.notDeepEqual(trained, model, 'the round changed the model');

  const exported = exportTfjsLayersModel(executor, plan, trained);
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
  const fromFedleaf = fedleafPredictions(plan, trained, examples);
  const fromTfjs = predictTfjs(tf, loaded, examples);
  assert.ok(maxDifference(fromTfjs, fromFedleaf) < 1e-5, `TF.js and fedleaf differ by ${maxDifference(fromTfjs, fromFedleaf)}`);
});

test('a chain with SpatialDropout1D and Dropout: the core takes the dropout layers and predicts as TF.js (dropout is training only)', async () => {
  const text = tf.sequential();
  text.add(tf.layers.embedding({ name: 'emb', inputDim: 30, outputDim: 4,
    embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed: 5 }) }));
  text.add(tf.layers.spatialDropout1d({ name: 'drop_tokens', rate: 0.2 }));
  text.add(tf.layers.globalAveragePooling1d({ name: 'pool' }));
  text.add(tf.layers.dropout({ name: 'drop', rate: 0.5, seed: 3 }));
  text.add(tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid', kernelInitializer: tf.initializers.glorotUniform({ seed: 6 }) }));
  text.compile({ optimizer: tf.train.adam(0.01), loss: 'binaryCrossentropy' });
  const { plan, model } = importTfjsLayersModel(executor, await saved(tf, text), undefined, { onWarning: assert.fail });
  assert.deepEqual(plan.model.layers.map((l) => l.type), ['embedding_bag', 'dropout', 'dropout', 'dense']);
  const ids = [1, 4, 4, 9, 0, 29, 7, 7, 3, 12, 5, 6];
  const examples = { inputs: { tokens: { ids, offsets: [0, 3, 6, 9, 12] } }, labels: [0, 1, 0, 1],
    tfjs: { tokens: { values: ids, shape: [4, 3], dtype: 'int32' } } };
  assert.ok(maxDifference(fedleafPredictions(plan, model, examples), predictTfjs(tf, text, examples)) < 1e-5);
});

// Issue 37, defect 2: TF.js's Adam puts ε outside the bias correction; the import sets the plan's
// epsilon_form 'tfjs', so one local step is TF.js's fit of one batch. (In the 'keras' form the
// rows of ids few examples use, whose gradients are small, step up to 1.7e-3 otherwise.)
test('an imported Adam model: one local step equals one step of TF.js\'s fit', async () => {
  const { model: original, examples } = models.sharedEmbedding();
  const { plan, model } = importTfjsLayersModel(executor, await saved(tf, original), undefined, { onWarning: assert.fail });
  assert.deepEqual(plan.train.optimizer, { type: 'adam', learning_rate: 0.02, beta1: 0.9, beta2: 0.999, epsilon: 1e-7,
    epsilon_form: 'tfjs' });
  const n = examples.labels.length;
  const trainPlan = { ...plan, train: { ...plan.train, batch_size: n, epochs: 1, shuffle: false } };
  const dataset = executor.datasetFromInputs(planInputs(plan, examples.inputs), labelsFor(plan, examples.labels));
  const trained = executor.decodeSafetensors(executor.applyUpdate(trainPlan, model, executor.execute(trainPlan, model, dataset))).tensors;
  dataset.delete();

  const inputs = original.inputNames.map((name) => {
    const c = examples.tfjs[name];
    return tf.tensor(c.values, c.shape, c.dtype);
  });
  const labels = tf.tensor2d(examples.labels, [n, 1]);
  await original.fit(inputs, labels, { batchSize: n, epochs: 1, shuffle: false, verbose: 0 });
  tf.dispose([...inputs, labels]);
  const before = executor.decodeSafetensors(model).tensors;
  for (const [tensor, layer, k] of [['shared/weight', 'shared', 0], ['out/weight', 'out', 0], ['out/bias', 'out', 1]]) {
    const expected = Array.from(original.getLayer(layer).getWeights()[k].dataSync());
    const got = Array.from(trained[tensor].data);
    assert.ok(maxDifference(got, expected) < 1e-5, `${tensor}: fedleaf and TF.js differ by ${maxDifference(got, expected)}`);
    assert.ok(maxDifference(got, Array.from(before[tensor].data)) > 1e-3, `${tensor} trained`);
  }
});
