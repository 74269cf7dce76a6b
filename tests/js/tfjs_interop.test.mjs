// TF.js / Keras interop: a model built and saved with @tensorflow/tfjs is imported into a fedleaf
// plan and model, trained federated for one round by two leaves against a real fedleaf-server,
// exported back to the TF.js Layers format, and loaded with tf.loadLayersModel; TF.js's
// predictions on the eval emails equal fedleaf's predict within 1e-5. Unsupported layers and
// combiners are Errors naming them. Functional (graph) models: tfjs_functional_interop.test.mjs.
//
// Input mapping (js_bindings/src/interop/tfjs_layers_import.js): an email's TF.js input is the sorted
// distinct ids fedleaf's featurizer gives it (binary features), as one unpadded sequence, so
// GlobalAveragePooling1D's mean is embedding_bag's mean.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { createExecutor, exportTfjsLayersModel, importTfjsLayersModel, runLeaf, TextLeafData }
  from '../../js_bindings/src/index.js';
import { loadSpamAssassin } from '../../js_bindings/src/datasets/spamassassin.js';
import { spamAssassinClientData } from '../../js_bindings/src/node/simulate.js';
import { REPO_ROOT, adminClient, startServer } from '../server/server_harness.mjs';
import { textPlan } from '../e2e/browser/executor_cases.mjs';
import { referenceForward } from './graph_plan_reference.mjs';

const requireFromRoot = createRequire(path.join(REPO_ROOT, 'package.json'));
const tf = await import(pathToFileURL(requireFromRoot.resolve('@tensorflow/tfjs')).href);

const VOCAB = 4096;
const DIM = 8;
const FEATURES = { hash: 'murmur3_32', ngrams: 1, binary: true };
const LEAVES = 2;

let executor;
let records;
before(async () => {
  await tf.setBackend('cpu');
  executor = await createExecutor();
  const all = await loadSpamAssassin();
  records = all.filter((_, i) => i % 10 === 0);  // a fixed slice keeps the round short
});

// Embedding(VOCAB, DIM) → GlobalAveragePooling1D → Dense(1, sigmoid), compiled as Keras users do.
function spamModel({ maskZero = false } = {}) {
  const model = tf.sequential({ name: 'spam' });
  model.add(tf.layers.embedding({ name: 'emb', inputDim: VOCAB + (maskZero ? 1 : 0), outputDim: DIM, maskZero,
    embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed: 1 }) }));
  model.add(tf.layers.globalAveragePooling1d({ name: 'pool' }));
  model.add(tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid',
    kernelInitializer: tf.initializers.glorotUniform({ seed: 2 }) }));
  model.compile({ optimizer: tf.train.adam(0.05), loss: 'binaryCrossentropy' });
  return model;
}

// What model.save() writes, kept in memory: {modelTopology, weightSpecs, weightData} and, with
// includeOptimizer, the trainingConfig and the optimizer's weights.
async function saved(model, { includeOptimizer = true } = {}) {
  let artifacts;
  await model.save(tf.io.withSaveHandler(async (a) => {
    artifacts = a;
    return { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } };
  }), { includeOptimizer });
  return artifacts;
}

// TF.js's spam probability of each email: its fedleaf ids (+ offset) as one unpadded sequence.
function tfjsPredictions(model, plan, emails, tokenOffset = 0) {
  return emails.map(({ text, label }) => {
    const dataset = executor.datasetFromTexts([text], [label], plan);
    const ids = Array.from(dataset.distinctIds(), (id) => id + tokenOffset);
    dataset.delete();
    assert.ok(ids.length > 0, 'every eval email has tokens');
    return tf.tidy(() => model.predict(tf.tensor2d([ids], [1, ids.length], 'int32')).dataSync()[0]);
  });
}

function fedleafPredictions(plan, modelBytes, emails) {
  const dataset = executor.datasetFromTexts(emails.map((e) => e.text), emails.map((e) => e.label), plan);
  const probabilities = executor.predict(plan, modelBytes, dataset);
  dataset.delete();
  return emails.map((_, i) => probabilities[2 * i + 1]);
}

