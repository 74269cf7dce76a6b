// A fedleaf plan + safetensors model → a TF.js Layers model: tf.io ModelArtifacts, which
// tf.io.fromMemory takes as they are, plus the model.json and its one weight shard for disk (what
// tf.loadLayersModel reads from a URL, and tensorflowjs_converter turns into a Keras model).
//
//   const exported = exportTfjsLayersModel(executor, plan, modelBytes);
//   const tfModel = await tf.loadLayersModel(tf.io.fromMemory(exported));
//   await writeFile('model.json', JSON.stringify(exported.modelJson));
//   await writeFile('weights.bin', new Uint8Array(exported.weightData));
//
// The mapping is the inverse of tfjs_layers_import.js. A chain plan (one input, each layer
// reading the one before) becomes a Sequential model, any other graph a functional one (class
// Model: an InputLayer per input — int32 [batch, length] ids, float32 [batch, dim] dense — and
// each layer's inbound nodes):
//   embedding_bag combiner mean  → Embedding + GlobalAveragePooling1D (fedleaf id = token id, no
//                                  mask: feed one example's ids as an unpadded sequence)
//   embedding_bag combiner sum   → Embedding + Flatten, the input [batch, 1]: one id per example
//                                  (TF.js refuses longer inputs; the sum of one row is that row)
//   embedding_bag with "table"   → the owner's Embedding applied to this input too (one weight)
//   embedding_bag on a sparse input (combiner sum, its own table)
//                                → Dense(units: dim, use_bias) on an InputLayer {sparse: true,
//                                  [batch, vocab], float32}, kernel = the table: x W + b. An
//                                  input is sparse when a bag reading it has use_bias, or when
//                                  options.sparseInputs names it (importTfjsLayersModel's
//                                  sparseInputs); every layer reading it must then be such a bag.
//                                  A plan with one exports as a functional model, whose
//                                  InputLayer keeps sparse: true (TF.js itself keeps the flag and
//                                  computes on dense [batch, vocab] tensors; Keras feeds it
//                                  SparseTensors)
//   dense → Dense; relu/sigmoid/tanh → Activation; dropout → Dropout (rate, seed);
//   concatenate → Concatenate; add → Add; multiply → Multiply
// The table owner's pooling is named "<layer>_mean" / "<layer>_flatten", a sharer's pooling
// "<layer>", so importing the export gives the plan back. The loss's sigmoid or softmax becomes the
// output Dense's activation (or a final Activation layer), and the training config holds the
// matching loss (binary_crossentropy, sparse_categorical_crossentropy, mean_squared_error) and the
// plan's optimizer. A sqrtn combiner, which TF.js cannot express, is an Error naming the layer.
//
// A plan importTfjsLayersModel made carries a "tfjs" section (tfjs_plan_origin.js) with what its
// model does not say of the Keras one, and the export gives that model back: a functional model
// stays functional, inputs keep their Keras names and dtypes, poolings and the output's
// Activation their names, the loss its name (categorical_crossentropy stays categorical), and an
// Embedding(V + 1, mask_zero) comes back as one, its row 0 in front of the plan's V rows — so it
// takes the original tokens (fedleaf id + tokenOffset). The README lists what still differs.

import { readTfjsOrigin } from './tfjs_plan_origin.js';

function fail(message) {
  throw new Error(`TF.js model export: ${message}`);
}

function denseTensor(tensors, name) {
  const t = tensors[name];
  if (!t) fail(`the model has no tensor '${name}'`);
  if (t.encoding || !(t.data instanceof Float32Array)) fail(`tensor '${name}' must be a dense F32 tensor`);
  return t;
}

function optimizerConfig(optimizer) {
  switch (optimizer?.type) {
    case 'adam':
      return { class_name: 'Adam', config: { learningRate: optimizer.learning_rate, beta1: optimizer.beta1 ?? 0.9,
        beta2: optimizer.beta2 ?? 0.999, epsilon: optimizer.epsilon ?? 1e-7 } };
    case 'momentum':
      return { class_name: 'Momentum', config: { learningRate: optimizer.learning_rate,
        momentum: optimizer.momentum ?? 0.9, useNesterov: false } };
    case 'sgd':
      return { class_name: 'SGD', config: { learningRate: optimizer.learning_rate } };
    default:
      return null;
  }
}

