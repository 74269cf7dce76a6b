// TF.js / Keras functional models (issue 29): importTfjsLayersModel maps a model built with the
// real @tensorflow/tfjs — several InputLayers, Embedding + GlobalAveragePooling1D or + Flatten, one
// Embedding on two inputs, Concatenate, Add, Multiply, Dense, Dropout, Activation — to a graph plan; a
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
import { maxDifference, referenceForward } from './graph_plan_reference.mjs';
import { functionalModels, predictTfjs, saved, toKeras3 } from './tfjs_functional_models.mjs';

const requireFromRoot = createRequire(path.join(REPO_ROOT, 'package.json'));
const tf = await import(pathToFileURL(requireFromRoot.resolve('@tensorflow/tfjs')).href);

let executor;
let models;
before(async () => {
  await tf.setBackend('cpu');
  executor = await createExecutor();
  models = functionalModels(tf);
});

function referencePredictions(plan, modelBytes, inputs) {
  return referenceForward(plan, executor.decodeSafetensors(modelBytes).tensors, inputs).predictions;
}

// import → the plan predicts as TF.js → export → tf.loadLayersModel predicts as the original →
// the export imports again to the same plan and tensors.
async function roundTrip(name, expectedModel) {
  const { model: original, examples } = models[name]();
  const imported = importTfjsLayersModel(executor, await saved(tf, original), undefined, { onWarning: assert.fail });
  assert.deepEqual(imported.plan.model, expectedModel);
  const expected = predictTfjs(tf, original, examples);
  const difference = maxDifference(referencePredictions(imported.plan, imported.model, examples.inputs), expected);
  assert.ok(difference < 1e-5, `${name}: the plan's forward differs from TF.js's by ${difference}`);

  const exported = exportTfjsLayersModel(executor, imported.plan, imported.model);
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
  const again = predictTfjs(tf, loaded, examples);
  assert.ok(maxDifference(again, expected) < 1e-5, `${name}: the exported model predicts otherwise (${maxDifference(again, expected)})`);

  const reimported = importTfjsLayersModel(executor, exported, undefined, { onWarning: assert.fail });
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
  assert.deepEqual(plan.train.optimizer, { type: 'adam', learning_rate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-7,
    epsilon_form: 'tfjs' });
  assert.deepEqual(Object.keys(plan.updates).sort(), ['deep_logit/bias', 'deep_logit/weight', 'h1/bias', 'h1/weight',
    'sender_emb/weight', 'tokens/weight', 'wide/weight']);
  for (const table of ['tokens/weight', 'sender_emb/weight', 'wide/weight']) {
    assert.deepEqual(plan.updates[table], { encoding: 'row_sparse', aggregator: 'mean_over_contributors' });
  }
  assert.deepEqual(imported.tokenOffsets, { body: 0, sender: 0, cross: 0 });
  assert.equal(exported.modelTopology.class_name, 'Model');
  // The output's Activation and the loss come back as they were (tfjs_round_trip.test.mjs).
  assert.deepEqual(exported.modelTopology.config.output_layers, [['prob', 0, 0]]);
  assert.equal(exported.trainingConfig.loss, 'binary_crossentropy');
  delete plan.tfjs;
  const bare = exportTfjsLayersModel(executor, plan, imported.model);
  assert.deepEqual(bare.modelTopology.config.output_layers, [['logit_sigmoid', 0, 0]], 'without the tfjs section: fedleaf\'s names');
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
  // A functional model exports as one (its InputLayer 'item' kept), though its plan is a chain.
  assert.equal(exported.modelTopology.class_name, 'Model');
  assert.deepEqual(exported.modelTopology.config.layers.map((l) => l.class_name), ['InputLayer', 'Embedding', 'Flatten', 'Dense', 'Dense']);
  assert.deepEqual(exported.modelTopology.config.input_layers, [['item', 0, 0]]);
  assert.equal(exported.trainingConfig.loss, 'mean_squared_error');
  // The same model built with tf.sequential imports to the same plan, and exports as a Sequential one.
  const { model: sequential } = models.regression({ sequential: true });
  const again = importTfjsLayersModel(executor, await saved(tf, sequential), undefined, { onWarning: assert.fail });
  assert.deepEqual(again.plan.model, expected);
  const sequentialExport = exportTfjsLayersModel(executor, again.plan, again.model);
  assert.equal(sequentialExport.modelTopology.class_name, 'Sequential', 'a chain plan exports as before');
  assert.deepEqual(sequentialExport.modelTopology.config.layers.map((l) => l.class_name), ['Embedding', 'Flatten', 'Dense', 'Dense']);
});