// Every class probability of each email: [emails, classes] flattened.
function fedleafProbabilities(plan, modelBytes, emails) {
  const dataset = executor.datasetFromTexts(emails.map((e) => e.text), emails.map(() => 0), plan);
  const probabilities = executor.predict(plan, modelBytes, dataset);
  dataset.delete();
  return Array.from(probabilities);
}

function maxDifference(a, b) {
  assert.equal(a.length, b.length);
  return a.reduce((worst, v, i) => Math.max(worst, Math.abs(v - b[i])), 0);
}

test('a TF.js model imports, trains federated for a round, exports, and predicts as fedleaf does', { timeout: 170_000 }, async () => {
  const original = spamModel();
  const { plan, model, tokenOffset } = importTfjsLayersModel(executor, await saved(original), undefined,
    { features: FEATURES });
  assert.equal(tokenOffset, 0);
  assert.deepEqual(plan.model, {
    inputs: { tokens: 'sparse_ids' },
    layers: [{ type: 'embedding_bag', name: 'emb', input: 'tokens', vocab: VOCAB, dim: DIM, combiner: 'mean' },
      { type: 'dense', name: 'out', units: 1 }],
    loss: 'sigmoid_cross_entropy',
  });
  assert.deepEqual(plan.train.optimizer, { type: 'adam', learning_rate: 0.05, beta1: 0.9, beta2: 0.999, epsilon: 1e-7,
    epsilon_form: 'tfjs' });
  assert.deepEqual(plan.features, { ...FEATURES, num_buckets: VOCAB });
  const evalEmails = records.filter((r) => r.split === 'eval');
  assert.ok(maxDifference(tfjsPredictions(original, plan, evalEmails), fedleafPredictions(plan, model, evalEmails)) < 1e-5,
    'the imported model predicts as the TF.js model');

  const server = await startServer();
  let trained;
  try {
    const admin = adminClient(server.url);
    const { id, client_token: token } = await admin.createPopulation({ plan,
      initial_model_b64: Buffer.from(model).toString('base64'), rounds: 1, clients_per_round: LEAVES });
    const data = Array.from({ length: LEAVES }, (_, i) => new TextLeafData(executor, spamAssassinClientData(records, i, LEAVES)));
    const summaries = await Promise.all(data.map((dataset) => runLeaf({
      server: server.url, population: id, token, executor, dataset, backoff: { baseMs: 20, maxMs: 200 },
    })));
    data.forEach((d) => d.delete());
    assert.deepEqual(summaries.map((s) => s.uploaded), [1, 1], 'each leaf trained the round');
    const round1 = await admin.downloadModel(admin.modelUrl(id, 1), { token: false });
    assert.equal(round1.kind, 'model');
    trained = round1.bytes;
  } finally {
    await server.stop();
  }
  assert.notDeepEqual(trained, model, 'the round changed the model');

  const exported = exportTfjsLayersModel(executor, plan, trained);
  assert.deepEqual(exported.modelTopology.config.layers.map((l) => l.class_name), ['Embedding', 'GlobalAveragePooling1D', 'Dense']);
  assert.equal(exported.weightData.byteLength, (VOCAB * DIM + DIM + 1) * 4);
  // The ModelArtifacts go to tf.io.fromMemory as they are.
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
  assert.equal(loaded.getLayer('out').getConfig().activation, 'sigmoid');
  const fromTfjs = tfjsPredictions(loaded, plan, evalEmails);
  const fromFedleaf = fedleafPredictions(plan, trained, evalEmails);
  assert.ok(maxDifference(fromTfjs, fromFedleaf) < 1e-5,
    `TF.js and fedleaf predictions on ${evalEmails.length} eval emails differ by ${maxDifference(fromTfjs, fromFedleaf)}`);

  // The model.json and its shard, served as files: what tf.loadLayersModel(url) reads.
  const { modelJson, weightData } = exported;
  assert.deepEqual(modelJson.weightsManifest[0].paths, ['weights.bin']);
  const files = { '/m/model.json': JSON.stringify(modelJson), '/m/weights.bin': weightData };
  const fetchFunc = async (url) => new Response(files[new URL(url).pathname] ?? null,
    { status: files[new URL(url).pathname] ? 200 : 404 });
  const fromFiles = await tf.loadLayersModel(tf.io.http('http://files.test/m/model.json', { fetchFunc }));
  assert.deepEqual(tfjsPredictions(fromFiles, plan, evalEmails), fromTfjs);

  // The exported model imports again to the same plan and model, in either form.
  for (const [form, again] of [['model.json', importTfjsLayersModel(executor, modelJson, weightData, { features: FEATURES })],
    ['ModelArtifacts', importTfjsLayersModel(executor, exported, undefined, { features: FEATURES })]]) {
    assert.deepEqual(again.plan.model, plan.model, form);
    assert.deepEqual(executor.decodeSafetensors(again.model).tensors, executor.decodeSafetensors(trained).tensors, form);
  }
});

