// A TF.js Layers model (what tensorflowjs_converter writes from a Keras model, and what
// model.save() in @tensorflow/tfjs writes) → a fedleaf plan and safetensors model.
//
//   const modelJson = JSON.parse(await readFile('model.json', 'utf8'));
//   const shards = await Promise.all(modelJson.weightsManifest.flatMap((g) => g.paths)
//     .map((p) => readFile(p)));                                 // in manifest order
//   const { plan, model, tokenOffset } = importTfjsLayersModel(executor, modelJson, shards,
//     { features: { hash: 'murmur3_32', ngrams: 1, binary: true } });
//
// Layers, in a chain (Sequential, or a functional model whose layers each take the previous one):
//   InputLayer                                 → nothing (first layer only)
//   Embedding(input_dim, output_dim) followed by GlobalAveragePooling1D
//                                              → embedding_bag {combiner: 'mean'} (first layer)
//   Dense(units, activation, use_bias)         → dense (relu, sigmoid, tanh, linear hidden)
//   Activation(relu | sigmoid | tanh)          → relu | sigmoid | tanh layer
//   Dropout, SpatialDropout1D                  → nothing, with a warning: the identity at
//                                                inference, so predictions are unchanged, but
//                                                fedleaf trains without dropout (until it has
//                                                dropout layers: issue 29)
// The last layer's sigmoid (units 1) or softmax becomes the loss (sigmoid_cross_entropy or
// softmax_cross_entropy, which apply it to the logits); the training config's loss must agree
// (binary_crossentropy; sparse_/categorical_crossentropy; a linear last layer needs from_logits).
// Without a training config the last activation decides. Anything else — another layer class, a
// regularizer or constraint, a quantized weight other than float16, a non-chain topology — is an
// Error naming the layer's class and name (or the field); an unsupported layer or topology also
// lists what is supported.
//
// Semantics of the embedding: fedleaf's mean over an example's ids equals GlobalAveragePooling1D
// over those ids as one unpadded sequence (TF.js's GlobalAveragePooling1D ignores masks, so
// padded batches average the padding too). With mask_zero, token 0 is padding: fedleaf id i is
// Keras token i + 1 (tokenOffset 1) and row 0 of the table is dropped — what Keras (Python),
// whose pooling honours the mask, computes for padded batches.
//
// The plan's train section is options.train, else the training config's optimizer (Adam, SGD
// with or without momentum; TF.js's model.save writes the training config only with
// includeOptimizer: true, and its optimizer state is skipped), else Keras's default Adam
// (learning rate 0.001), with a warning. Updates: the
// embedding table row_sparse / mean_over_contributors, every other parameter dense /
// weighted_mean (options.updates replaces them). options.features becomes the plan's features
// section with num_buckets = the vocabulary.
//
// Warnings (what the import changed or assumed, the model still imports) go to
// options.onWarning(message), console.warn by default.

const SUPPORTED = 'a chain of InputLayer, Embedding + GlobalAveragePooling1D (first), Dense, Activation, ' +
  'Dropout, SpatialDropout1D';
const DROPOUT = new Set(['Dropout', 'SpatialDropout1D']);
const HIDDEN_ACTIVATIONS = new Set(['relu', 'sigmoid', 'tanh']);

function fail(message) {
  throw new Error(`TF.js model import: ${message}`);
}

// An Error for a layer or topology fedleaf cannot map, listing what it can.
function unsupported(message) {
  return fail(`${message} (supported: ${SUPPORTED})`);
}

function layerLabel(layer) {
  return `${layer.class_name} '${layer.config?.name ?? '?'}'`;
}

// Normalized names: 'binary_crossentropy', 'binaryCrossentropy', 'BinaryCrossentropy' → 'binarycrossentropy'.
function canonical(name) {
  return String(name).replace(/_/g, '').toLowerCase();
}

