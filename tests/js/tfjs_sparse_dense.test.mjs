// Keras models with a sparse input (keras.Input(shape=(N,), sparse=True) read by a Dense): the
// model.json is written here exactly as Python Keras 2 + tensorflowjs_converter (and Keras 3)
// write it; importTfjsLayersModel maps the Dense to embedding_bag {combiner: sum, use_bias}
// over a sparse_ids input with weights; fedleaf's predictions on SparseTensor rows
// (datasetFromInputs' {indices, values, denseShape}) equal the real @tensorflow/tfjs computing
// the same model on the rows densified, within 1e-5; three SGD steps give the weights TF.js's
// trainOnBatch gives on the dense rows; the export keeps the InputLayer's sparse: true, and
// TF.js — which keeps the flag and computes on dense tensors — loads it and predicts as fedleaf;
// two leaves train a federated round of it on SparseTensor rows against a real fedleaf-server.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { createExecutor, exportTfjsLayersModel, importTfjsLayersModel, runLeaf } from '../../js_bindings/src/index.js';
import { REPO_ROOT, adminClient, startServer } from '../server/server_harness.mjs';
import { maxDifference, referenceForward } from './graph_plan_reference.mjs';
import { toKeras3 } from './tfjs_functional_models.mjs';

const requireFromRoot = createRequire(path.join(REPO_ROOT, 'package.json'));
const tf = await import(pathToFileURL(requireFromRoot.resolve('@tensorflow/tfjs')).href);

const N = 20;        // the sparse input's columns
const VOCAB = 15;    // the Embedding's tokens
const LENGTH = 3;    // tokens per example
const EXAMPLES = 12;

let executor;
before(async () => {
  await tf.setBackend('cpu');
  executor = await createExecutor();
});

function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const values = (random, n, scale) => Float32Array.from({ length: n }, () => (2 * random() - 1) * scale);

// Keras 2 layer configs, as model.to_json() writes them.
const initializer = (className) => ({ module: 'keras.initializers', class_name: className, config: className === 'Zeros' ? {} : { seed: null },
  registered_name: null });
function kerasInput(name, shape, { sparse = false, dtype = 'float32' } = {}) {
  return { class_name: 'InputLayer', config: { batch_input_shape: shape, dtype, sparse, ragged: false, name }, name, inbound_nodes: [] };
}
function kerasDense(name, units, activation, from, useBias = true) {
  return { class_name: 'Dense', config: { name, trainable: true, dtype: 'float32', units, activation, use_bias: useBias,
    kernel_initializer: initializer('GlorotUniform'), bias_initializer: initializer('Zeros'), kernel_regularizer: null,
    bias_regularizer: null, activity_regularizer: null, kernel_constraint: null, bias_constraint: null },
  name, inbound_nodes: [[[from, 0, 0, {}]]] };
}
function kerasLayer(className, name, config, from) {
  return { class_name: className, config: { name, trainable: true, dtype: 'float32', ...config }, name,
    inbound_nodes: [from.map((f) => [f, 0, 0, {}])] };
}

// model.json as tensorflowjs_converter writes it from a Keras 2 model: modelTopology with
// model_config and training_config, one weights group, float32 weights in one shard.
function converted(modelConfig, weights, loss = 'binary_crossentropy') {
  const bytes = new Float32Array(weights.reduce((n, w) => n + w.data.length, 0));
  let at = 0;
  for (const w of weights) {
    bytes.set(w.data, at);
    at += w.data.length;
  }
  return {
    modelJson: {
      format: 'layers-model', generatedBy: 'keras v2.15.0', convertedBy: 'TensorFlow.js Converter v4.17.0',
      modelTopology: { keras_version: '2.15.0', backend: 'tensorflow', model_config: modelConfig,
        training_config: { loss, metrics: null, weighted_metrics: null, loss_weights: null, sample_weight_mode: null,
          optimizer_config: { class_name: 'SGD', config: { name: 'SGD', learning_rate: 0.1, momentum: 0.0, nesterov: false } } } },
      weightsManifest: [{ paths: ['group1-shard1of1.bin'], weights: weights.map((w) => ({ name: w.name, shape: w.shape, dtype: 'float32' })) }],
    },
    shards: [bytes.buffer],
  };
}