test('an Embedding with mask_zero imports with token 0 as padding: fedleaf id i is token i + 1', async () => {
  const original = spamModel({ maskZero: true });
  const warnings = [];
  const { plan, model, tokenOffset } = importTfjsLayersModel(executor, await saved(original, { includeOptimizer: false }),
    undefined, { features: FEATURES, onWarning: (message) => warnings.push(message) });
  assert.equal(tokenOffset, 1);
  assert.deepEqual(plan.train.optimizer, { type: 'adam', learning_rate: 0.001, epsilon_form: 'tfjs' },
    'without a training config: Keras\'s default, in TF.js\'s form');
  assert.deepEqual(warnings, ['TF.js model import: the model has no optimizer (saved without it: model.save(handler, ' +
    "{includeOptimizer: true}) keeps it); the plan trains with Keras's default Adam, learning rate 0.001 " +
    '(options.train sets another)']);
  assert.equal(plan.model.layers[0].vocab, VOCAB);
  const table = original.getLayer('emb').getWeights()[0].dataSync();
  assert.deepEqual(executor.decodeSafetensors(model).tensors['emb/weight'].data, table.slice(DIM));
  const emails = records.filter((r) => r.split === 'eval').slice(0, 20);
  assert.ok(maxDifference(tfjsPredictions(original, plan, emails, 1), fedleafPredictions(plan, model, emails)) < 1e-5);
});

const SUPPORTED = new RegExp(String.raw`\(supported: InputLayer \(ids, dense numbers, or sparse numbers read by Dense\), Embedding \+ GlobalAveragePooling1D, ` +
  String.raw`Embedding \+ Flatten \(one id per example; an Embedding may read several inputs\), Dense, Activation, Dropout, ` +
  String.raw`SpatialDropout1D, Concatenate, Add, Multiply; one output\)$`);