const LOSSES = {
  sigmoid_cross_entropy: { activation: 'sigmoid', keras: 'binary_crossentropy' },
  softmax_cross_entropy: { activation: 'softmax', keras: 'sparse_categorical_crossentropy' },
  mean_squared_error: { activation: null, keras: 'mean_squared_error' },
};

// What each layer reads: "inputs", "input", or by default the previous layer (the only input first).
function readsOf(spec, inputNames) {
  return spec.layers.map((layer, i) => {
    if (layer.inputs) return layer.inputs;
    if (layer.input) return [layer.input];
    if (i > 0) return [spec.layers[i - 1].name ?? `${spec.layers[i - 1].type}_${i - 1}`];
    if (inputNames.length !== 1) fail(`layer '${layer.name}' names no input and the plan has ${inputNames.length}`);
    return [inputNames[0]];
  });
}

// The Keras layers of a model under construction, with their inbound nodes.
class KerasLayers {
  constructor(used) {
    this.layers = [];
    this.byName = new Map();
    this.weights = [];  // {name, shape, data}
    this.used = used;   // names taken (the plan's, then the ones made here)
  }

  unique(base) {
    let name = base;
    for (let k = 2; this.used.has(name); k++) name = `${base}_${k}`;
    this.used.add(name);
    return name;
  }

  add(className, name, config, defaults = { trainable: true, dtype: 'float32' }) {
    const layer = { name, class_name: className, config: { name, ...defaults, ...config }, inbound_nodes: [] };
    this.layers.push(layer);
    this.byName.set(name, layer);
    return layer;
  }

  // Applies `layer` to the tensors `from` ([{layer, node}]): the reference of its output.
  apply(layer, from) {
    layer.inbound_nodes.push(from.map((ref) => [ref.layer, ref.node, 0, {}]));
    return { layer: layer.name, node: layer.inbound_nodes.length - 1 };
  }
}

// maskZero: Embedding(vocab + 1, mask_zero), token 0 the padding (tfjs_plan_origin.js).
function embeddingConfig(layer, maskZero) {
  return { input_dim: layer.vocab + (maskZero ? 1 : 0), output_dim: layer.dim, mask_zero: maskZero,
    embeddings_initializer: { class_name: 'RandomUniform', config: { minval: -0.05, maxval: 0.05, seed: null } },
    embeddings_regularizer: null, activity_regularizer: null, embeddings_constraint: null,
    input_length: layer.combiner === 'sum' ? 1 : null };
}

function denseConfig(layer, useBias) {
  return { units: layer.units, activation: layer.activation ?? 'linear', use_bias: useBias,
    kernel_initializer: { class_name: 'GlorotUniform', config: { seed: null } },
    bias_initializer: { class_name: 'Zeros', config: {} }, kernel_regularizer: null, bias_regularizer: null,
    activity_regularizer: null, kernel_constraint: null, bias_constraint: null };
}