// Wide & deep: x = Input((N,), sparse=True) → Dense(4, relu) "wide"; tokens → Embedding +
// GlobalAveragePooling1D; Concatenate → Dense(1, sigmoid). The weights, by name.
function wideAndDeep() {
  const random = generator(5);
  const weights = {
    'wide/kernel': { shape: [N, 4], data: values(random, N * 4, 0.6) },
    'wide/bias': { shape: [4], data: values(random, 4, 0.3) },
    'emb/embeddings': { shape: [VOCAB, 3], data: values(random, VOCAB * 3, 0.5) },
    'out/kernel': { shape: [7, 1], data: values(random, 7, 0.8) },
    'out/bias': { shape: [1], data: values(random, 1, 0.2) },
  };
  const layers = [
    kerasInput('tfidf', [null, N], { sparse: true }),
    kerasInput('tokens', [null, null], { dtype: 'int32' }),
    kerasDense('wide', 4, 'relu', 'tfidf'),
    kerasLayer('Embedding', 'emb', { batch_input_shape: [null, null], input_dim: VOCAB, output_dim: 3,
      embeddings_initializer: initializer('RandomUniform'), embeddings_regularizer: null, activity_regularizer: null,
      embeddings_constraint: null, mask_zero: false, input_length: null }, ['tokens']),
    kerasLayer('GlobalAveragePooling1D', 'emb_mean', { data_format: 'channels_last', keepdims: false }, ['emb']),
    kerasLayer('Concatenate', 'joined', { axis: -1 }, ['wide', 'emb_mean']),
    kerasDense('out', 1, 'sigmoid', 'joined'),
  ];
  const modelConfig = { class_name: 'Functional', config: { name: 'wide_and_deep', trainable: true, layers,
    input_layers: [['tfidf', 0, 0], ['tokens', 0, 0]], output_layers: [['out', 0, 0]] } };
  return { modelConfig, weights };
}

// The same model in TF.js with a DENSE [batch, N] input (TF.js has no sparse tensors), the same weights.
function tfjsDenseReference(weights) {
  const x = tf.input({ shape: [N], name: 'tfidf' });
  const tokens = tf.input({ shape: [null], dtype: 'int32', name: 'tokens' });
  const wide = tf.layers.dense({ name: 'wide', units: 4, activation: 'relu' });
  const emb = tf.layers.embedding({ name: 'emb', inputDim: VOCAB, outputDim: 3 });
  const out = tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid' });
  const joined = tf.layers.concatenate({ name: 'joined' }).apply([wide.apply(x),
    tf.layers.globalAveragePooling1d({ name: 'emb_mean' }).apply(emb.apply(tokens))]);
  const model = tf.model({ inputs: [x, tokens], outputs: out.apply(joined) });
  const t = (name) => tf.tensor(weights[name].data, weights[name].shape);
  wide.setWeights([t('wide/kernel'), t('wide/bias')]);
  emb.setWeights([t('emb/embeddings')]);
  out.setWeights([t('out/kernel'), t('out/bias')]);
  return model;
}