test('importing a model with a layer fedleaf does not support names its class and name and lists the supported ones', async () => {
  const model = tf.sequential();
  model.add(tf.layers.embedding({ name: 'emb', inputDim: 50, outputDim: 4, inputLength: 6 }));
  model.add(tf.layers.lstm({ name: 'memory', units: 3 }));
  model.add(tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid' }));
  const artifacts = await saved(model);
  assert.throws(() => importTfjsLayersModel(executor, artifacts), (error) => {
    assert.match(error.message, /layer LSTM 'memory' after Embedding 'emb' is not supported: an Embedding must be followed by GlobalAveragePooling1D or Flatten/);
    assert.match(error.message, SUPPORTED);
    return true;
  });

  const dense = tf.sequential();
  dense.add(tf.layers.dense({ name: 'hidden', units: 4, inputShape: [3], activation: 'relu' }));
  dense.add(tf.layers.batchNormalization({ name: 'norm' }));
  dense.add(tf.layers.dense({ name: 'out', units: 2, activation: 'softmax' }));
  const denseArtifacts = await saved(dense);
  assert.throws(() => importTfjsLayersModel(executor, denseArtifacts),
    /layer BatchNormalization 'norm' is not supported \(supported: /);

  const recurrent = tf.sequential();
  recurrent.add(tf.layers.lstm({ name: 'memory', units: 3, inputShape: [5, 2] }));
  recurrent.add(tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid' }));
  const recurrentArtifacts = await saved(recurrent);
  assert.throws(() => importTfjsLayersModel(executor, recurrentArtifacts), /layer LSTM 'memory' is not supported/);

  assert.throws(() => importTfjsLayersModel(executor, { ...artifacts, modelTopology: {
    class_name: 'Sequential', config: { layers: [artifacts.modelTopology.config.layers[0]] } } }),
  (error) => {
    assert.match(error.message, /nothing after Embedding 'emb' is not supported/);
    assert.match(error.message, SUPPORTED);
    return true;
  });
});

// Each email's ids (fedleaf's featurizer) as the CSR columns graph_plan_reference.mjs takes.
function emailColumns(plan, emails) {
  const ids = [];
  const offsets = [0];
  for (const { text, label } of emails) {
    const dataset = executor.datasetFromTexts([text], [label], plan);
    ids.push(...dataset.distinctIds());
    dataset.delete();
    offsets.push(ids.length);
  }
  return { tokens: { ids, offsets } };
}

test('Dropout and SpatialDropout1D import as dropout layers with their rates and predict as TF.js', async () => {
  const text = tf.sequential();
  text.add(tf.layers.embedding({ name: 'emb', inputDim: VOCAB, outputDim: DIM,
    embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed: 5 }) }));
  text.add(tf.layers.spatialDropout1d({ name: 'drop_tokens', rate: 0.2 }));
  text.add(tf.layers.globalAveragePooling1d({ name: 'pool' }));
  text.add(tf.layers.dropout({ name: 'drop', rate: 0.5, seed: 3 }));
  text.add(tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid',
    kernelInitializer: tf.initializers.glorotUniform({ seed: 6 }) }));
  text.compile({ optimizer: tf.train.adam(0.01), loss: 'binaryCrossentropy' });

  // SpatialDropout1D before the pooling drops a channel of every token at once: dropout of the
  // pooled vector, exactly; so the import warns of nothing.
  const { plan, model } = importTfjsLayersModel(executor, await saved(text), undefined,
    { features: FEATURES, onWarning: assert.fail });

  assert.deepEqual(plan.model.layers, [
    { type: 'embedding_bag', name: 'emb', input: 'tokens', vocab: VOCAB, dim: DIM, combiner: 'mean' },
    { type: 'dropout', name: 'drop_tokens', rate: 0.2 },
    { type: 'dropout', name: 'drop', rate: 0.5, seed: 3 },
    { type: 'dense', name: 'out', units: 1 }]);
  const emails = records.filter((r) => r.split === 'eval').slice(0, 20);
  const { predictions } = referenceForward(plan, executor.decodeSafetensors(model).tensors, emailColumns(plan, emails));
  assert.ok(maxDifference(tfjsPredictions(text, plan, emails), predictions.map(([p]) => p)) < 1e-5);
});