// The inputs to export as Keras sparse inputs: name → their column count (the vocab of the bags
// reading them). Each is a sparse_ids input read only by embedding_bags of combiner sum, each
// with its own table that no other lookup shares, all of one vocab.
function sparseInputsOf(spec, inputs, reads, layerName, named) {
  const wanted = new Set(named);
  spec.layers.forEach((layer, i) => {
    if (layer.type === 'embedding_bag' && layer.use_bias === true) wanted.add(reads[i][0]);
  });
  const columns = new Map();
  for (const name of wanted) {
    const input = inputs.find((x) => x.name === name);
    if (!input) fail(`options.sparseInputs: the plan has no input '${name}'`);
    if (input.type !== 'sparse_ids') fail(`input '${name}' is ${input.type}: only a sparse_ids input exports as a sparse InputLayer`);
    spec.layers.forEach((layer, i) => {
      if (!reads[i].includes(name)) return;
      const label = `${layer.type} '${layerName(layer, i)}'`;
      if (layer.type !== 'embedding_bag' || layer.table || (layer.combiner ?? 'mean') !== 'sum') {
        fail(`${label} reads '${name}', which exports as a sparse input (read by Dense layers): only an embedding_bag ` +
          'of combiner sum with its own table may read it');
      }
      const sharer = spec.layers.find((other) => other.table === layer.name);
      if (sharer) fail(`${label} on the sparse input '${name}' shares its table with '${sharer.name}' (a Dense has its own kernel)`);
      if (columns.has(name) && columns.get(name) !== layer.vocab) {
        fail(`${label} has vocab ${layer.vocab}, another bag on the sparse input '${name}' ${columns.get(name)} (one column count)`);
      }
      columns.set(name, layer.vocab);
    });
  }
  return columns;
}

// The plan's model as Keras layers applied to one another: {keras, refs (plan name → output), output}.
function kerasLayersOf(spec, tensors, origin, sparseNames = []) {
  const inputs = Object.entries(spec.inputs ?? {}).map(([name, value]) => ({ name,
    type: typeof value === 'string' ? value : value.type, dim: value.dim }));
  const inputNames = inputs.map((i) => i.name);
  const reads = readsOf(spec, inputNames);
  const layerName = (layer, i) => layer.name ?? `${layer.type}_${i}`;
  const sparse = sparseInputsOf(spec, inputs, reads, layerName, sparseNames);
  const keras = new KerasLayers(new Set([...inputNames, ...spec.layers.map(layerName)]));
  const refs = new Map();
  const byName = new Map(spec.layers.map((layer, i) => [layerName(layer, i), layer]));
  for (const input of inputs) {
    // An ids input that a sum-combiner bag reads carries one id per example (Flatten needs it).
    const oneId = spec.layers.some((l, i) => l.type === 'embedding_bag' && reads[i][0] === input.name &&
      (l.combiner ?? byName.get(l.table)?.combiner) === 'sum');
    const ids = input.type === 'sparse_ids' && !sparse.has(input.name);
    const shape = sparse.has(input.name) ? [null, sparse.get(input.name)] : ids ? [null, oneId ? 1 : null] : [null, input.dim];
    const kept = origin.inputs[input.name] ?? {};
    const kerasName = kept.name && kept.name !== input.name ? keras.unique(kept.name) : input.name;
    const layer = keras.add('InputLayer', kerasName, { batch_input_shape: shape,
      dtype: kept.dtype ?? (ids ? 'int32' : 'float32'), sparse: sparse.has(input.name) }, {});
    refs.set(input.name, { layer: layer.name, node: 0 });
  }
  const embeddings = new Map();  // plan layer owning a table → its Embedding
  spec.layers.forEach((layer, i) => {
    const name = layerName(layer, i);
    const from = reads[i].map((r) => {
      if (!refs.has(r)) fail(`layer '${name}' reads '${r}', which no input or earlier layer gives`);
      return refs.get(r);
    });
    let out;
    const denseOnSparse = layer.type === 'embedding_bag' && sparse.has(reads[i][0]);
    switch (denseOnSparse ? 'dense_on_sparse' : layer.type) {
      case 'dense_on_sparse': {
        // x W + b over the sparse row: a Dense whose kernel is the table.
        const useBias = layer.use_bias === true;
        const table = denseTensor(tensors, `${name}/weight`);
        out = keras.apply(keras.add('Dense', name, denseConfig({ units: layer.dim }, useBias)), from);
        keras.weights.push({ name: `${name}/kernel`, shape: table.shape, data: table.data });
        if (useBias) {
          const bias = denseTensor(tensors, `${name}/bias`);
          keras.weights.push({ name: `${name}/bias`, shape: bias.shape, data: bias.data });
        }
        break;
      }
      case 'embedding_bag': {
        const combiner = layer.combiner ?? 'mean';
        if (combiner !== 'mean' && combiner !== 'sum') {
          fail(`embedding_bag '${name}': combiner ${combiner} has no TF.js equivalent (mean, or sum of one id)`);
        }
        let embedding = embeddings.get(layer.table ?? name);
        if (!embedding) {
          if (layer.table) fail(`embedding_bag '${name}': table '${layer.table}' is no earlier embedding_bag's`);
          const table = denseTensor(tensors, `${name}/weight`);
          const row0 = origin.maskZero[name];
          embedding = keras.add('Embedding', name, embeddingConfig({ ...layer, combiner }, row0 !== undefined));
          const rows = row0 ? Float32Array.from([...row0, ...table.data]) : table.data;
          keras.weights.push({ name: `${name}/embeddings`, shape: [rows.length / layer.dim, layer.dim], data: rows });
          embeddings.set(name, embedding);
        }
        const pooled = combiner === 'mean' ? ['GlobalAveragePooling1D', 'mean'] : ['Flatten', 'flatten'];
        const poolName = layer.table ? name : keras.unique(origin.poolings[name] ?? `${name}_${pooled[1]}`);
        const pooling = keras.add(pooled[0], poolName, { data_format: 'channels_last' });
        out = keras.apply(pooling, [keras.apply(embedding, from)]);
        break;
      }
      case 'dense': {
        const useBias = layer.use_bias !== false;
        const kernel = denseTensor(tensors, `${name}/weight`);
        out = keras.apply(keras.add('Dense', name, denseConfig(layer, useBias)), from);
        keras.weights.push({ name: `${name}/kernel`, shape: kernel.shape, data: kernel.data });
        if (useBias) {
          const bias = denseTensor(tensors, `${name}/bias`);
          keras.weights.push({ name: `${name}/bias`, shape: bias.shape, data: bias.data });
        }
        break;
      }
      case 'relu':
      case 'sigmoid':
      case 'tanh':
        out = keras.apply(keras.add('Activation', name, { activation: layer.type }), from);
        break;
      case 'dropout':
        out = keras.apply(keras.add('Dropout', name, { rate: layer.rate, noise_shape: null, seed: layer.seed ?? null }), from);
        break;
      case 'concatenate':
        out = keras.apply(keras.add('Concatenate', name, { axis: -1 }), from);
        break;
      case 'add':
        out = keras.apply(keras.add('Add', name, {}), from);
        break;
      case 'multiply':
        out = keras.apply(keras.add('Multiply', name, {}), from);
        break;
      default:
        fail(`layer type ${layer.type} '${name}' is not supported`);
    }
    refs.set(name, out);
  });
  const outputName = spec.output ?? layerName(spec.layers.at(-1), spec.layers.length - 1);
  if (!refs.has(outputName) || !byName.has(outputName)) fail(`output '${outputName}' is no layer of the plan`);
  return { keras, output: refs.get(outputName), outputName, inputLayers: inputNames.map((n) => refs.get(n).layer), sparse };
}