// Examples: tf-idf-like rows (0 to 4 entries, one row empty, entries listed out of order) as a
// SparseTensor, their dense form, and LENGTH tokens each.
function examples() {
  const random = generator(9);
  const indices = [];
  const entries = [];
  for (let row = 0; row < EXAMPLES; row++) {
    const count = row === 3 ? 0 : 1 + Math.floor(random() * 4);
    const columns = new Set();
    while (columns.size < count) columns.add(Math.floor(random() * N));
    for (const column of columns) entries.push([row, column, 0.1 + 2 * random()]);
  }
  entries.reverse();  // unsorted: the dataset sorts them as tf.sparse.reorder does
  const dense = new Float32Array(EXAMPLES * N);
  for (const [row, column, value] of entries) {
    indices.push([row, column]);
    dense[row * N + column] = Math.fround(value);
  }
  const sparse = { indices, values: Float32Array.from(entries.map((e) => e[2])), denseShape: [EXAMPLES, N] };
  const ids = Array.from({ length: EXAMPLES * LENGTH }, () => Math.floor(random() * VOCAB));
  const offsets = Array.from({ length: EXAMPLES + 1 }, (_, i) => i * LENGTH);
  const labels = Array.from({ length: EXAMPLES }, (_, i) => (i * 7) % 3 === 0 ? 1 : 0);
  return { sparse, dense, ids, offsets, labels };
}

function tfjsPredict(model, data, rows = [...Array(EXAMPLES).keys()]) {
  return tf.tidy(() => model.predict([
    tf.tensor2d(rows.flatMap((r) => Array.from(data.dense.slice(r * N, (r + 1) * N))), [rows.length, N]),
    tf.tensor2d(rows.flatMap((r) => data.ids.slice(r * LENGTH, (r + 1) * LENGTH)), [rows.length, LENGTH], 'int32'),
  ]).arraySync());
}

function fedleafPredict(plan, modelBytes, data) {
  const dataset = executor.datasetFromInputs({ tfidf: data.sparse, tokens: { ids: data.ids, offsets: data.offsets } }, data.labels);
  const flat = Array.from(executor.predict(plan, modelBytes, dataset));
  dataset.delete();
  return Array.from({ length: EXAMPLES }, (_, i) => [flat[2 * i + 1]]);
}

const EXPECTED_MODEL = {
  inputs: { tfidf: { type: 'sparse_ids' }, tokens: { type: 'sparse_ids' } },
  layers: [
    { type: 'embedding_bag', name: 'wide', input: 'tfidf', vocab: N, dim: 4, combiner: 'sum', use_bias: true },
    { type: 'relu', name: 'wide_relu', input: 'wide' },
    { type: 'embedding_bag', name: 'emb', input: 'tokens', vocab: VOCAB, dim: 3, combiner: 'mean' },
    { type: 'concatenate', name: 'joined', inputs: ['wide_relu', 'emb'] },
    { type: 'dense', name: 'out', input: 'joined', units: 1 },
  ],
  output: 'out',
  loss: 'sigmoid_cross_entropy',
};

test('a Keras 2 / Keras 3 sparse input read by a Dense imports as embedding_bag sum + bias and predicts as TF.js on the dense rows', () => {
  const { modelConfig, weights } = wideAndDeep();
  const named = Object.entries(weights).map(([name, w]) => ({ name, ...w }));
  const { modelJson, shards } = converted(modelConfig, named);
  const imported = importTfjsLayersModel(executor, modelJson, shards, { onWarning: assert.fail });
  assert.deepEqual(imported.plan.model, EXPECTED_MODEL);
  assert.deepEqual(imported.sparseInputs, ['tfidf']);
  assert.deepEqual(imported.plan.updates['wide/weight'], { encoding: 'row_sparse', aggregator: 'mean_over_contributors' });
  assert.deepEqual(imported.plan.updates['wide/bias'], { encoding: 'dense', aggregator: 'weighted_mean' });
  const tensors = executor.decodeSafetensors(imported.model).tensors;
  assert.deepEqual(tensors['wide/weight'].shape, [N, 4]);
  assert.deepEqual(Array.from(tensors['wide/weight'].data), Array.from(weights['wide/kernel'].data));
  assert.deepEqual(Array.from(tensors['wide/bias'].data), Array.from(weights['wide/bias'].data));

  const data = examples();
  const expected = tfjsPredict(tfjsDenseReference(weights), data);
  const fromFedleaf = fedleafPredict(imported.plan, imported.model, data);
  assert.ok(maxDifference(fromFedleaf, expected) < 1e-5, `fedleaf and TF.js differ by ${maxDifference(fromFedleaf, expected)}`);
  // The plan's meaning in float64 (independent of the C++ executor) agrees too.
  const reference = referenceForward(imported.plan, tensors, { tfidf: sortedCsr(data.sparse), tokens: { ids: data.ids, offsets: data.offsets } });
  assert.ok(maxDifference(reference.predictions, expected) < 1e-5);

  // Keras 3 writes batch_shape, Functional, keras tensors in inbound nodes: the same plan.
  const keras3 = { ...modelJson, modelTopology: { ...modelJson.modelTopology, model_config: toKeras3(modelConfig) } };
  const again = importTfjsLayersModel(executor, keras3, shards, { onWarning: assert.fail });
  assert.deepEqual(again.plan.model, EXPECTED_MODEL);
});

