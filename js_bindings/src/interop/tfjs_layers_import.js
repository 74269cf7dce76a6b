// A TF.js Layers model (what tensorflowjs_converter writes from a Keras model, and what
// model.save() in @tensorflow/tfjs writes) → a fedleaf plan and safetensors model.
//
//   const modelJson = JSON.parse(await readFile('model.json', 'utf8'));
//   const shards = await Promise.all(modelJson.weightsManifest.flatMap((g) => g.paths)
//     .map((p) => readFile(p)));                                 // in manifest order
//   const { plan, model, tokenOffset } = importTfjsLayersModel(executor, modelJson, shards,
//     { features: { hash: 'murmur3_32', ngrams: 1, binary: true } });
//
// Sequential and functional models (Keras 2, Keras 3 and TF.js model.json shapes:
// tfjs_keras_graph.js). Layers:
//   InputLayer                     → an input: 'sparse_ids' when Embeddings read it (Keras's int
//                                    ids, [batch, length]), else {type: 'dense', dim: N} ([batch, N])
//   Embedding + GlobalAveragePooling1D
//                                  → embedding_bag {combiner: 'mean'}
//   Embedding + Flatten            → embedding_bag {combiner: 'sum'}: one id per example (the
//                                    input's length must be 1), the sum of one row is that row
//   the same Embedding on several inputs
//                                  → the first lookup (named after the Embedding) owns the table
//                                    '<embedding>/weight'; the others (named after their pooling
//                                    layer) name it: {table: '<embedding>'}
//   Dropout, SpatialDropout1D      → dropout {rate, seed}; between an Embedding and its pooling
//                                    they become a dropout after the bag (exact for
//                                    SpatialDropout1D and for Flatten; a Dropout before
//                                    GlobalAveragePooling1D draws other noise: a warning)
//   Dense(units, activation, use_bias) → dense (relu, sigmoid, tanh, linear)
//   Activation(relu | sigmoid | tanh)  → relu | sigmoid | tanh layer (linear: nothing)
//   Concatenate (last axis), Add   → concatenate, add
// One output. Its sigmoid (units 1) or softmax — a Dense's activation or a final Activation layer
// — becomes the loss (sigmoid_cross_entropy or softmax_cross_entropy, which apply it to the
// logits); the training config's loss must agree (binary_crossentropy;
// sparse_/categorical_crossentropy; a linear output needs from_logits). mean_squared_error (mse)
// → mean_squared_error, any relu/sigmoid/tanh on the output kept as a layer. Without a training
// config the last activation decides. Anything else — another layer class, a layer applied
// twice other than an Embedding, a regularizer or constraint, a quantized weight other than
// float16, several outputs — is an Error naming the layer's class and name (or the field); an
// unsupported layer or topology also lists what is supported.
//
// A chain (one input, each layer taking the previous one) imports as it always has: the input is
// 'tokens' (ids) or 'x' (dense), the layers name no inputs. Any other graph imports in the plan's
// graph form: inputs named after the InputLayers, every layer naming its input(s), and "output".
//
// Semantics of the embedding: fedleaf's mean over an example's ids equals GlobalAveragePooling1D
// over those ids as one unpadded sequence (TF.js's GlobalAveragePooling1D ignores masks, so
// padded batches average the padding too). With mask_zero, token 0 is padding: fedleaf id i is
// Keras token i + 1 (tokenOffsets[input] 1) and row 0 of the table is dropped — what Keras
// (Python), whose pooling honours the mask, computes for padded batches. mask_zero with Flatten is
// an Error (Flatten ignores the mask: token 0 would need the dropped row).
//
// The plan's train section is options.train, else the training config's optimizer (Adam, SGD
// with or without momentum; TF.js's model.save writes the training config only with
// includeOptimizer: true, and its optimizer state is skipped), else Keras's default Adam
// (learning rate 0.001), with a warning. Updates: each embedding table row_sparse /
// mean_over_contributors, every other parameter dense / weighted_mean (options.updates replaces
// them). options.features becomes a one-text-input plan's features section with num_buckets =
// the vocabulary; options.inputFeatures {<input>: features} goes to inputs.<input>.features.
//
// Warnings (what the import changed or assumed, the model still imports) go to
// options.onWarning(message), console.warn by default.