test('Multiply of three inputs (a sigmoid gate, a tanh value, a pooled Embedding) imports as multiply and exports as Multiply', async () => {
  const { exported } = await roundTrip('gated', {
    inputs: { numeric: { type: 'dense', dim: 3 }, ids: { type: 'sparse_ids' } },
    layers: [
      { type: 'dense', name: 'gate', input: 'numeric', units: 6, activation: 'sigmoid' },
      { type: 'dense', name: 'value', input: 'numeric', units: 6, activation: 'tanh' },
      { type: 'embedding_bag', name: 'ids_emb', input: 'ids', vocab: 25, dim: 6, combiner: 'mean' },
      { type: 'multiply', name: 'product', inputs: ['gate', 'value', 'ids_emb'] },
      { type: 'dense', name: 'out', input: 'product', units: 1 },
    ],
    output: 'out',
    loss: 'sigmoid_cross_entropy',
  });
  const multiply = exported.modelTopology.config.layers.find((l) => l.class_name === 'Multiply');
  assert.equal(multiply.name, 'product');
  assert.deepEqual(multiply.inbound_nodes[0].map((n) => n[0]), ['gate', 'value', 'ids_mean']);
});

test('Multiply of unequal widths is an Error naming the layer and each width', async () => {
  // TF.js refuses unequal shapes when building, so the saved model.json is edited: the Multiply
  // reads the numeric input (width 3) in place of the tanh Dense (width 6).
  const artifacts = await saved(tf, models.gated().model);
  const product = artifacts.modelTopology.config.layers.find((l) => l.name === 'product');
  product.inbound_nodes[0][1][0] = 'numeric';
  assert.throws(() => importTfjsLayersModel(executor, artifacts, undefined, { onWarning: assert.fail }),
    /Multiply 'product'.*: Multiply needs equal widths, got 6 \('gate'\), 3 \('numeric'\), 6 \('ids_emb'\)/);
});

test('the Keras 3 shape of a functional model.json imports as the TF.js one', async () => {
  for (const name of ['wideAndDeep', 'sharedEmbedding']) {
    const { model } = models[name]();
    const artifacts = await saved(tf, model);
    const keras3 = { ...artifacts, modelTopology: toKeras3(artifacts.modelTopology) };
    assert.notDeepEqual(keras3.modelTopology, artifacts.modelTopology);
    const fromKeras3 = importTfjsLayersModel(executor, keras3, undefined, { onWarning: assert.fail });
    const fromTfjs = importTfjsLayersModel(executor, artifacts, undefined, { onWarning: assert.fail });
    assert.deepEqual(fromKeras3.plan, fromTfjs.plan, name);
  }
});

const SUPPORTED = /\(supported: InputLayer \(ids, dense numbers, or sparse numbers read by Dense\), Embedding \+ GlobalAveragePooling1D, Embedding \+ Flatten \(one id per example; an Embedding may read several inputs\), Dense, Activation, Dropout, SpatialDropout1D, Concatenate, Add, Multiply; one output\)$/;

// The error of importing `model`: its message must match every pattern.
async function importError(model, ...patterns) {
  const artifacts = await saved(tf, model);
  assert.throws(() => importTfjsLayersModel(executor, artifacts, undefined, { onWarning: () => {} }), (error) => {
    for (const pattern of patterns) assert.match(error.message, pattern);
    return true;
  });
}