// The SparseTensor's entries as CSR rows in (row, column) order, for the float64 reference.
function sortedCsr(sparse) {
  const order = sparse.indices.map((_, k) => k).sort((a, b) => sparse.indices[a][0] - sparse.indices[b][0] ||
    sparse.indices[a][1] - sparse.indices[b][1]);
  const offsets = new Array(sparse.denseShape[0] + 1).fill(0);
  for (const [row] of sparse.indices) offsets[row + 1] += 1;
  for (let i = 0; i < sparse.denseShape[0]; i++) offsets[i + 1] += offsets[i];
  return { ids: order.map((k) => sparse.indices[k][1]), weights: order.map((k) => sparse.values[k]), offsets };
}

test('three SGD steps on SparseTensor rows give the weights TF.js trainOnBatch gives on the dense rows', async () => {
  const { modelConfig, weights } = wideAndDeep();
  const { modelJson, shards } = converted(modelConfig, Object.entries(weights).map(([name, w]) => ({ name, ...w })));
  const { plan, model } = importTfjsLayersModel(executor, modelJson, shards, { onWarning: assert.fail });
  assert.deepEqual(plan.train.optimizer, { type: 'sgd', learning_rate: 0.1 });
  const data = examples();
  const trainPlan = { ...plan, train: { ...plan.train, batch_size: 4, epochs: 1, shuffle: false } };
  const dataset = executor.datasetFromInputs({ tfidf: data.sparse, tokens: { ids: data.ids, offsets: data.offsets } }, data.labels);
  const update = executor.execute(trainPlan, model, dataset);
  dataset.delete();
  const trained = executor.decodeSafetensors(executor.applyUpdate(trainPlan, model, update)).tensors;

  const reference = tfjsDenseReference(weights);
  reference.compile({ optimizer: tf.train.sgd(0.1), loss: 'binaryCrossentropy' });
  for (let begin = 0; begin < EXAMPLES; begin += 4) {
    const rows = [begin, begin + 1, begin + 2, begin + 3];
    const batch = [
      tf.tensor2d(rows.flatMap((r) => Array.from(data.dense.slice(r * N, (r + 1) * N))), [4, N]),
      tf.tensor2d(rows.flatMap((r) => data.ids.slice(r * LENGTH, (r + 1) * LENGTH)), [4, LENGTH], 'int32'),
    ];
    const labels = tf.tensor2d(rows.map((r) => data.labels[r]), [4, 1]);
    await reference.trainOnBatch(batch, labels);
    tf.dispose([...batch, labels]);
  }
  const pairs = [['wide/weight', 'wide', 0], ['wide/bias', 'wide', 1], ['emb/weight', 'emb', 0], ['out/weight', 'out', 0],
    ['out/bias', 'out', 1]];
  for (const [tensor, layer, k] of pairs) {
    const expected = Array.from(reference.getLayer(layer).getWeights()[k].dataSync());
    const got = Array.from(trained[tensor].data);
    assert.ok(maxDifference(got, expected) < 1e-5, `${tensor}: fedleaf and TF.js differ by ${maxDifference(got, expected)}`);
    const before = Array.from(executor.decodeSafetensors(model).tensors[tensor].data);
    assert.ok(maxDifference(got, before) > 1e-4, `${tensor} trained`);
  }
});