function isChainPlan(spec) {
  const names = Object.keys(spec.inputs ?? {});
  if (names.length !== 1 || (spec.output && spec.output !== spec.layers.at(-1).name)) return false;
  return spec.layers.every((layer, i) => !layer.inputs && !layer.table &&
    (!layer.input || layer.input === (i === 0 ? names[0] : spec.layers[i - 1].name)));
}

/**
 * @param {{decodeSafetensors: Function, version: string}} executor  from createExecutor()
 * @param {object|string} plan  a fedleaf plan (its model section is exported)
 * @param {Uint8Array|ArrayBuffer} modelBytes  safetensors with every parameter the plan declares
 * @param {{weightsPath?: string, name?: string, sparseInputs?: string[]}} [options]  the shard's
 *   file name in modelJson ('weights.bin'), the model's name (default the imported model's, else
 *   'fedleaf'), and the sparse_ids inputs
 *   to write as Keras sparse inputs read by Dense layers (besides those an embedding_bag with
 *   use_bias reads)
 * @returns {{format: string, generatedBy: string, convertedBy: null, modelTopology: object,
 *   trainingConfig?: object, weightSpecs: object[], weightData: ArrayBuffer, modelJson: object}}
 *   ModelArtifacts, and modelJson: the same with weightsManifest (paths: [weightsPath]) in place
 *   of weightSpecs and weightData
 */