test('an LSTM, a Conv1D and a model with two outputs are Errors naming them (each output too) and listing what is supported', async () => {
  const ids = tf.input({ shape: [6], dtype: 'int32', name: 'ids' });
  const numbers = tf.input({ shape: [3], name: 'numbers' });
  const embedded = tf.layers.embedding({ name: 'emb', inputDim: 20, outputDim: 4 }).apply(ids);
  const memory = tf.layers.lstm({ name: 'memory', units: 3 }).apply(embedded);
  const joined = tf.layers.concatenate({ name: 'join' }).apply([memory, numbers]);
  await importError(tf.model({ inputs: [ids, numbers], outputs: tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid' }).apply(joined) }),
    /layer LSTM 'memory' after Embedding 'emb' is not supported: an Embedding must be followed by GlobalAveragePooling1D or Flatten/, SUPPORTED);

  const series = tf.input({ shape: [8, 2], name: 'series' });
  const conv = tf.layers.conv1d({ name: 'conv', filters: 4, kernelSize: 3 }).apply(series);
  const pooled = tf.layers.globalAveragePooling1d({ name: 'pool' }).apply(conv);
  await importError(tf.model({ inputs: series, outputs: tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid' }).apply(pooled) }),
    /layer Conv1D 'conv' is not supported/, SUPPORTED);

  const tokens = tf.input({ shape: [null], dtype: 'int32', name: 'tokens' });
  const bag = tf.layers.globalAveragePooling1d({ name: 'bag' }).apply(
    tf.layers.embedding({ name: 'table', inputDim: 20, outputDim: 4 }).apply(tokens));
  const spam = tf.layers.dense({ name: 'is_spam', units: 1, activation: 'sigmoid' }).apply(bag);
  const topic = tf.layers.dense({ name: 'topic', units: 3, activation: 'softmax' }).apply(bag);
  await importError(tf.model({ inputs: tokens, outputs: [spam, topic] }),
    /a model with 2 outputs \(Dense 'is_spam', Dense 'topic'\) is not supported \(one output\)/, SUPPORTED);
});

test('topologies the plan cannot express are Errors naming the layer and the rule', async () => {
  // A Dense applied to two inputs would be a shared dense layer.
  const a = tf.input({ shape: [3], name: 'a' });
  const b = tf.input({ shape: [3], name: 'b' });
  const shared = tf.layers.dense({ name: 'proj', units: 2 });
  const sum = tf.layers.add({ name: 'sum' }).apply([shared.apply(a), shared.apply(b)]);
  await importError(tf.model({ inputs: [a, b], outputs: tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid' }).apply(sum) }),
    /Dense 'proj' is applied 2 times \(only an Embedding may be shared\)/, SUPPORTED);

  // Flatten after an Embedding of several ids would flatten a sequence, not sum one id.
  const many = tf.input({ shape: [4], dtype: 'int32', name: 'many' });
  const flat = tf.layers.flatten({ name: 'flat' }).apply(tf.layers.embedding({ name: 'emb', inputDim: 9, outputDim: 2 }).apply(many));
  await importError(tf.model({ inputs: many, outputs: tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid' }).apply(flat) }),
    /Flatten 'flat': Flatten after Embedding 'emb' needs one id per example \(an input of length 1\), the input has length 4/);

  // One input read as ids and as numbers.
  const both = tf.input({ shape: [2], name: 'both' });
  const bagged = tf.layers.globalAveragePooling1d({ name: 'bag' }).apply(tf.layers.embedding({ name: 'emb', inputDim: 9, outputDim: 2 }).apply(both));
  const mixed = tf.layers.concatenate({ name: 'mixed' }).apply([bagged, both]);
  await importError(tf.model({ inputs: both, outputs: tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid' }).apply(mixed) }),
    /InputLayer 'both' feeds an Embedding and Concatenate 'mixed': an input is ids \(for Embeddings\) or dense numbers/);

  // A softmax inside the model.
  const x = tf.input({ shape: [3], name: 'x' });
  const hidden = tf.layers.dense({ name: 'hidden', units: 4, activation: 'softmax' }).apply(x);
  await importError(tf.model({ inputs: x, outputs: tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid' }).apply(hidden) }),
    /Dense 'hidden': activation softmax is not supported \(linear, relu, sigmoid, tanh; softmax on the output\)/);

  // An input the output does not use (a hand-written topology: TF.js keeps only what the outputs need).
  const { model } = models.sharedEmbedding();
  const artifacts = await saved(tf, model);
  const config = artifacts.modelTopology.config;
  const extra = { name: 'extra', class_name: 'InputLayer', config: { batch_input_shape: [null, 2], dtype: 'float32', name: 'extra' },
    inbound_nodes: [] };
  const unused = { ...artifacts, modelTopology: { ...artifacts.modelTopology, config: { ...config,
    layers: [extra, ...config.layers], input_layers: [...config.input_layers, ['extra', 0, 0]] } } };
  assert.throws(() => importTfjsLayersModel(executor, unused), /InputLayer 'extra' is not used by the output/);

  // Keras's sparse=True input (a tf.SparseTensor) read by an Embedding: only a Dense may read a
  // sparse input (tfjs_sparse_dense.test.mjs imports those); a ragged one is refused too.
  const flagged = (flag) => ({ ...artifacts, modelTopology: { ...artifacts.modelTopology, config: { ...config,
    layers: config.layers.map((l) => (l.name === 'left' ? { ...l, config: { ...l.config, [flag]: true } } : l)) } } });
  assert.throws(() => importTfjsLayersModel(executor, flagged('sparse')),
    /InputLayer 'left' is sparse and Embedding 'shared' reads it: only Dense layers may read a sparse input \(each becomes an embedding_bag summing its kernel rows; Embeddings read int ids \[batch, length\]\) \(supported: /);
  assert.throws(() => importTfjsLayersModel(executor, flagged('ragged')),
    /InputLayer 'left': ragged inputs are not supported \(give the ids as an int input \[batch, length\] read by an Embedding\) \(supported: /);
});

test('a mean_squared_error model with a sigmoid output keeps the sigmoid as a layer; a wide & deep plan takes inputFeatures', async () => {
  const x = tf.input({ shape: [3], name: 'x' });
  const y = tf.input({ shape: [2], name: 'y' });
  const joined = tf.layers.concatenate({ name: 'xy' }).apply([x, y]);
  const dense = tf.layers.dense({ name: 'score', units: 2, kernelInitializer: tf.initializers.glorotUniform({ seed: 1 }) }).apply(joined);
  const squashed = tf.layers.activation({ name: 'squash', activation: 'sigmoid' }).apply(dense);
  const model = tf.model({ inputs: [x, y], outputs: squashed });
  model.compile({ optimizer: 'sgd', loss: 'meanSquaredError' });
  const artifacts = await saved(tf, model);
  artifacts.trainingConfig.loss = 'mse';  // Keras's alias (TF.js compiles only its long name)
  const { plan, model: bytes } = importTfjsLayersModel(executor, artifacts, undefined, { onWarning: assert.fail });
  assert.deepEqual(plan.model.layers.slice(1), [{ type: 'dense', name: 'score', input: 'xy', units: 2 },
    { type: 'sigmoid', name: 'squash', input: 'score' }]);
  assert.equal(plan.model.output, 'squash');
  assert.equal(plan.model.loss, 'mean_squared_error');
  const examples = { x: { dense: [0.5, -1, 2, 1, 1, 1], width: 3 }, y: { dense: [3, -2, 0, 0.5], width: 2 } };
  const expected = tf.tidy(() => model.predict([tf.tensor2d(examples.x.dense, [2, 3]), tf.tensor2d(examples.y.dense, [2, 2])]).arraySync());
  assert.ok(maxDifference(referencePredictions(plan, bytes, examples), expected) < 1e-5);
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exportTfjsLayersModel(executor, plan, bytes)));
  assert.ok(maxDifference(tf.tidy(() => loaded.predict([tf.tensor2d(examples.x.dense, [2, 3]), tf.tensor2d(examples.y.dense, [2, 2])])
    .arraySync()), expected) < 1e-5);

  const { model: wideAndDeep } = models.wideAndDeep();
  const body = { text: 'body', num_buckets: 50 };
  const wideArtifacts = await saved(tf, wideAndDeep);
  const imported = importTfjsLayersModel(executor, wideArtifacts, undefined, { onWarning: assert.fail, inputFeatures: { body } });
  assert.deepEqual(imported.plan.model.inputs.body, { type: 'sparse_ids', features: body });
  assert.throws(() => importTfjsLayersModel(executor, wideArtifacts, undefined, { features: { ngrams: 1 } }),
    /options.features is the featurization of a one-input text model; give options.inputFeatures/);
  assert.throws(() => importTfjsLayersModel(executor, wideArtifacts, undefined, { inputFeatures: { subject: body } }),
    /options.inputFeatures.subject: the model has no input 'subject' \(body, sender, numeric, cross\)/);
  // The core validates the features with the plan: its ids must fit the table the input feeds.
  assert.throws(() => importTfjsLayersModel(executor, wideArtifacts, undefined, { inputFeatures: { body: { ...body, num_buckets: 64 } } }),
    /plan\.model\.inputs\.body\.features\.num_buckets: 64 buckets exceed the vocab 50 of table 'tokens\/weight'/);
});

test('a hand-written wide & deep graph plan exports, loads in TF.js, predicts as the plan, and imports back', async () => {
  const plan = {
    model: {
      inputs: { body: { type: 'sparse_ids' }, subject: { type: 'sparse_ids' }, sender: { type: 'sparse_ids' },
        cross: { type: 'sparse_ids' }, numeric: { type: 'dense', dim: 3 } },
      layers: [
        { type: 'embedding_bag', name: 'tokens', input: 'body', vocab: 20, dim: 4 },
        { type: 'embedding_bag', name: 'subject_emb', input: 'subject', table: 'tokens', combiner: 'mean' },
        { type: 'embedding_bag', name: 'sender_emb', input: 'sender', vocab: 10, dim: 2 },
        { type: 'concatenate', name: 'deep_in', inputs: ['tokens', 'subject_emb', 'sender_emb', 'numeric'] },
        { type: 'dense', name: 'h1', input: 'deep_in', units: 5, activation: 'relu' },
        { type: 'dropout', name: 'drop1', input: 'h1', rate: 0.2, seed: 7 },
        { type: 'tanh', name: 'squash', input: 'drop1' },
        { type: 'dense', name: 'deep_logit', input: 'squash', units: 1 },
        { type: 'embedding_bag', name: 'wide', input: 'cross', vocab: 30, dim: 1, combiner: 'sum', initializer: 'zeros' },
        { type: 'add', name: 'logit', inputs: ['deep_logit', 'wide'] },
      ],
      output: 'logit',
      loss: 'sigmoid_cross_entropy',
    },
    train: { optimizer: { type: 'adam', learning_rate: 0.01 } },
  };
  let seed = 1;
  const values = (n) => Float32Array.from({ length: n }, () => ((seed = (seed * 48271) % 2147483647) / 2147483647) * 2 - 1);
  const shapes = { 'tokens/weight': [20, 4], 'sender_emb/weight': [10, 2], 'h1/weight': [13, 5], 'h1/bias': [5],
    'deep_logit/weight': [5, 1], 'deep_logit/bias': [1], 'wide/weight': [30, 1] };
  const tensors = Object.fromEntries(Object.entries(shapes).map(([name, shape]) =>
    [name, { dtype: 'F32', shape, data: values(shape.reduce((a, b) => a * b, 1)) }]));
  const modelBytes = executor.encodeSafetensors(tensors);
  const ids = (vocab, length) => {
    const all = Array.from(values(8 * length), (v) => Math.floor((v + 1) / 2 * vocab));
    return { fedleaf: { ids: all, offsets: Array.from({ length: 9 }, (_, i) => i * length) },
      tfjs: { values: all, shape: [8, length], dtype: 'int32' } };
  };
  const numeric = Array.from(values(24));
  const columns = { body: ids(20, 4), subject: ids(20, 2), sender: ids(10, 1), cross: ids(30, 1),
    numeric: { fedleaf: { dense: numeric, width: 3 }, tfjs: { values: numeric, shape: [8, 3], dtype: 'float32' } } };
  const examples = { inputs: Object.fromEntries(Object.entries(columns).map(([n, c]) => [n, c.fedleaf])),
    tfjs: Object.fromEntries(Object.entries(columns).map(([n, c]) => [n, c.tfjs])) };

  const exported = exportTfjsLayersModel(executor, plan, modelBytes);
  assert.deepEqual(exported.modelTopology.config.input_layers, [['body', 0, 0], ['subject', 0, 0], ['sender', 0, 0],
    ['cross', 0, 0], ['numeric', 0, 0]]);
  const byName = Object.fromEntries(exported.modelTopology.config.layers.map((l) => [l.name, l]));
  assert.deepEqual(byName.tokens.inbound_nodes, [[['body', 0, 0, {}]], [['subject', 0, 0, {}]]]);
  assert.deepEqual(byName.subject_emb.inbound_nodes, [[['tokens', 1, 0, {}]]]);
  assert.deepEqual(byName.cross.config.batch_input_shape, [null, 1], 'a sum bag reads one id per example');
  const loaded = await tf.loadLayersModel(tf.io.fromMemory(exported));
  const expected = referenceForward(plan, executor.decodeSafetensors(modelBytes).tensors, examples.inputs).predictions;
  assert.ok(maxDifference(predictTfjs(tf, loaded, examples), expected) < 1e-5);

  const again = importTfjsLayersModel(executor, exported, undefined, { onWarning: assert.fail });
  const wide = { ...plan.model.layers[8] };
  delete wide.initializer;  // an initializer has no meaning once the weights are given
  assert.deepEqual(again.plan.model, { ...plan.model, layers: [
    { ...plan.model.layers[0], combiner: 'mean' }, plan.model.layers[1], { ...plan.model.layers[2], combiner: 'mean' },
    ...plan.model.layers.slice(3, 8), wide, plan.model.layers[9]] });
});