test('the export keeps sparse: true; TF.js loads it, computes on dense rows and predicts as fedleaf; it imports back to the plan', async () => {
  const { modelConfig, weights } = wideAndDeep();
  const { modelJson, shards } = converted(modelConfig, Object.entries(weights).map(([name, w]) => ({ name, ...w })));
  const imported = importTfjsLayersModel(executor, modelJson, shards, { onWarning: assert.fail });
  const exported = exportTfjsLayersModel(executor, imported.plan, imported.model);
  const input = exported.modelTopology.config.layers.find((l) => l.name === 'tfidf');
  assert.deepEqual(input.config, { name: 'tfidf', batch_input_shape: [null, N], dtype: 'float32', sparse: true });
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
  assert.equal(loaded.getLayer('tfidf').sparse, true);
  const data = examples();
  const fromFedleaf = fedleafPredict(imported.plan, imported.model, data);
  assert.ok(maxDifference(tfjsPredict(loaded, data), fromFedleaf) < 1e-5);
  const reimported = importTfjsLayersModel(executor, exported, undefined, { onWarning: assert.fail });
  assert.deepEqual(reimported.plan.model, imported.plan.model);
  assert.deepEqual(reimported.sparseInputs, ['tfidf']);
  assert.deepEqual(executor.decodeSafetensors(reimported.model).tensors, executor.decodeSafetensors(imported.model).tensors);
});

test('a Sequential logistic regression on a sparse input imports as a chain on x; without a bias it exports with options.sparseInputs', async () => {
  const random = generator(3);
  const kernel = { name: 'logit/kernel', shape: [N, 1], data: values(random, N, 1) };
  const layers = [kerasInput('features', [null, N], { sparse: true }), kerasDense('logit', 1, 'sigmoid', 'features', false)];
  const sequential = { class_name: 'Sequential', config: { name: 'linear', layers: layers.map(({ inbound_nodes: _, ...l }) => l) } };
  const { modelJson, shards } = converted(sequential, [kernel]);
  const { plan, model, sparseInputs } = importTfjsLayersModel(executor, modelJson, shards, { onWarning: assert.fail });
  assert.deepEqual(plan.model, { inputs: { x: 'sparse_ids' },
    layers: [{ type: 'embedding_bag', name: 'logit', input: 'x', vocab: N, dim: 1, combiner: 'sum' }], loss: 'sigmoid_cross_entropy' });
  assert.deepEqual(sparseInputs, ['x']);
  assert.deepEqual(Object.keys(plan.updates), ['logit/weight']);

  // Without use_bias the bag alone cannot say it was a Dense on a sparse input: the caller says so.
  const asEmbedding = exportTfjsLayersModel(executor, plan, model);
  assert.equal(asEmbedding.modelTopology.class_name, 'Sequential');
  const exported = exportTfjsLayersModel(executor, plan, model, { sparseInputs });
  assert.equal(exported.modelTopology.class_name, 'Model');
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
  const data = examples();
  const dataset = executor.datasetFromInputs({ x: data.sparse }, data.labels);
  const flat = Array.from(executor.predict(plan, model, dataset));
  dataset.delete();
  const fromTfjs = tf.tidy(() => loaded.predict(tf.tensor2d(data.dense, [EXAMPLES, N])).arraySync());
  assert.ok(maxDifference(fromTfjs, flat.filter((_, i) => i % 2 === 1).map((p) => [p])) < 1e-5);
  assert.deepEqual(importTfjsLayersModel(executor, exported, undefined, { onWarning: assert.fail }).plan.model, plan.model);
});