import { kerasGraph } from './tfjs_keras_graph.js';
import { concatenated, readWeights, weightOf as findWeight } from './tfjs_weights.js';

const SUPPORTED = 'InputLayer (ids or dense numbers), Embedding + GlobalAveragePooling1D, Embedding + Flatten ' +
  '(one id per example; an Embedding may read several inputs), Dense, Activation, Dropout, SpatialDropout1D, ' +
  'Concatenate, Add; one output';
const DROPOUT = new Set(['Dropout', 'SpatialDropout1D']);
const POOLING = new Set(['GlobalAveragePooling1D', 'Flatten']);
const HIDDEN_ACTIVATIONS = new Set(['relu', 'sigmoid', 'tanh']);
const KNOWN = new Set(['InputLayer', 'Embedding', 'Dense', 'Activation', 'Concatenate', 'Add', ...DROPOUT, ...POOLING]);

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

function weightOf(weights, layer, kind) {
  return findWeight(weights, layer, kind, fail);
}

function rejectExtras(layer, fields) {
  for (const field of fields) {
    if (layer.config[field] != null) fail(`${layerLabel(layer)}: ${field} is not supported`);
  }
}

function fedleafName(name) {
  return String(name).replace(/[^A-Za-z0-9_.-]/g, '_');
}