function topologyOf(modelJson) {
  if (!modelJson || typeof modelJson !== 'object' || !modelJson.modelTopology) {
    fail('expected a model.json object (or tf.io ModelArtifacts) with a modelTopology');
  }
  const topology = modelJson.modelTopology;
  const model = topology.model_config ?? topology;
  const trainingConfig = modelJson.trainingConfig ?? topology.training_config ?? null;
  return { model, trainingConfig };
}

// The model's layers in order, checked to form a chain.
function chainOfLayers(model) {
  const className = model.class_name;
  const layers = Array.isArray(model.config) ? model.config : model.config?.layers;
  if (!Array.isArray(layers) || layers.length === 0) fail(`model ${className}: no layers`);
  if (className === 'Sequential') return layers;
  if (className !== 'Model' && className !== 'Functional') {
    fail(`model class ${className} is not supported (Sequential, Model, Functional)`);
  }
  layers.forEach((layer, i) => {
    const inbound = inboundNames(layer);
    const expected = i === 0 ? [] : [layers[i - 1].config.name];
    if (inbound.length !== expected.length || inbound.some((n, k) => n !== expected[k])) {
      unsupported(`${layerLabel(layer)}: only a chain of layers is supported (each taking the previous one)`);
    }
  });
  return layers;
}

// Names of the layers a functional layer takes (Keras 2: [[[name, 0, 0, {}]]]; Keras 3:
// [{args: [{config: {keras_history: [name, 0, 0]}}]}]).
function inboundNames(layer) {
  const names = [];
  for (const node of layer.inbound_nodes ?? []) {
    if (Array.isArray(node)) {
      for (const entry of node) names.push(entry[0]);
    } else {
      for (const arg of node.args ?? []) {
        const history = arg?.config?.keras_history;
        if (history) names.push(history[0]);
      }
    }
  }
  return names;
}