test('two Dense layers on one sparse input are two embedding_bags with their own tables; other readers are errors naming the layer', () => {
  const random = generator(4);
  const w = (name, shape) => ({ name, shape, data: values(random, shape.reduce((a, b) => a * b, 1), 0.5) });
  const layers = [kerasInput('x', [null, N], { sparse: true }), kerasDense('a', 2, 'tanh', 'x'), kerasDense('b', 3, 'linear', 'x'),
    kerasLayer('Concatenate', 'ab', { axis: -1 }, ['a', 'b']), kerasDense('out', 1, 'sigmoid', 'ab')];
  const config = (ls, inputs = [['x', 0, 0]]) => ({ class_name: 'Functional', config: { name: 'm', layers: ls, input_layers: inputs,
    output_layers: [['out', 0, 0]] } });
  const weights = [w('a/kernel', [N, 2]), w('a/bias', [2]), w('b/kernel', [N, 3]), w('b/bias', [3]), w('out/kernel', [5, 1]), w('out/bias', [1])];
  const { modelJson, shards } = converted(config(layers), weights);
  const { plan } = importTfjsLayersModel(executor, modelJson, shards, { onWarning: assert.fail });
  assert.deepEqual(plan.model.layers.slice(0, 3), [
    { type: 'embedding_bag', name: 'a', input: 'x', vocab: N, dim: 2, combiner: 'sum', use_bias: true },
    { type: 'tanh', name: 'a_tanh', input: 'a' },
    { type: 'embedding_bag', name: 'b', input: 'x', vocab: N, dim: 3, combiner: 'sum', use_bias: true }]);

  // A Concatenate reading the sparse input itself.
  const direct = [kerasInput('x', [null, N], { sparse: true }), kerasDense('a', 2, 'tanh', 'x'),
    kerasLayer('Concatenate', 'ab', { axis: -1 }, ['a', 'x']), kerasDense('out', 1, 'sigmoid', 'ab')];
  assert.throws(() => importTfjsLayersModel(executor, converted(config(direct), weights).modelJson, shards),
    /TF\.js model import: InputLayer 'x' is sparse and Concatenate 'ab' reads it: only Dense layers may read a sparse input/);
  // A sparse input without its column count.
  const unknown = [kerasInput('x', [null, null], { sparse: true }), kerasDense('out', 1, 'sigmoid', 'x')];
  assert.throws(() => importTfjsLayersModel(executor, converted(config(unknown), [w('out/kernel', [N, 1]), w('out/bias', [1])]).modelJson,
    converted(config(unknown), [w('out/kernel', [N, 1]), w('out/bias', [1])]).shards),
  /TF\.js model import: InputLayer 'x': a sparse input needs the shape \[batch, N\] with N in \[1, 2\^31\), got \[,\]/);
  // A kernel of another width than the input's columns.
  const narrow = [kerasInput('x', [null, N + 1], { sparse: true }), kerasDense('out', 1, 'sigmoid', 'x')];
  const narrowWeights = [w('out/kernel', [N, 1]), w('out/bias', [1])];
  assert.throws(() => importTfjsLayersModel(executor, converted(config(narrow), narrowWeights).modelJson, converted(config(narrow), narrowWeights).shards),
    /TF\.js model import: Dense 'out': kernel takes 20 inputs, the sparse input 'x' has 21 columns/);
});

test('the export refuses a sparse input read by what a Dense cannot be', () => {
  const plan = { kind: 'evaluate', model: { inputs: { s: { type: 'sparse_ids' } }, layers: [
    { type: 'embedding_bag', name: 'd', input: 's', vocab: 5, dim: 2, combiner: 'sum', use_bias: true },
    { type: 'embedding_bag', name: 'm', input: 's', vocab: 5, dim: 2, combiner: 'mean' },
    { type: 'add', name: 'y', inputs: ['d', 'm'] }, { type: 'dense', name: 'o', input: 'y', units: 1 }],
  output: 'o', loss: 'sigmoid_cross_entropy' } };
  const model = executor.initializeModel(plan, 1);
  assert.throws(() => exportTfjsLayersModel(executor, plan, model),
    /TF\.js model export: embedding_bag 'm' reads 's', which exports as a sparse input \(read by Dense layers\): only an embedding_bag of combiner sum with its own table may read it/);
  assert.throws(() => exportTfjsLayersModel(executor, { model: { ...plan.model, layers: plan.model.layers.slice(0, 1), output: 'd' } }, model,
    { sparseInputs: ['t'] }), /TF\.js model export: options\.sparseInputs: the plan has no input 't'/);
});