test('a Dropout between an Embedding and GlobalAveragePooling1D imports after the bag, with a warning', async () => {
  const text = tf.sequential();
  text.add(tf.layers.embedding({ name: 'emb', inputDim: 10, outputDim: 2 }));
  text.add(tf.layers.dropout({ name: 'drop', rate: 0.1 }));
  text.add(tf.layers.globalAveragePooling1d({ name: 'pool' }));
  text.add(tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid' }));
  const warnings = [];
  const { plan } = importTfjsLayersModel(executor, await saved(text, { includeOptimizer: false }), undefined,
    { onWarning: (message) => warnings.push(message) });
  assert.deepEqual(plan.model.layers.map((l) => l.type), ['embedding_bag', 'dropout', 'dense']);
  assert.equal(warnings.length, 2, 'the dropout, and the default optimizer');
  assert.equal(warnings[0], "TF.js model import: Dropout 'drop' between Embedding 'emb' and GlobalAveragePooling1D 'pool' " +
    'becomes a dropout of the pooled vector: the same at inference, other noise in training (SpatialDropout1D is exact)');
});

test('a dense TF.js model with a hidden relu layer and softmax output imports and predicts as TF.js', async () => {
  const model = tf.sequential();
  model.add(tf.layers.dense({ name: 'hidden', units: 5, inputShape: [3], activation: 'relu',
    kernelInitializer: tf.initializers.glorotUniform({ seed: 3 }), biasInitializer: tf.initializers.constant({ value: 0.1 }) }));
  model.add(tf.layers.dense({ name: 'out', units: 3, activation: 'softmax', kernelInitializer: tf.initializers.glorotUniform({ seed: 4 }) }));
  model.compile({ optimizer: tf.train.sgd(0.1), loss: 'sparseCategoricalCrossentropy' });
  const { plan, model: bytes } = importTfjsLayersModel(executor, await saved(model));
  assert.deepEqual(plan.model.layers, [{ type: 'dense', name: 'hidden', units: 5, activation: 'relu' },
    { type: 'dense', name: 'out', units: 3 }]);
  assert.equal(plan.model.loss, 'softmax_cross_entropy');
  assert.deepEqual(plan.train.optimizer, { type: 'sgd', learning_rate: 0.1 });
  const rows = [[0.5, -1, 2], [0, 0.25, -0.75], [3, 1, -2]];
  const expected = model.predict(tf.tensor2d(rows)).dataSync();
  const dataset = executor.datasetFromDense(rows.flat(), 3, [0, 1, 2]);
  const actual = executor.predict(plan, bytes, dataset);
  dataset.delete();
  assert.ok(maxDifference(Array.from(actual), Array.from(expected)) < 1e-5);
});

test('an exported model loads with tf.io.fromMemory as it is and predicts as fedleaf does', async () => {
  const plan = textPlan({ vocab: 64, dim: 3, combiner: 'mean' });
  const model = executor.initializeModel(plan, 7);
  const emails = records.filter((r) => r.split === 'eval').slice(0, 20);

  const exported = exportTfjsLayersModel(executor, plan, model);

  assert.equal(exported.format, 'layers-model');
  assert.deepEqual(exported.weightSpecs.map((w) => w.name), ['emb/embeddings', 'out/kernel', 'out/bias']);
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
  assert.equal(loaded.getLayer('out').getConfig().activation, 'softmax');
  assert.equal(loaded.optimizer.getClassName(), 'SGD', 'the training config came along');
  const probabilities = fedleafProbabilities(plan, model, emails);
  const fromTfjs = emails.map(({ text }) => {
    const dataset = executor.datasetFromTexts([text], [0], plan);
    const ids = Array.from(dataset.distinctIds());
    dataset.delete();
    return tf.tidy(() => Array.from(loaded.predict(tf.tensor2d([ids], [1, ids.length], 'int32')).dataSync()));
  });
  assert.ok(maxDifference(fromTfjs.flat(), probabilities) < 1e-6);
  const inferenceOnly = exportTfjsLayersModel(executor, { model: plan.model }, model);
  assert.equal(inferenceOnly.trainingConfig, undefined);
  assert.equal((await tf.loadLayersModel(tf.io.fromMemory(inferenceOnly))).layers.length, 3);
});

test('a plan whose embedding sums its rows exports as Embedding + Flatten of one id per example; sqrtn is an Error', async () => {
  const plan = textPlan({ vocab: 10, dim: 2, combiner: 'sum' });
  const model = executor.initializeModel(plan, 1);
  const exported = exportTfjsLayersModel(executor, plan, model);
  assert.deepEqual(exported.modelTopology.config.layers.map((l) => l.class_name), ['Embedding', 'Flatten', 'Dense']);
  assert.deepEqual(exported.modelTopology.config.layers[0].config.batch_input_shape, [null, 1]);
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
  const ids = [3, 0, 9, 4];
  const dataset = executor.datasetFromCsr({ offsets: [0, 1, 2, 3, 4], ids, labels: [0, 1, 0, 1], numFeatures: 10 });
  const fromFedleaf = Array.from(executor.predict(plan, model, dataset));
  dataset.delete();
  const fromTfjs = tf.tidy(() => Array.from(loaded.predict(tf.tensor2d(ids, [4, 1], 'int32')).dataSync()));
  assert.ok(maxDifference(fromTfjs, fromFedleaf) < 1e-6);
  assert.throws(() => loaded.predict(tf.tensor2d([[1, 2]], [1, 2], 'int32')), /expected .* to have shape \[null,1\]/,
    'TF.js refuses two ids per example');

  const sqrtn = textPlan({ vocab: 10, dim: 2, combiner: 'sqrtn' });
  assert.throws(() => exportTfjsLayersModel(executor, sqrtn, executor.initializeModel(sqrtn, 1)),
    /embedding_bag 'emb': combiner sqrtn has no TF.js equivalent \(mean, or sum of one id\)/);
});

// F16 bits of a value that binary16 holds exactly (normal or zero).
function f16Bits(v) {
  if (v === 0) return Object.is(v, -0) ? 0x8000 : 0;
  const exponent = Math.floor(Math.log2(Math.abs(v)));
  const mantissa = (Math.abs(v) / 2 ** exponent - 1) * 1024;
  assert.ok(Number.isInteger(mantissa) && exponent >= -14 && exponent <= 15, `${v} is an exact F16`);
  return (v < 0 ? 0x8000 : 0) | ((exponent + 15) << 10) | mantissa;
}

test('weights the converter quantized to float16 import widened exactly', async () => {
  const model = tf.sequential();
  model.add(tf.layers.dense({ name: 'out', units: 2, inputShape: [3], activation: 'softmax' }));
  const kernel = [0.5, -1.25, 0.125, 2, 0, -0.75];
  const bias = [1.5, -0.0009765625];
  model.setWeights([tf.tensor2d(kernel, [3, 2]), tf.tensor1d(bias)]);
  const artifacts = await saved(model, { includeOptimizer: false });
  const halves = new Uint16Array([...kernel, ...bias].map(f16Bits));
  const quantized = { ...artifacts, weightData: halves.buffer,
    weightSpecs: artifacts.weightSpecs.map((w) => ({ ...w, quantization: { dtype: 'float16', original_dtype: 'float32' } })) };

  const { model: bytes } = importTfjsLayersModel(executor, quantized, undefined, { onWarning: () => {} });

  const { tensors } = executor.decodeSafetensors(bytes);
  assert.deepEqual(Array.from(tensors['out/weight'].data), kernel);
  assert.deepEqual(Array.from(tensors['out/bias'].data), bias);
  const uint8 = { ...quantized, weightSpecs: quantized.weightSpecs.map((w) => ({ ...w, quantization: { dtype: 'uint8', scale: 1, min: 0 } })) };
  assert.throws(() => importTfjsLayersModel(executor, uint8), /weight 'out\/kernel': quantization uint8 is not supported/);
});

test('a model.json as tensorflowjs_converter writes it from Keras imports from two shards', async () => {
  const original = spamModel();
  const artifacts = await saved(original, { includeOptimizer: false });
  const { layers } = artifacts.modelTopology.config;
  // Keras's layout: model_config and training_config inside modelTopology, an InputLayer first,
  // snake_case optimizer fields, weights under the model's scope, shards split anywhere.
  const modelJson = {
    format: 'layers-model', generatedBy: 'keras v2.15.0', convertedBy: 'TensorFlow.js Converter v4.22.0',
    modelTopology: {
      keras_version: '2.15.0', backend: 'tensorflow',
      model_config: { class_name: 'Sequential', config: { name: 'spam', layers: [
        { class_name: 'InputLayer', config: { batch_input_shape: [null, null], dtype: 'int32', name: 'tokens' } },
        ...layers] } },
      training_config: { loss: { class_name: 'BinaryCrossentropy', config: { from_logits: false } },
        optimizer_config: { class_name: 'Adam', config: { learning_rate: 0.01, beta_1: 0.8, beta_2: 0.99, epsilon: 1e-6 } } },
    },
    weightsManifest: [{ paths: ['group1-shard1of2.bin', 'group1-shard2of2.bin'],
      weights: artifacts.weightSpecs.map((w) => ({ ...w, name: `spam/${w.name}` })) }],
  };
  const bytes = new Uint8Array(artifacts.weightData);
  const shards = [bytes.slice(0, 1000).buffer, bytes.slice(1000)];

  const { plan, model } = importTfjsLayersModel(executor, modelJson, shards, { features: FEATURES });

  assert.equal(plan.model.loss, 'sigmoid_cross_entropy');
  assert.deepEqual(plan.train.optimizer, { type: 'adam', learning_rate: 0.01, beta1: 0.8, beta2: 0.99, epsilon: 1e-6,
    epsilon_form: 'keras' }, 'a Keras model steps in the form of Keras in Python');
  const emails = records.filter((r) => r.split === 'eval').slice(0, 20);
  assert.ok(maxDifference(tfjsPredictions(original, plan, emails), fedleafPredictions(plan, model, emails)) < 1e-5);
  assert.throws(() => importTfjsLayersModel(executor, modelJson, shards.slice(0, 1)),
    /the shards hold 1000 bytes, fewer than the manifest needs/);
});
