// The functional TF.js models of the interop tests (issue 29), each with a few examples in both
// forms: fedleaf's inputs ({ids, offsets} | {dense, width} by input name: what
// executor.datasetFromInputs and graph_plan_reference.mjs take) and TF.js's tensors.
//
//   const { model, examples } = functionalModels(tf).wideAndDeep();
//   const probabilities = predictTfjs(tf, model, examples);   // [example][unit]

import { seededRandom } from '../../js_bindings/src/node/seeded_random.js';

const EXAMPLES = 12;

// An ids input of `length` ids per example (ids below `vocab`, repeats allowed).
function idsInput(random, vocab, length) {
  const ids = Array.from({ length: EXAMPLES * length }, () => Math.floor(random() * vocab));
  const offsets = Array.from({ length: EXAMPLES + 1 }, (_, i) => i * length);
  return { fedleaf: { ids, offsets }, tfjs: { values: ids, shape: [EXAMPLES, length], dtype: 'int32' } };
}

function denseInput(random, width) {
  const dense = Array.from({ length: EXAMPLES * width }, () => random() * 4 - 2);
  return { fedleaf: { dense, width }, tfjs: { values: dense, shape: [EXAMPLES, width], dtype: 'float32' } };
}

function examplesOf(columns, labels) {
  return {
    inputs: Object.fromEntries(Object.entries(columns).map(([name, c]) => [name, c.fedleaf])),
    tfjs: Object.fromEntries(Object.entries(columns).map(([name, c]) => [name, c.tfjs])),
    labels,
  };
}