export function exportTfjsLayersModel(executor, plan, modelBytes, options = {}) {
  const { weightsPath = 'weights.bin', sparseInputs = [] } = options;
  if (!Array.isArray(sparseInputs)) fail('options.sparseInputs: expected an array of input names');
  const parsed = typeof plan === 'string' ? JSON.parse(plan) : plan;
  const spec = parsed?.model;
  if (!spec?.layers?.length) fail('the plan has no model layers');
  const loss = LOSSES[spec.loss];
  if (!loss) fail(`loss ${spec.loss} has no TF.js equivalent (${Object.keys(LOSSES).join(', ')})`);
  const { tensors } = executor.decodeSafetensors(modelBytes);
  const origin = readTfjsOrigin(parsed, new Map(spec.layers.map((l) => [l.name, l])));
  const modelName = options.name ?? origin.name ?? 'fedleaf';
  const { keras, output, outputName, inputLayers, sparse } = kerasLayersOf(spec, tensors, origin, sparseInputs);
  // A Sequential model has no InputLayer of its own to carry sparse: true.
  const chain = isChainPlan(spec) && sparse.size === 0 && !origin.functional;

  let finalOutput = output;
  if (loss.activation) {
    const last = keras.byName.get(output.layer);
    if (last.class_name === 'Dense' && last.config.activation === 'linear' && !origin.output_activation) {
      last.config.activation = loss.activation;
    } else {
      const activationName = origin.output_activation ?? `${chain ? modelName : outputName}_${loss.activation}`;
      const activation = keras.add('Activation', keras.unique(activationName), { activation: loss.activation });
      finalOutput = keras.apply(activation, [output]);
    }
  }
  let modelTopology;
  if (chain) {
    // Sequential: the layers without their inbound nodes, the input's shape on the first one.
    const [input, ...layers] = keras.layers.map(({ name: _, inbound_nodes: __, ...layer }) => layer);
    layers[0].config.batch_input_shape = input.config.batch_input_shape;
    modelTopology = { class_name: 'Sequential', config: { name: modelName, layers }, keras_version: 'tfjs-layers',
      backend: 'tensor_flow.js' };
  } else {
    modelTopology = { class_name: 'Model', config: { name: modelName, layers: keras.layers,
      input_layers: inputLayers.map((n) => [n, 0, 0]), output_layers: [[finalOutput.layer, finalOutput.node, 0]] },
    keras_version: 'tfjs-layers', backend: 'tensor_flow.js' };
  }

  const byteLength = keras.weights.reduce((n, w) => n + w.data.length * 4, 0);
  const weightData = new ArrayBuffer(byteLength);
  let at = 0;
  for (const w of keras.weights) {
    new Float32Array(weightData, at, w.data.length).set(w.data);
    at += w.data.length * 4;
  }
  // TF.js compiles a loaded model from its training config, which needs an optimizer: a plan
  // without a train section (evaluation only) exports none.
  const optimizer = optimizerConfig(parsed.train?.optimizer);
  const artifacts = {
    format: 'layers-model',
    generatedBy: `fedleaf ${executor.version}`,
    convertedBy: null,
    modelTopology,
    ...(optimizer ? { trainingConfig: { loss: origin.loss ?? loss.keras, metrics: null, sample_weight_mode: null, loss_weights: null,
      optimizer_config: optimizer } } : {}),
    weightSpecs: keras.weights.map((w) => ({ name: w.name, shape: w.shape, dtype: 'float32' })),
  };
  const { weightSpecs, ...described } = artifacts;
  const modelJson = { ...described, weightsManifest: [{ paths: [weightsPath], weights: weightSpecs }] };
  return { ...artifacts, weightData, modelJson };
}