// F16 bits → number (exact), for weights the converter quantized to float16.
function f16ToNumber(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

function concatenated(weightData) {
  const parts = Array.isArray(weightData) ? weightData : [weightData];
  const views = parts.map((p) => {
    if (p instanceof ArrayBuffer) return new Uint8Array(p);
    if (ArrayBuffer.isView(p)) return new Uint8Array(p.buffer, p.byteOffset, p.byteLength);
    return fail('weight data must be ArrayBuffers or TypedArrays (the shards in manifest order)');
  });
  const out = new Uint8Array(views.reduce((n, v) => n + v.length, 0));
  let at = 0;
  for (const v of views) {
    out.set(v, at);
    at += v.length;
  }
  return out;
}

// name → {shape, data: Float32Array} from the weight specs and the concatenated shards.
function readWeights(specs, bytes) {
  const weights = new Map();
  let at = 0;
  for (const spec of specs) {
    const count = spec.shape.reduce((a, b) => a * b, 1);
    if (spec.group === 'optimizer') {  // the optimizer's state (model.save with includeOptimizer)
      at += count * (spec.quantization ? 2 : 4);
      continue;
    }
    const q = spec.quantization;
    if (q && q.dtype !== 'float16') {
      fail(`weight '${spec.name}': quantization ${q.dtype} is not supported (float32, float16)`);
    }
    if (!q && spec.dtype !== 'float32') {
      fail(`weight '${spec.name}': dtype ${spec.dtype} is not supported (float32)`);
    }
    const size = count * (q ? 2 : 4);
    if (at + size > bytes.length) {
      fail(`weight '${spec.name}': the shards hold ${bytes.length} bytes, fewer than the manifest needs`);
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset + at, size);
    const data = new Float32Array(count);
    for (let i = 0; i < count; i++) data[i] = q ? f16ToNumber(view.getUint16(2 * i, true)) : view.getFloat32(4 * i, true);
    weights.set(spec.name, { shape: spec.shape, data });
    at += size;
  }
  if (at !== bytes.length) fail(`the shards hold ${bytes.length} bytes, the manifest ${at}`);
  return weights;
}

// The weight of `layerName` called `kind` ('kernel', 'bias', 'embeddings'): its name ends with
// "<layerName>/<kind>" (with any scope before it and an optional ':0').
function weightOf(weights, layer, kind) {
  const name = layer.config.name;
  for (const [key, value] of weights) {
    const parts = key.replace(/:0$/, '').split('/');
    if (parts.at(-1) === kind && parts.at(-2) === name) return value;
  }
  return fail(`${layerLabel(layer)}: no weight '${name}/${kind}' in the manifest`);
}

function rejectExtras(layer, fields) {
  for (const field of fields) {
    if (layer.config[field] != null) fail(`${layerLabel(layer)}: ${field} is not supported`);
  }
}

function fedleafName(layer) {
  return String(layer.config.name).replace(/[^A-Za-z0-9_.-]/g, '_');
}

function optimizerFrom(trainingConfig, warn) {
  const config = trainingConfig?.optimizer_config;
  if (!config) {
    warn('the model has no optimizer (saved without it: model.save(handler, {includeOptimizer: true}) keeps ' +
      "it); the plan trains with Keras's default Adam, learning rate 0.001 (options.train sets another)");
    return { type: 'adam', learning_rate: 0.001 };
  }
  const c = config.config ?? {};
  const learningRate = c.learning_rate ?? c.learningRate ?? c.lr;
  if (typeof learningRate !== 'number') fail(`optimizer ${config.class_name}: no numeric learning rate (give options.train)`);
  switch (canonical(config.class_name)) {
    case 'adam':
      return { type: 'adam', learning_rate: learningRate, beta1: c.beta_1 ?? c.beta1 ?? 0.9,
        beta2: c.beta_2 ?? c.beta2 ?? 0.999, epsilon: c.epsilon ?? 1e-7 };
    case 'sgd': {
      const momentum = c.momentum ?? 0;
      if (c.nesterov) fail('optimizer SGD: nesterov is not supported (give options.train)');
      return momentum > 0 ? { type: 'momentum', learning_rate: learningRate, momentum } : { type: 'sgd', learning_rate: learningRate };
    }
    case 'momentum':
      if (c.useNesterov) fail('optimizer Momentum: useNesterov is not supported (give options.train)');
      return { type: 'momentum', learning_rate: learningRate, momentum: c.momentum ?? 0.9 };
    default:
      return fail(`optimizer ${config.class_name} is not supported (Adam, SGD; or give options.train)`);
  }
}

// The loss of the plan from the last activation and the training config's loss.
function lossFrom(lastActivation, units, trainingConfig, lastLayer) {
  const configured = trainingConfig?.loss;
  const lossName = configured == null ? null
    : canonical(typeof configured === 'string' ? configured : configured.class_name ?? configured.config?.name);
  const fromLogits = typeof configured === 'object' && configured?.config?.from_logits === true;
  const binary = lossName === 'binarycrossentropy';
  const categorical = lossName === 'sparsecategoricalcrossentropy' || lossName === 'categoricalcrossentropy';
  if (lossName !== null && !binary && !categorical) {
    fail(`loss '${typeof configured === 'string' ? configured : JSON.stringify(configured)}' is not supported ` +
      '(binary_crossentropy, sparse_categorical_crossentropy, categorical_crossentropy)');
  }
  if (lastActivation === 'sigmoid' && !fromLogits && (lossName === null || binary)) {
    if (units !== 1) fail(`${layerLabel(lastLayer)}: a sigmoid output needs units 1, got ${units}`);
    return 'sigmoid_cross_entropy';
  }
  if (lastActivation === 'softmax' && !fromLogits && (lossName === null || categorical)) {
    if (units < 2) fail(`${layerLabel(lastLayer)}: a softmax output needs units >= 2, got ${units}`);
    return 'softmax_cross_entropy';
  }
  if (lastActivation === 'linear' && fromLogits && binary && units === 1) return 'sigmoid_cross_entropy';
  if (lastActivation === 'linear' && fromLogits && categorical && units >= 2) return 'softmax_cross_entropy';
  return fail(`${layerLabel(lastLayer)}: activation ${lastActivation} with loss ${lossName ?? '(none)'} ` +
    'has no fedleaf equivalent (sigmoid + binary_crossentropy, softmax + categorical_crossentropy, ' +
    'or linear with from_logits)');
}

/**
 * @param {{encodeSafetensors: Function, validatePlan: Function}} executor  from createExecutor()
 * @param {object} modelJson  model.json (modelTopology + weightsManifest) or tf.io ModelArtifacts
 *   (modelTopology + weightSpecs + weightData)
 * @param {ArrayBuffer|ArrayBufferView|Array<ArrayBuffer|ArrayBufferView>} [weightData]  the
 *   weight shards in manifest order (default: modelJson.weightData)
 * @param {{features?: object, train?: object, updates?: object,
 *   onWarning?: (message: string) => void}} [options]  onWarning: what the import changed or
 *   assumed (default console.warn)
 * @returns {{plan: object, model: Uint8Array, tokenOffset: number}}
 */
export function importTfjsLayersModel(executor, modelJson, weightData = modelJson?.weightData, options = {}) {
  const { model, trainingConfig } = topologyOf(modelJson);
  const onWarning = options.onWarning ?? ((message) => console.warn(message));
  const warn = (message) => onWarning(`TF.js model import: ${message}`);
  const specs = modelJson.weightSpecs ?? (modelJson.weightsManifest ?? []).flatMap((group) => group.weights);
  if (weightData === undefined) fail('no weight data: pass the weight shards in manifest order');
  const weights = readWeights(specs, concatenated(weightData));
  const layers = chainOfLayers(model).filter((layer, i) => {
    if (DROPOUT.has(layer.class_name)) {
      warn(`${layerLabel(layer)} is left out: it is the identity at inference, so predictions are unchanged, ` +
        'but fedleaf trains without dropout (dropout layers: issue 29)');
      return false;
    }
    if (layer.class_name !== 'InputLayer') return true;
    if (i !== 0) unsupported(`${layerLabel(layer)}: an InputLayer must come first`);
    return false;
  });

  const planLayers = [];
  const tensors = {};
  const updates = {};
  let inputs;
  let tokenOffset = 0;
  let width;  // features into the next layer
  const dense = [];  // the planned dense layers, to fold the last activation into the loss
  for (let i = 0; i < layers.length; i++) {
    const layer = layers[i];
    const name = fedleafName(layer);
    const c = layer.config;
    switch (layer.class_name) {
      case 'Embedding': {
        if (i !== 0) unsupported(`${layerLabel(layer)}: an Embedding must be the first layer`);
        if (layers[i + 1]?.class_name !== 'GlobalAveragePooling1D') {
          unsupported(`${layers[i + 1] ? `layer ${layerLabel(layers[i + 1])}` : 'nothing'} after ${layerLabel(layer)} ` +
            'is not supported: an Embedding must be followed by GlobalAveragePooling1D');
        }
        rejectExtras(layer, ['embeddings_regularizer', 'activity_regularizer', 'embeddings_constraint']);
        const table = weightOf(weights, layer, 'embeddings');
        const [rows, dim] = table.shape;
        if (rows !== c.input_dim || dim !== c.output_dim) {
          fail(`${layerLabel(layer)}: embeddings shape [${table.shape}] differs from [${c.input_dim}, ${c.output_dim}]`);
        }
        tokenOffset = c.mask_zero ? 1 : 0;
        const vocab = rows - tokenOffset;
        if (vocab < 1) fail(`${layerLabel(layer)}: input_dim ${rows} leaves no rows`);
        inputs = { tokens: 'sparse_ids' };
        planLayers.push({ type: 'embedding_bag', name, input: 'tokens', vocab, dim, combiner: 'mean' });
        tensors[`${name}/weight`] = { dtype: 'F32', shape: [vocab, dim], data: table.data.slice(tokenOffset * dim) };
        updates[`${name}/weight`] = { encoding: 'row_sparse', aggregator: 'mean_over_contributors' };
        width = dim;
        const pooling = layers[++i];
        if ((pooling.config.data_format ?? 'channels_last') !== 'channels_last' || pooling.config.keepdims) {
          fail(`${layerLabel(pooling)}: only data_format channels_last without keepdims is supported`);
        }
        break;
      }
      case 'Dense': {
        rejectExtras(layer, ['kernel_regularizer', 'bias_regularizer', 'activity_regularizer',
          'kernel_constraint', 'bias_constraint']);
        const kernel = weightOf(weights, layer, 'kernel');
        const [fanIn, units] = kernel.shape;
        if (units !== c.units) fail(`${layerLabel(layer)}: kernel shape [${kernel.shape}] differs from units ${c.units}`);
        if (i === 0) {
          inputs = { x: { type: 'dense', dim: fanIn } };
        } else if (fanIn !== width) {
          fail(`${layerLabel(layer)}: kernel takes ${fanIn} inputs, the previous layer gives ${width}`);
        }
        const activation = c.activation ?? 'linear';
        if (activation !== 'linear' && activation !== 'softmax' && !HIDDEN_ACTIVATIONS.has(activation)) {
          fail(`${layerLabel(layer)}: activation ${activation} is not supported (linear, relu, sigmoid, tanh, softmax)`);
        }
        const useBias = c.use_bias !== false;
        const planned = { type: 'dense', name, units };
        if (!useBias) planned.use_bias = false;
        planLayers.push(planned);
        dense.push({ layer, planned, activation, last: i === layers.length - 1 });
        tensors[`${name}/weight`] = { dtype: 'F32', shape: kernel.shape, data: kernel.data };
        updates[`${name}/weight`] = { encoding: 'dense', aggregator: 'weighted_mean' };
        if (useBias) {
          const bias = weightOf(weights, layer, 'bias');
          tensors[`${name}/bias`] = { dtype: 'F32', shape: bias.shape, data: bias.data };
          updates[`${name}/bias`] = { encoding: 'dense', aggregator: 'weighted_mean' };
        }
        width = units;
        break;
      }
      case 'Activation': {
        if (!HIDDEN_ACTIVATIONS.has(c.activation) || i === layers.length - 1) {
          fail(`${layerLabel(layer)}: activation ${c.activation} is supported only as a hidden relu, sigmoid or tanh`);
        }
        planLayers.push({ type: c.activation, name });
        break;
      }
      default:
        unsupported(`layer ${layerLabel(layer)} is not supported`);
    }
  }
  const last = dense.at(-1);
  if (!last?.last) unsupported(`the last layer must be a Dense layer (got ${layerLabel(layers.at(-1))})`);
  for (const d of dense) {
    if (d.last) continue;
    if (d.activation === 'softmax') fail(`${layerLabel(d.layer)}: softmax is supported only on the last layer`);
    if (d.activation !== 'linear') d.planned.activation = d.activation;
  }
  const loss = lossFrom(last.activation, last.planned.units, trainingConfig, last.layer);

  const plan = {
    model: { inputs, layers: planLayers, loss },
    train: options.train ?? { optimizer: optimizerFrom(trainingConfig, warn), epochs: 1, batch_size: 32 },
    updates: options.updates ?? updates,
  };
  if (options.features) {
    if (!inputs.tokens) fail('options.features needs an Embedding input');
    const vocab = planLayers[0].vocab;
    if (options.features.num_buckets !== undefined && options.features.num_buckets !== vocab) {
      fail(`options.features.num_buckets ${options.features.num_buckets} differs from the vocabulary ${vocab}`);
    }
    plan.features = { ...options.features, num_buckets: vocab };
  }
  executor.validatePlan(plan);
  const modelBytes = executor.encodeSafetensors(tensors, { source: 'tfjs-layers' });
  return { plan, model: modelBytes, tokenOffset };
}