/** The models of the tests (and a Multiply, issue 38), built with the given @tensorflow/tfjs module. */
export function functionalModels(tf) {
  const uniform = (seed, scale = 0.5) => tf.initializers.randomUniform({ minval: -scale, maxval: scale, seed });
  const glorot = (seed) => tf.initializers.glorotUniform({ seed });
  const bias = (value) => tf.initializers.constant({ value });
  return {
    // Wide & deep: body and sender ids through Embedding + GlobalAveragePooling1D, numeric
    // features, Concatenate → Dense 16 relu → Dropout → Dense 1; a wide Embedding(dim 1) + Flatten
    // of one crossed id; Add; sigmoid.
    wideAndDeep() {
      const body = tf.input({ shape: [null], dtype: 'int32', name: 'body' });
      const sender = tf.input({ shape: [null], dtype: 'int32', name: 'sender' });
      const numeric = tf.input({ shape: [4], name: 'numeric' });
      const cross = tf.input({ shape: [1], dtype: 'int32', name: 'cross' });
      const tokens = tf.layers.embedding({ name: 'tokens', inputDim: 50, outputDim: 6, embeddingsInitializer: uniform(1) });
      const senderEmb = tf.layers.embedding({ name: 'sender_emb', inputDim: 20, outputDim: 3, embeddingsInitializer: uniform(2) });
      const wideEmb = tf.layers.embedding({ name: 'wide', inputDim: 40, outputDim: 1, embeddingsInitializer: uniform(3) });
      const deepIn = tf.layers.concatenate({ name: 'deep_in' }).apply([
        tf.layers.globalAveragePooling1d({ name: 'body_mean' }).apply(tokens.apply(body)),
        tf.layers.globalAveragePooling1d({ name: 'sender_mean' }).apply(senderEmb.apply(sender)),
        numeric]);
      const h1 = tf.layers.dense({ name: 'h1', units: 16, activation: 'relu', kernelInitializer: glorot(4),
        biasInitializer: bias(0.05) }).apply(deepIn);
      const drop = tf.layers.dropout({ name: 'drop1', rate: 0.2, seed: 7 }).apply(h1);
      const deepLogit = tf.layers.dense({ name: 'deep_logit', units: 1, kernelInitializer: glorot(5),
        biasInitializer: bias(-0.1) }).apply(drop);
      const wide = tf.layers.flatten({ name: 'wide_flat' }).apply(wideEmb.apply(cross));
      const logit = tf.layers.add({ name: 'logit' }).apply([deepLogit, wide]);
      const prob = tf.layers.activation({ name: 'prob', activation: 'sigmoid' }).apply(logit);
      const model = tf.model({ name: 'wide_and_deep', inputs: [body, sender, numeric, cross], outputs: prob });
      model.compile({ optimizer: tf.train.adam(0.01), loss: 'binaryCrossentropy' });
      const random = seededRandom(11);
      const examples = examplesOf({ body: idsInput(random, 50, 5), sender: idsInput(random, 20, 2),
        numeric: denseInput(random, 4), cross: idsInput(random, 40, 1) },
      Array.from({ length: EXAMPLES }, (_, i) => i % 2));
      return { model, examples };
    },

    // Two ids inputs read through one Embedding (one table), concatenated, softmax over 3 classes.
    sharedEmbedding() {
      const left = tf.input({ shape: [null], dtype: 'int32', name: 'left' });
      const right = tf.input({ shape: [null], dtype: 'int32', name: 'right' });
      const shared = tf.layers.embedding({ name: 'shared', inputDim: 30, outputDim: 4, embeddingsInitializer: uniform(8) });
      const both = tf.layers.concatenate({ name: 'both' }).apply([
        tf.layers.globalAveragePooling1d({ name: 'left_mean' }).apply(shared.apply(left)),
        tf.layers.globalAveragePooling1d({ name: 'right_mean' }).apply(shared.apply(right))]);
      const out = tf.layers.dense({ name: 'out', units: 3, activation: 'softmax', kernelInitializer: glorot(9),
        biasInitializer: bias(0.2) }).apply(both);
      const model = tf.model({ name: 'shared', inputs: [left, right], outputs: out });
      model.compile({ optimizer: tf.train.adam(0.02), loss: 'sparseCategoricalCrossentropy' });
      const random = seededRandom(12);
      const examples = examplesOf({ left: idsInput(random, 30, 3), right: idsInput(random, 30, 4) },
        Array.from({ length: EXAMPLES }, (_, i) => i % 3));
      return { model, examples };
    },

    // A gate: numeric features through Dense 6 sigmoid and Dense 6 tanh, and ids through
    // Embedding(dim 6) + GlobalAveragePooling1D, multiplied elementwise (Multiply of three) →
    // Dense 1 → sigmoid.
    gated() {
      const numeric = tf.input({ shape: [3], name: 'numeric' });
      const ids = tf.input({ shape: [null], dtype: 'int32', name: 'ids' });
      const gate = tf.layers.dense({ name: 'gate', units: 6, activation: 'sigmoid', kernelInitializer: glorot(14),
        biasInitializer: bias(0.1) }).apply(numeric);
      const value = tf.layers.dense({ name: 'value', units: 6, activation: 'tanh', kernelInitializer: glorot(15),
        biasInitializer: bias(-0.1) }).apply(numeric);
      const pooled = tf.layers.globalAveragePooling1d({ name: 'ids_mean' }).apply(
        tf.layers.embedding({ name: 'ids_emb', inputDim: 25, outputDim: 6, embeddingsInitializer: uniform(16, 1) }).apply(ids));
      const product = tf.layers.multiply({ name: 'product' }).apply([gate, value, pooled]);
      const out = tf.layers.dense({ name: 'out', units: 1, activation: 'sigmoid', kernelInitializer: glorot(17),
        biasInitializer: bias(0.3) }).apply(product);
      const model = tf.model({ name: 'gated', inputs: [numeric, ids], outputs: out });
      model.compile({ optimizer: tf.train.sgd(0.1), loss: 'binaryCrossentropy' });
      const random = seededRandom(14);
      const examples = examplesOf({ numeric: denseInput(random, 3), ids: idsInput(random, 25, 3) },
        Array.from({ length: EXAMPLES }, (_, i) => (i + 1) % 2));
      return { model, examples };
    },

    // One id per example → Embedding + Flatten → Dense 8 tanh → Dense 1, mean squared error.
    regression({ sequential = false } = {}) {
      const layers = [
        tf.layers.embedding({ name: 'item_emb', inputDim: 30, outputDim: 5, embeddingsInitializer: uniform(10),
          ...(sequential ? { inputLength: 1 } : {}) }),
        tf.layers.flatten({ name: 'flat' }),
        tf.layers.dense({ name: 'hidden', units: 8, activation: 'tanh', kernelInitializer: glorot(11), biasInitializer: bias(0.1) }),
        tf.layers.dense({ name: 'rating', units: 1, kernelInitializer: glorot(12), biasInitializer: bias(3) }),
      ];
      let model;
      if (sequential) {
        model = tf.sequential({ name: 'ratings', layers });
      } else {
        const item = tf.input({ shape: [1], dtype: 'int32', name: 'item' });
        model = tf.model({ name: 'ratings', inputs: item, outputs: layers.reduce((x, layer) => layer.apply(x), item) });
      }
      model.compile({ optimizer: tf.train.sgd(0.05), loss: 'meanSquaredError' });
      const random = seededRandom(13);
      const examples = examplesOf({ item: idsInput(random, 30, 1) }, Array.from({ length: EXAMPLES }, () => 1 + 4 * random()));
      return { model, examples };
    },
  };
}