// The batch shape an InputLayer declares (Keras 2 / TF.js: batch_input_shape; Keras 3: batch_shape).
function inputShape(layer) {
  return layer.config?.batch_input_shape ?? layer.config?.batch_shape ?? null;
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

// The plan's loss from the output's activation and the training config's loss; fold: the
// activation is the loss's own (left out of the layers).
function lossFrom(activation, trainingConfig, outputLayer) {
  let configured = trainingConfig?.loss;
  if (Array.isArray(configured) && configured.length === 1) [configured] = configured;
  if (configured && typeof configured === 'object' && !configured.class_name && Object.keys(configured).length === 1) {
    [configured] = Object.values(configured);  // {<output name>: loss}
  }
  const shown = typeof configured === 'string' ? configured : JSON.stringify(configured);
  const lossName = configured == null ? null
    : canonical(typeof configured === 'string' ? configured : configured.class_name ?? configured.config?.name);
  const fromLogits = typeof configured === 'object' && configured?.config?.from_logits === true;
  const binary = lossName === 'binarycrossentropy';
  const categorical = lossName === 'sparsecategoricalcrossentropy' || lossName === 'categoricalcrossentropy';
  const squared = lossName === 'meansquarederror' || lossName === 'mse';
  if (lossName !== null && !binary && !categorical && !squared) {
    fail(`loss '${shown}' is not supported (binary_crossentropy, sparse_categorical_crossentropy, ` +
      'categorical_crossentropy, mean_squared_error)');
  }
  if (squared && activation !== 'softmax') return { loss: 'mean_squared_error', fold: false };
  if (activation === 'sigmoid' && !fromLogits && (lossName === null || binary)) return { loss: 'sigmoid_cross_entropy', fold: true };
  if (activation === 'softmax' && !fromLogits && (lossName === null || categorical)) return { loss: 'softmax_cross_entropy', fold: true };
  if (activation === 'linear' && fromLogits && binary) return { loss: 'sigmoid_cross_entropy', fold: false };
  if (activation === 'linear' && fromLogits && categorical) return { loss: 'softmax_cross_entropy', fold: false };
  return fail(`${layerLabel(outputLayer)}: activation ${activation} with loss ${lossName ?? '(none)'} ` +
    'has no fedleaf equivalent (sigmoid + binary_crossentropy, softmax + categorical_crossentropy, ' +
    'linear with from_logits, or mean_squared_error)');
}

// The activation on the model's output: a Dense's or a final Activation layer's.
function outputActivation(node) {
  const { class_name: className, config } = node.layer;
  if (className === 'Dense' || className === 'Activation') return config.activation ?? 'linear';
  return 'linear';
}

// Maps the graph's nodes, in order, to plan inputs and layers (graph form: every layer names
// what it reads).
class PlanBuilder {
  // outcome(): the loss and whether the output's activation folds into it, asked for when the
  // output is reached (so an unsupported layer before it is the error a model gets first).
  constructor(graph, weights, outcome, warn) {
    Object.assign(this, { graph, weights, outcome, warn });
    this.names = new Set();
    this.tensorOf = new Map();  // node key → the plan name holding its output
    this.widthOf = new Map();   // plan name → width (undefined: an ids input)
    this.inputs = [];           // {name, spec, kind, keras}
    this.layers = [];
    this.tables = new Map();    // Embedding name → the plan layer owning its table
    this.offsets = new Map();   // ids input name → token offset
    this.fused = new Set();
    this.tensors = {};
    this.updates = {};
  }

  claim(name) {
    const base = fedleafName(name);
    let candidate = base;
    for (let k = 2; this.names.has(candidate); k++) candidate = `${base}_${k}`;
    this.names.add(candidate);
    return candidate;
  }

  // The plan name of a layer's application: node 0 its name, node k "<name>_k".
  nameOf(node) {
    return this.claim(node.index === 0 ? node.layer.config.name : `${node.layer.config.name}_${node.index}`);
  }

  source(node, k = 0) {
    return this.tensorOf.get(node.inbound[k]);
  }

  one(node) {
    if (node.inbound.length !== 1) unsupported(`${layerLabel(node.layer)}: takes ${node.inbound.length} inputs, one expected`);
    return this.source(node);
  }

  emit(node, layer, width) {
    this.layers.push(layer);
    this.widthOf.set(layer.name, width);
    this.tensorOf.set(node.key, layer.name);
  }

  input(node) {
    const { layer } = node;
    const readers = node.consumers.map((key) => this.graph.nodes.get(key).layer);
    const ids = readers.some((l) => l.class_name === 'Embedding');
    const shape = inputShape(layer);
    const label = layer.synthetic ? 'the model input' : `InputLayer '${layer.config.name}'`;
    const foreign = readers.find((l) => !KNOWN.has(l.class_name));
    if (foreign) unsupported(`layer ${layerLabel(foreign)} is not supported`);  // before the input's shape rules
    if (ids) {
      const other = readers.find((l) => l.class_name !== 'Embedding');
      if (other) unsupported(`${label} feeds an Embedding and ${layerLabel(other)}: an input is ids (for Embeddings) or dense numbers`);
      if (shape && shape.length !== 2) fail(`${label}: ids need the shape [batch, length], got [${shape}]`);
    } else if (shape && (shape.length !== 2 || !(shape[1] >= 1))) {
      fail(`${label}: a dense input needs the shape [batch, N], got [${shape}]`);
    }
    const name = this.claim(layer.synthetic ? (ids ? 'tokens' : 'x') : layer.config.name);
    const dim = ids ? undefined : shape?.[1];
    this.inputs.push({ name, kind: ids ? 'sparse_ids' : 'dense', dim, shape, layer });
    this.widthOf.set(name, dim);
    this.tensorOf.set(node.key, name);
  }

  embedding(node) {
    const { layer } = node;
    const c = layer.config;
    const from = node.inbound.length === 1 ? this.graph.nodes.get(node.inbound[0]) : null;
    if (from?.layer.class_name !== 'InputLayer') {
      unsupported(`${layerLabel(layer)}: an Embedding must read a model input (ids) directly`);
    }
    // Embedding → (Dropout | SpatialDropout1D)* → GlobalAveragePooling1D | Flatten: one bag.
    const drops = [];
    let at = node;
    for (;;) {
      const next = at.consumers.map((key) => this.graph.nodes.get(key));
      const what = `${layerLabel(at.layer)}${at === node ? '' : ` after ${layerLabel(layer)}`}`;
      if (next.length !== 1) {
        unsupported(`${next.length === 0 ? 'nothing' : `${next.length} layers (${next.map((n) => layerLabel(n.layer)).join(', ')})`} ` +
          `after ${what} is not supported: an Embedding must be followed by GlobalAveragePooling1D or Flatten`);
      }
      at = next[0];
      if (POOLING.has(at.layer.class_name)) break;
      if (!DROPOUT.has(at.layer.class_name)) {
        unsupported(`layer ${layerLabel(at.layer)} after ${what} is not supported: an Embedding must be followed by ` +
          'GlobalAveragePooling1D or Flatten');
      }
      drops.push(at);
    }
    const pooling = at;
    const flatten = pooling.layer.class_name === 'Flatten';
    const p = pooling.layer.config;
    if ((p.data_format ?? 'channels_last') !== 'channels_last' || p.keepdims) {
      fail(`${layerLabel(pooling.layer)}: only data_format channels_last without keepdims is supported`);
    }
    const inputName = this.tensorOf.get(from.key);
    const input = this.inputs.find((i) => i.name === inputName);
    const length = input.shape?.[1] ?? c.input_length ?? null;
    if (flatten && length !== 1) {
      fail(`${layerLabel(pooling.layer)}: Flatten after ${layerLabel(layer)} needs one id per example ` +
        `(an input of length 1), the input has length ${length ?? 'any'}`);
    }
    if (flatten && c.mask_zero) fail(`${layerLabel(layer)}: mask_zero with Flatten is not supported (Flatten ignores the mask)`);
    rejectExtras(layer, ['embeddings_regularizer', 'activity_regularizer', 'embeddings_constraint']);
    const offset = c.mask_zero ? 1 : 0;
    if (this.offsets.has(inputName) && this.offsets.get(inputName) !== offset) {
      fail(`input '${inputName}' feeds Embeddings with and without mask_zero (its ids cannot mean both)`);
    }
    this.offsets.set(inputName, offset);
    const combiner = flatten ? 'sum' : 'mean';
    const owner = this.tables.get(c.name);
    let planned;
    if (owner) {
      if (owner.offset !== offset) fail(`${layerLabel(layer)}: one table with two token offsets`);
      planned = { type: 'embedding_bag', name: this.claim(p.name), input: inputName, table: owner.name, combiner };
    } else {
      const table = weightOf(this.weights, layer, 'embeddings');
      const [rows, dim] = table.shape;
      if (rows !== c.input_dim || dim !== c.output_dim) {
        fail(`${layerLabel(layer)}: embeddings shape [${table.shape}] differs from [${c.input_dim}, ${c.output_dim}]`);
      }
      const vocab = rows - offset;
      if (vocab < 1) fail(`${layerLabel(layer)}: input_dim ${rows} leaves no rows`);
      planned = { type: 'embedding_bag', name: this.claim(c.name), input: inputName, vocab, dim, combiner };
      this.tables.set(c.name, { name: planned.name, offset, vocab, dim });
      this.tensors[`${planned.name}/weight`] = { dtype: 'F32', shape: [vocab, dim], data: table.data.slice(offset * dim) };
      this.updates[`${planned.name}/weight`] = { encoding: 'row_sparse', aggregator: 'mean_over_contributors' };
    }
    const dim = this.tables.get(c.name).dim;
    this.emit(pooling, planned, dim);
    for (const drop of drops) {
      if (drop.layer.class_name === 'Dropout' && !flatten) {
        this.warn(`${layerLabel(drop.layer)} between ${layerLabel(layer)} and ${layerLabel(pooling.layer)} becomes a ` +
          'dropout of the pooled vector: the same at inference, other noise in training (SpatialDropout1D is exact)');
      }
      this.emit(pooling, this.dropoutLayer(drop, this.tensorOf.get(pooling.key)), dim);
    }
    [node, ...drops, pooling].forEach((n) => this.fused.add(n.key));
  }

  dropoutLayer(node, input) {
    const c = node.layer.config;
    if (c.noise_shape != null) fail(`${layerLabel(node.layer)}: noise_shape is not supported`);
    if (!(c.rate >= 0 && c.rate < 1)) fail(`${layerLabel(node.layer)}: rate ${c.rate} is not in [0, 1)`);
    const planned = { type: 'dropout', name: this.nameOf(node), input, rate: c.rate };
    if (c.seed != null) {
      if (!Number.isSafeInteger(c.seed) || c.seed < 0) fail(`${layerLabel(node.layer)}: seed ${c.seed} is not an integer >= 0`);
      planned.seed = c.seed;
    }
    return planned;
  }

  dense(node, isOutput) {
    const { layer } = node;
    const c = layer.config;
    if ((layer.inbound_nodes?.length ?? 1) > 1) {
      unsupported(`${layerLabel(layer)} is applied ${layer.inbound_nodes.length} times (only an Embedding may be shared)`);
    }
    const input = this.one(node);
    rejectExtras(layer, ['kernel_regularizer', 'bias_regularizer', 'activity_regularizer',
      'kernel_constraint', 'bias_constraint']);
    const kernel = weightOf(this.weights, layer, 'kernel');
    const [fanIn, units] = kernel.shape;
    if (units !== c.units) fail(`${layerLabel(layer)}: kernel shape [${kernel.shape}] differs from units ${c.units}`);
    const dense = this.inputs.find((i) => i.name === input && i.kind === 'dense');
    if (dense && dense.dim === undefined) {
      dense.dim = fanIn;  // a Sequential model that declares no input shape
      this.widthOf.set(input, fanIn);
    }
    if (fanIn !== this.widthOf.get(input)) {
      fail(`${layerLabel(layer)}: kernel takes ${fanIn} inputs, '${input}' gives ${this.widthOf.get(input)}`);
    }
    const activation = c.activation ?? 'linear';
    if (activation !== 'linear' && !HIDDEN_ACTIVATIONS.has(activation) && !(isOutput && activation === 'softmax')) {
      fail(`${layerLabel(layer)}: activation ${activation} is not supported (linear, relu, sigmoid, tanh; softmax on the output)`);
    }
    const planned = { type: 'dense', name: this.claim(c.name), input, units };
    if (activation !== 'linear' && !(isOutput && this.outcome().fold)) planned.activation = activation;
    const useBias = c.use_bias !== false;
    if (!useBias) planned.use_bias = false;
    this.tensors[`${planned.name}/weight`] = { dtype: 'F32', shape: kernel.shape, data: kernel.data };
    this.updates[`${planned.name}/weight`] = { encoding: 'dense', aggregator: 'weighted_mean' };
    if (useBias) {
      const bias = weightOf(this.weights, layer, 'bias');
      this.tensors[`${planned.name}/bias`] = { dtype: 'F32', shape: bias.shape, data: bias.data };
      this.updates[`${planned.name}/bias`] = { encoding: 'dense', aggregator: 'weighted_mean' };
    }
    this.emit(node, planned, units);
  }

  activation(node, isOutput) {
    const { activation } = node.layer.config;
    const input = this.one(node);
    if (activation === 'linear' || (isOutput && this.outcome().fold)) {
      this.tensorOf.set(node.key, input);
      return;
    }
    if (!HIDDEN_ACTIVATIONS.has(activation)) {
      fail(`${layerLabel(node.layer)}: activation ${activation} is supported only as relu, sigmoid or tanh ` +
        '(or the output\'s sigmoid or softmax)');
    }
    this.emit(node, { type: activation, name: this.nameOf(node), input }, this.widthOf.get(input));
  }

  merge(node) {
    const { layer } = node;
    const inputs = node.inbound.map((_, k) => this.source(node, k));
    if (inputs.length < 2) unsupported(`${layerLabel(layer)}: takes ${inputs.length} input, at least 2 expected`);
    const widths = inputs.map((name) => this.widthOf.get(name));
    if (layer.class_name === 'Concatenate') {
      const axis = layer.config.axis ?? -1;
      if (axis !== -1 && axis !== 1) fail(`${layerLabel(layer)}: axis ${axis} is not supported (the last axis, -1)`);
      this.emit(node, { type: 'concatenate', name: this.nameOf(node), inputs }, widths.reduce((a, b) => a + b, 0));
    } else {
      if (widths.some((w) => w !== widths[0])) {
        fail(`${layerLabel(layer)}: Add needs equal widths, got ${widths.map((w, k) => `${w} ('${inputs[k]}')`).join(', ')}`);
      }
      this.emit(node, { type: 'add', name: this.nameOf(node), inputs }, widths[0]);
    }
  }

  build() {
    const { graph } = this;
    for (const key of graph.inputs) {
      if (!graph.order.includes(key)) fail(`InputLayer '${JSON.parse(key)[0]}' is not used by the output`);
    }
    for (const key of graph.order) {
      if (this.fused.has(key)) continue;
      const node = graph.nodes.get(key);
      const isOutput = key === graph.output;
      switch (node.layer.class_name) {
        case 'InputLayer': this.input(node); break;
        case 'Embedding': this.embedding(node); break;
        case 'Dense': this.dense(node, isOutput); break;
        case 'Activation': this.activation(node, isOutput); break;
        case 'Dropout':
          this.emit(node, this.dropoutLayer(node, this.one(node)), this.widthOf.get(this.one(node)));
          break;
        case 'Concatenate':
        case 'Add': this.merge(node); break;
        case 'GlobalAveragePooling1D':
        case 'Flatten':
        case 'SpatialDropout1D':
          unsupported(`${layerLabel(node.layer)} is supported only between an Embedding and its pooling`);
          break;
        default:
          unsupported(`layer ${layerLabel(node.layer)} is not supported`);
      }
    }
    if (this.layers.length === 0) unsupported('a model without layers is not supported');
  }
}

// One input, each layer reading the one before it: the chain form plans had before graphs.
function isChain(inputs, layers, output) {
  if (inputs.length !== 1 || output !== layers.at(-1).name) return false;
  return layers.every((layer, i) => !layer.inputs && layer.input === (i === 0 ? inputs[0].name : layers[i - 1].name));
}

/**
 * @param {{encodeSafetensors: Function, validatePlan: Function}} executor  from createExecutor()
 * @param {object} modelJson  model.json (modelTopology + weightsManifest) or tf.io ModelArtifacts
 *   (modelTopology + weightSpecs + weightData)
 * @param {ArrayBuffer|ArrayBufferView|Array<ArrayBuffer|ArrayBufferView>} [weightData]  the
 *   weight shards in manifest order (default: modelJson.weightData)
 * @param {{features?: object, inputFeatures?: object, train?: object, updates?: object,
 *   onWarning?: (message: string) => void}} [options]  onWarning: what the import changed or
 *   assumed (default console.warn)
 * @returns {{plan: object, model: Uint8Array, tokenOffset: number|null,
 *   tokenOffsets: Object<string, number>}}  tokenOffsets: per ids input, 1 when its Embedding has
 *   mask_zero (fedleaf id i is Keras token i + 1); tokenOffset: their common value (0 without ids
 *   inputs, null when they differ)
 */
export function importTfjsLayersModel(executor, modelJson, weightData = modelJson?.weightData, options = {}) {
  const { model, trainingConfig } = topologyOf(modelJson);
  const onWarning = options.onWarning ?? ((message) => console.warn(message));
  const warn = (message) => onWarning(`TF.js model import: ${message}`);
  const specs = modelJson.weightSpecs ?? (modelJson.weightsManifest ?? []).flatMap((group) => group.weights);
  if (weightData === undefined) fail('no weight data: pass the weight shards in manifest order');
  const weights = readWeights(specs, concatenated(weightData, fail), fail);
  const graph = kerasGraph(model, { fail, unsupported });

  const outputNode = graph.nodes.get(graph.output);
  let decided;
  const outcome = () => (decided ??= lossFrom(outputActivation(outputNode), trainingConfig, outputNode.layer));
  const builder = new PlanBuilder(graph, weights, outcome, warn);
  builder.build();
  const { loss } = outcome();
  const output = builder.tensorOf.get(graph.output);
  const width = builder.widthOf.get(output);
  if (loss === 'sigmoid_cross_entropy' && width !== 1) {
    fail(`${layerLabel(outputNode.layer)}: a sigmoid output needs units 1, got ${width}`);
  }
  if (loss === 'softmax_cross_entropy' && !(width >= 2)) {
    fail(`${layerLabel(outputNode.layer)}: a softmax output needs units >= 2, got ${width}`);
  }
  if (!builder.layers.some((l) => l.name === output)) unsupported(`the output is model input '${output}', not a layer`);

  const { inputs, layers } = builder;
  const chain = isChain(inputs, layers, output);
  const inputSpec = (i) => (i.kind === 'dense' ? { type: 'dense', dim: i.dim } : (chain ? 'sparse_ids' : { type: 'sparse_ids' }));
  let planModel;
  if (chain) {
    // Keep what a chain has always imported to: 'tokens' or 'x', no "input" but the embedding's.
    const wanted = inputs[0].kind === 'dense' ? 'x' : 'tokens';
    const inputName = layers.some((l) => l.name === wanted) ? inputs[0].name : wanted;
    const chainLayers = layers.map(({ input, ...rest }) => (rest.type === 'embedding_bag' ? { ...rest, input: inputName } : rest));
    builder.offsets.set(inputName, builder.offsets.get(inputs[0].name) ?? 0);
    inputs[0].name = inputName;
    planModel = { inputs: { [inputName]: inputSpec(inputs[0]) }, layers: chainLayers, loss };
  } else {
    planModel = { inputs: Object.fromEntries(inputs.map((i) => [i.name, inputSpec(i)])), layers, output, loss };
  }

  const plan = {
    model: planModel,
    train: options.train ?? { optimizer: optimizerFrom(trainingConfig, warn), epochs: 1, batch_size: 32 },
    updates: options.updates ?? builder.updates,
  };
  if (options.features) {
    const ids = chain && inputs[0].kind === 'sparse_ids';
    if (!ids) fail('options.features is the featurization of a one-input text model; give options.inputFeatures');
    const vocab = layers[0].vocab;
    if (options.features.num_buckets !== undefined && options.features.num_buckets !== vocab) {
      fail(`options.features.num_buckets ${options.features.num_buckets} differs from the vocabulary ${vocab}`);
    }
    plan.features = { ...options.features, num_buckets: vocab };
  }
  for (const [name, features] of Object.entries(options.inputFeatures ?? {})) {
    const input = inputs.find((i) => i.name === name);
    if (!input) fail(`options.inputFeatures.${name}: the model has no input '${name}' (${inputs.map((i) => i.name).join(', ')})`);
    const spec = inputSpec(input);
    planModel.inputs[name] = { ...(typeof spec === 'string' ? { type: spec } : spec), features };
  }
  executor.validatePlan(plan);
  const modelBytes = executor.encodeSafetensors(builder.tensors, { source: 'tfjs-layers' });
  const tokenOffsets = Object.fromEntries(inputs.filter((i) => i.kind === 'sparse_ids')
    .map((i) => [i.name, builder.offsets.get(i.name) ?? 0]));
  const distinct = [...new Set(Object.values(tokenOffsets))];
  const tokenOffset = distinct.length === 0 ? 0 : distinct.length === 1 ? distinct[0] : null;
  return { plan, model: modelBytes, tokenOffset, tokenOffsets };
}