test('two leaves train a federated round on SparseTensor rows: the columns both use and the bias move, the others stay', { timeout: 120_000 }, async () => {
  const { modelConfig, weights } = wideAndDeep();
  const { modelJson, shards } = converted(modelConfig, Object.entries(weights).map(([name, w]) => ({ name, ...w })));
  const { plan, model } = importTfjsLayersModel(executor, modelJson, shards, { onWarning: assert.fail });
  const data = examples();
  // Each leaf's rows as a SparseTensor of its own (row numbers re-based), and its tokens.
  const leafInputs = (rows) => {
    const entries = data.sparse.indices.map(([r, c], k) => [rows.indexOf(r), c, data.sparse.values[k]]).filter(([r]) => r >= 0);
    return { tfidf: { indices: entries.map(([r, c]) => [r, c]), values: entries.map((e) => e[2]), denseShape: [rows.length, N] },
      tokens: { ids: rows.flatMap((r) => data.ids.slice(r * LENGTH, (r + 1) * LENGTH)), offsets: rows.map((_, i) => i * LENGTH).concat(rows.length * LENGTH) } };
  };
  const server = await startServer();
  let trained;
  try {
    const admin = adminClient(server.url);
    const { id, client_token: token } = await admin.createPopulation({ plan,
      initial_model_b64: Buffer.from(model).toString('base64'), rounds: 1, clients_per_round: 2 });
    const halves = [0, 1].map((leaf) => data.labels.map((_, i) => i).filter((i) => i % 2 === leaf));
    const datasets = halves.map((rows) => executor.datasetFromInputs(leafInputs(rows), rows.map((r) => data.labels[r])));
    const summaries = await Promise.all(datasets.map((dataset) => runLeaf({
      server: server.url, population: id, token, executor, dataset, backoff: { baseMs: 20, maxMs: 200 },
    })));
    datasets.forEach((d) => d.delete());
    assert.deepEqual(summaries.map((s) => s.uploaded), [1, 1], 'each leaf trained the round');
    trained = (await admin.downloadModel(admin.modelUrl(id, 1), { token: false })).bytes;
  } finally {
    await server.stop();
  }
  const before = executor.decodeSafetensors(model).tensors;
  const after = executor.decodeSafetensors(trained).tensors;
  // The kernel is a row-sparse table under mean_over_contributors: a column's row moves when both
  // leaves' rows use it (min_contributors 2 by default, the privacy rule of rare rows), and stays
  // when fewer do.
  const leavesUsing = (column) => new Set(data.sparse.indices.filter(([, c]) => c === column).map(([r]) => r % 2)).size;
  let moved = 0;
  for (let column = 0; column < N; column++) {
    const rowOf = (t) => Array.from(t['wide/weight'].data.slice(column * 4, (column + 1) * 4));
    if (leavesUsing(column) === 2) {
      assert.notDeepEqual(rowOf(after), rowOf(before), `column ${column} is used by both leaves: its kernel row trains`);
      moved += 1;
    } else {
      assert.deepEqual(rowOf(after), rowOf(before), `column ${column} is used by ${leavesUsing(column)} leaves: its kernel row stays`);
    }
  }
  assert.ok(moved >= 2, `${moved} columns used by both leaves`);
  assert.notDeepEqual(Array.from(after['wide/bias'].data), Array.from(before['wide/bias'].data));
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exportTfjsLayersModel(executor, plan, trained)));
  assert.ok(maxDifference(tfjsPredict(loaded, data), fedleafPredict(plan, trained, data)) < 1e-5);
});