/**
 * Float32 ids (tf.input's default dtype) through Embedding(V + 1, mask_zero) +
 * GlobalAveragePooling1D → Dense 3 → a softmax Activation, categorical_crossentropy: token 0 is
 * padding, so fedleaf's ids are the tokens − 1 (the examples hold no padding).
 */
export function maskZeroModel(tf) {
  const words = tf.input({ shape: [null], name: 'words' });
  const table = tf.layers.embedding({ name: 'word_emb', inputDim: 26, outputDim: 4, maskZero: true,
    embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed: 14 }) });
  const pooled = tf.layers.globalAveragePooling1d({ name: 'words_mean' }).apply(table.apply(words));
  const logits = tf.layers.dense({ name: 'logits', units: 3, kernelInitializer: tf.initializers.glorotUniform({ seed: 15 }),
    biasInitializer: tf.initializers.constant({ value: 0.1 }) }).apply(pooled);
  const probs = tf.layers.activation({ name: 'probs', activation: 'softmax' }).apply(logits);
  const model = tf.model({ name: 'topics', inputs: words, outputs: probs });
  model.compile({ optimizer: tf.train.adam(0.05), loss: 'categoricalCrossentropy' });
  const random = seededRandom(16);
  const tokens = idsInput(random, 25, 4).fedleaf;
  const examples = {
    inputs: { words: { ids: tokens.ids, offsets: tokens.offsets } },
    tfjs: { words: { values: tokens.ids.map((id) => id + 1), shape: [EXAMPLES, 4], dtype: 'float32' } },
    labels: Array.from({ length: EXAMPLES }, (_, i) => i % 3),
  };
  return { model, examples };
}

/** model.predict on the examples' TF.js tensors, by input name: [example][unit]. */
export function predictTfjs(tf, model, examples) {
  const names = model.inputNames;
  const columns = Object.values(examples.tfjs);
  const tensors = names.map((name) => examples.tfjs[name] ?? (names.length === 1 && columns.length === 1 ? columns[0] : null))
    .map((c, i) => {
      if (!c) throw new Error(`predictTfjs: no examples for input '${names[i]}'`);
      return c;
    });
  return tf.tidy(() => {
    const out = model.predict(tensors.map((c) => tf.tensor(c.values, c.shape, c.dtype)));
    return out.arraySync();
  });
}

/** What model.save() writes (ModelArtifacts), with the optimizer: the training config too. */
export async function saved(tf, model, { includeOptimizer = true } = {}) {
  let artifacts;
  await model.save(tf.io.withSaveHandler(async (a) => {
    artifacts = a;
    return { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } };
  }), { includeOptimizer });
  return artifacts;
}

/**
 * A TF.js functional topology in the shape Keras 3 writes it: class Functional, inbound nodes as
 * {args: [keras tensors], kwargs}, a merge layer's tensors as one list in args, InputLayer's
 * batch_shape, a single output without its outer list, dtype policies.
 */
export function toKeras3(topology) {
  const tensor = ([name, node, index]) => ({ class_name: '__keras_tensor__',
    config: { shape: null, dtype: 'float32', keras_history: [name, node, index] } });
  const layers = topology.config.layers.map((layer) => {
    const { batch_input_shape: batchShape, ...config } = layer.config;
    const merge = layer.class_name === 'Concatenate' || layer.class_name === 'Add';
    return {
      module: 'keras.layers', class_name: layer.class_name, registered_name: null, name: layer.name,
      config: layer.class_name === 'InputLayer' ? { ...config, batch_shape: batchShape }
        : { ...config, dtype: { module: 'keras', class_name: 'DTypePolicy', config: { name: 'float32' }, registered_name: null } },
      inbound_nodes: layer.inbound_nodes.map((refs) => ({
        args: merge ? [refs.map(tensor)] : refs.map(tensor),
        // Keras 3 passes flags, and the mask of an Embedding's output, as kwargs.
        kwargs: layer.class_name === 'Dropout' ? { training: false }
          : layer.class_name === 'GlobalAveragePooling1D' ? { mask: tensor(refs[0]) } : {} })),
    };
  });
  const { output_layers: outputs } = topology.config;
  return { class_name: 'Functional', config: { ...topology.config, layers, output_layers: outputs.length === 1 ? outputs[0] : outputs },
    keras_version: '3.6.0', backend: 'tensorflow' };
}
