// The mapping of a Keras graph's nodes (tfjs_keras_graph.js), in order, to a fedleaf plan's
// inputs, layers and tensors in the graph form (every layer names what it reads); what each Keras
// layer becomes is the table at the top of tfjs_layers_import.js.
//
//   const builder = new PlanBuilder(graph, weights, outcome, warn);
//   builder.build();   // builder.inputs, .layers, .tensors, .updates, .offsets, .tensorOf

import { fail, layerLabel, unsupported } from './tfjs_import_errors.js';
import { weightOf as findWeight } from './tfjs_weights.js';

const DROPOUT = new Set(['Dropout', 'SpatialDropout1D']);
const POOLING = new Set(['GlobalAveragePooling1D', 'Flatten']);
const HIDDEN_ACTIVATIONS = new Set(['relu', 'sigmoid', 'tanh']);
// An elementwise merge of equal widths → its plan type.
const ELEMENTWISE = new Map([['Add', 'add'], ['Multiply', 'multiply']]);
const KNOWN = new Set(['InputLayer', 'Embedding', 'Dense', 'Activation', 'Concatenate', ...ELEMENTWISE.keys(), ...DROPOUT, ...POOLING]);

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

// Maps the graph's nodes, in order, to plan inputs and layers (graph form: every layer names
// what it reads).
export class PlanBuilder {
  // outcome(): the loss and whether the output's activation folds into it, asked for when the
  // output is reached (so an unsupported layer before it is the error a model gets first).
  constructor(graph, weights, outcome, warn) {
    Object.assign(this, { graph, weights, outcome, warn });
    this.names = new Set();
    this.tensorOf = new Map();  // node key → the plan name holding its output
    this.widthOf = new Map();   // plan name → width (undefined: an ids input)
    // {name, kind: 'sparse_ids' | 'dense', dim, shape, layer, sparse}; sparse: a Keras sparse
    // input [batch, N] (dim N), read by Dense layers (each an embedding_bag sum over its entries)
    this.inputs = [];
    this.layers = [];
    this.tables = new Map();    // Embedding name → the plan layer owning its table
    this.offsets = new Map();   // ids input name → token offset
    this.fused = new Set();     // node keys mapped with their Embedding (its dropouts, its pooling)
    // What the plan's model does not say of the Keras one (tfjs_plan_origin.js): the owner
    // bag → its pooling's name, a mask_zero table's owner → row 0, the output's Activation.
    this.poolings = {};
    this.maskZero = {};
    this.outputActivation = null;
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
    if (layer.config?.ragged) {
      unsupported(`${label}: ragged inputs are not supported (give the ids as an int input [batch, length] read by an ` +
        'Embedding)');
    }
    if (layer.config?.sparse) {
      this.sparseInput(node, readers, shape, label);
      return;
    }
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

  // A Keras sparse input [batch, N] (a SparseTensor: multi-hot, counts, tf-idf): fedleaf's
  // sparse_ids with weights — an example's nonzero columns are its ids, their values the weights.
  // Only Dense layers may read it: each is an embedding_bag summing its kernel's rows (dense()).
  sparseInput(node, readers, shape, label) {
    const { layer } = node;
    const other = readers.find((l) => l.class_name !== 'Dense');
    if (other) {
      unsupported(`${label} is sparse and ${layerLabel(other)} reads it: only Dense layers may read a sparse input ` +
        '(each becomes an embedding_bag summing its kernel rows; Embeddings read int ids [batch, length])');
    }
    if (!Array.isArray(shape) || shape.length !== 2 || !Number.isSafeInteger(shape[1]) || shape[1] < 1 || shape[1] > 0x7fffffff) {
      fail(`${label}: a sparse input needs the shape [batch, N] with N in [1, 2^31), got [${shape ?? ''}]`);
    }
    const name = this.claim(layer.config.name);
    this.inputs.push({ name, kind: 'sparse_ids', sparse: true, dim: shape[1], shape, layer });
    this.widthOf.set(name, undefined);
    this.tensorOf.set(node.key, name);
  }

  // A Dense on a sparse input: x W + b with x's nonzero columns as ids and values as weights is
  // embedding_bag {vocab: N, dim: units, combiner: sum, use_bias} with W as its table; the
  // activation follows as a layer "<dense>_<activation>" (unless the loss takes it).
  sparseDense(node, isOutput, input, kernel) {
    const { layer } = node;
    const c = layer.config;
    const [fanIn, units] = kernel.shape;
    if (fanIn !== input.dim) {
      fail(`${layerLabel(layer)}: kernel takes ${fanIn} inputs, the sparse input '${input.name}' has ${input.dim} columns`);
    }
    const activation = c.activation ?? 'linear';
    const useBias = c.use_bias !== false;
    const planned = { type: 'embedding_bag', name: this.claim(c.name), input: input.name, vocab: fanIn, dim: units, combiner: 'sum' };
    if (useBias) planned.use_bias = true;
    this.tensors[`${planned.name}/weight`] = { dtype: 'F32', shape: kernel.shape, data: kernel.data };
    this.updates[`${planned.name}/weight`] = { encoding: 'row_sparse', aggregator: 'mean_over_contributors' };
    if (useBias) {
      const bias = weightOf(this.weights, layer, 'bias');
      if (bias.shape.length !== 1 || bias.shape[0] !== units) fail(`${layerLabel(layer)}: bias shape [${bias.shape}] differs from [${units}]`);
      this.tensors[`${planned.name}/bias`] = { dtype: 'F32', shape: bias.shape, data: bias.data };
      this.updates[`${planned.name}/bias`] = { encoding: 'dense', aggregator: 'weighted_mean' };
    }
    this.emit(node, planned, units);
    if (activation !== 'linear' && !(isOutput && this.outcome().fold)) {
      this.emit(node, { type: activation, name: this.claim(`${c.name}_${activation}`), input: planned.name }, units);
    }
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
      if (offset) this.maskZero[planned.name] = Array.from(table.data.slice(0, dim));
      if (planned.name !== p.name) this.poolings[planned.name] = p.name;
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
    const activation = c.activation ?? 'linear';
    if (activation !== 'linear' && !HIDDEN_ACTIVATIONS.has(activation) && !(isOutput && activation === 'softmax')) {
      fail(`${layerLabel(layer)}: activation ${activation} is not supported (linear, relu, sigmoid, tanh; softmax on the output)`);
    }
    const sparse = this.inputs.find((i) => i.name === input && i.sparse);
    if (sparse) {
      this.sparseDense(node, isOutput, sparse, kernel);
      return;
    }
    const dense = this.inputs.find((i) => i.name === input && i.kind === 'dense');
    if (dense && dense.dim === undefined) {
      dense.dim = fanIn;  // a Sequential model that declares no input shape
      this.widthOf.set(input, fanIn);
    }
    if (fanIn !== this.widthOf.get(input)) {
      fail(`${layerLabel(layer)}: kernel takes ${fanIn} inputs, '${input}' gives ${this.widthOf.get(input)}`);
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
      if (activation !== 'linear') this.outputActivation = node.layer.config.name;
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
        fail(`${layerLabel(layer)}: ${layer.class_name} needs equal widths, got ${widths.map((w, k) => `${w} ('${inputs[k]}')`).join(', ')}`);
      }
      this.emit(node, { type: ELEMENTWISE.get(layer.class_name), name: this.nameOf(node), inputs }, widths[0]);
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
        case 'Add':
        case 'Multiply': this.merge(node); break;
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
