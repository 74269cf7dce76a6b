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
//   InputLayer sparse: true [batch, N] → 'sparse_ids' with weights (an example's nonzero columns
//                                    are its ids, their values the weights: a SparseTensor's
//                                    indices and values); only Dense layers may read it
//   Dense(units, activation, use_bias) on a sparse input
//                                  → embedding_bag {vocab: N, dim: units, combiner: 'sum',
//                                    use_bias} (x W + b = Σ value_j W[id_j] + b; the kernel is the
//                                    table, row_sparse in the updates; the bias dense), then the
//                                    activation as a layer '<dense>_<activation>'. Two Dense on one
//                                    sparse input: two embedding_bags on it, each with its table
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
//   Concatenate (last axis), Add, Multiply → concatenate, add, multiply
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
// 'tokens' (ids) or 'x' (dense or sparse numbers), the layers name no inputs. Any other graph imports in the plan's
// graph form: inputs named after the InputLayers, every layer naming its input(s), and "output".
//
// Semantics of the embedding: fedleaf's mean over an example's ids equals GlobalAveragePooling1D
// over those ids as one unpadded sequence (TF.js's GlobalAveragePooling1D ignores masks, so
// padded batches average the padding too). With mask_zero, token 0 is padding: fedleaf id i is
// Keras token i + 1 (tokenOffsets[input] 1) and the plan's table is rows 1..V — what Keras
// (Python), whose pooling honours the mask, computes for padded batches; row 0 is kept in the
// plan's "tfjs" section for the export. mask_zero with Flatten is an Error (Flatten ignores the
// mask: token 0 would need row 0).
//
// The plan's "tfjs" section (tfjs_plan_origin.js) keeps what its model does not say of the Keras
// one — names, dtypes, the loss as written, row 0 of a mask_zero table — so that
// exportTfjsLayersModel gives the model back; the plan's inputs follow the model's input order.
//
// The plan's train section is options.train, else the training config's optimizer (Adam, SGD
// with or without momentum; TF.js's model.save writes the training config only with
// includeOptimizer: true, and its optimizer state is skipped), else Keras's default Adam
// (learning rate 0.001), with a warning. Adam steps as the library that wrote the model does:
// epsilon_form 'tfjs' (ε outside the bias correction) for TF.js's model.save, 'keras' (inside)
// for Keras in Python (core/train/optimizer.h has both rules). Updates: each embedding table row_sparse /
// mean_over_contributors, every other parameter dense / weighted_mean (options.updates replaces
// them). options.features becomes a one-text-input plan's features section with num_buckets =
// the vocabulary; options.inputFeatures {<input>: features} goes to inputs.<input>.features.
//
// Warnings (what the import changed or assumed, the model still imports) go to
// options.onWarning(message), console.warn by default.
import { fail, layerLabel, unsupported } from './tfjs_import_errors.js';
import { kerasGraph } from './tfjs_keras_graph.js';
import { PlanBuilder } from './tfjs_plan_builder.js';
import { tfjsOrigin } from './tfjs_plan_origin.js';
import { concatenated, readWeights } from './tfjs_weights.js';

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

// Which library wrote the model, and so whose Adam it trains with: TF.js's model.save writes
// keras_version "tfjs-layers <version>" (so does exportTfjsLayersModel), Keras in Python its own
// version.
function writtenByTfjs(modelJson) {
  const topology = modelJson.modelTopology;
  return String(topology.keras_version ?? '').startsWith('tfjs-layers') ||
    String(modelJson.generatedBy ?? '').startsWith('TensorFlow.js');
}

function optimizerFrom(trainingConfig, tfjs, warn) {
  const config = trainingConfig?.optimizer_config;
  // TF.js's Adam puts ε outside the bias correction, Keras's inside (core/train/optimizer.h).
  const epsilonForm = tfjs ? 'tfjs' : 'keras';
  if (!config) {
    warn('the model has no optimizer (saved without it: model.save(handler, {includeOptimizer: true}) keeps ' +
      "it); the plan trains with Keras's default Adam, learning rate 0.001 (options.train sets another)");
    return { type: 'adam', learning_rate: 0.001, epsilon_form: epsilonForm };
  }
  const c = config.config ?? {};
  const learningRate = c.learning_rate ?? c.learningRate ?? c.lr;
  if (typeof learningRate !== 'number') fail(`optimizer ${config.class_name}: no numeric learning rate (give options.train)`);
  switch (canonical(config.class_name)) {
    case 'adam':
      return { type: 'adam', learning_rate: learningRate, beta1: c.beta_1 ?? c.beta1 ?? 0.9,
        beta2: c.beta_2 ?? c.beta2 ?? 0.999, epsilon: c.epsilon ?? 1e-7, epsilon_form: epsilonForm };
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
  // The loss as the export writes it back: a string as given (Keras's alias mse by the name TF.js
  // knows), a Keras loss object by its name.
  const written = typeof configured === 'string' ? (configured === 'mse' ? 'mean_squared_error' : configured)
    : configured?.class_name ? configured.class_name.replace(/(?<=[a-z])(?=[A-Z])/g, '_').toLowerCase() : undefined;
  const mapped = (loss, fold) => ({ loss, fold, written });
  if (squared && activation !== 'softmax') return mapped('mean_squared_error', false);
  if (activation === 'sigmoid' && !fromLogits && (lossName === null || binary)) return mapped('sigmoid_cross_entropy', true);
  if (activation === 'softmax' && !fromLogits && (lossName === null || categorical)) return mapped('softmax_cross_entropy', true);
  if (activation === 'linear' && fromLogits && binary) return mapped('sigmoid_cross_entropy', false);
  if (activation === 'linear' && fromLogits && categorical) return mapped('softmax_cross_entropy', false);
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
 *   tokenOffsets: Object<string, number>, sparseInputs: string[]}}  tokenOffsets: per ids input, 1
 *   when its Embedding has mask_zero (fedleaf id i is Keras token i + 1); tokenOffset: their common
 *   value (0 without ids inputs, null when they differ); sparseInputs: the plan inputs that were
 *   Keras sparse inputs (feed them SparseTensors or CSR rows; exportTfjsLayersModel's
 *   options.sparseInputs writes them back as sparse InputLayers)
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
  const { loss, written } = outcome();
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
  // The plan's inputs in the model's order, which TF.js's predict takes an array of tensors in.
  const position = new Map(graph.inputs.map((key, k) => [graph.nodes.get(key).layer, k]));
  inputs.sort((a, b) => position.get(a.layer) - position.get(b.layer));
  const chain = isChain(inputs, layers, output);
  const inputSpec = (i) => (i.kind === 'dense' ? { type: 'dense', dim: i.dim } : (chain ? 'sparse_ids' : { type: 'sparse_ids' }));
  let planModel;
  if (chain) {
    // Keep what a chain has always imported to: 'tokens' or 'x', no "input" but the embedding's.
    const wanted = inputs[0].kind === 'dense' || inputs[0].sparse ? 'x' : 'tokens';
    const inputName = layers.some((l) => l.name === wanted) ? inputs[0].name : wanted;
    const chainLayers = layers.map(({ input: _, ...rest }) => (rest.type === 'embedding_bag' ? { ...rest, input: inputName } : rest));
    builder.offsets.set(inputName, builder.offsets.get(inputs[0].name) ?? 0);
    inputs[0].name = inputName;
    planModel = { inputs: { [inputName]: inputSpec(inputs[0]) }, layers: chainLayers, loss };
  } else {
    planModel = { inputs: Object.fromEntries(inputs.map((i) => [i.name, inputSpec(i)])), layers, output, loss };
  }

  // What the plan's model does not say of the Keras one, for the export (tfjs_plan_origin.js):
  // an input's Keras name where the plan renamed it, its dtype where it is not the export's own.
  const inputOrigins = {};
  for (const input of inputs.filter((i) => !i.layer.synthetic)) {
    const { name, dtype } = input.layer.config;
    const usual = input.kind === 'sparse_ids' && !input.sparse ? 'int32' : 'float32';
    const keptDtype = (dtype === 'float32' || dtype === 'int32') && dtype !== usual;
    const kept = { ...(name !== input.name ? { name } : {}), ...(keptDtype ? { dtype } : {}) };
    if (Object.keys(kept).length > 0) inputOrigins[input.name] = kept;
  }
  const origin = tfjsOrigin({ name: Array.isArray(model.config) ? null : model.config?.name, functional: !graph.sequential,
    loss: written, inputs: inputOrigins, poolings: builder.poolings, maskZero: builder.maskZero,
    outputActivation: builder.outputActivation });
  const plan = {
    model: planModel,
    train: options.train ?? { optimizer: optimizerFrom(trainingConfig, writtenByTfjs(modelJson), warn), epochs: 1, batch_size: 32 },
    updates: options.updates ?? builder.updates,
    ...(Object.keys(origin).length > 0 ? { tfjs: origin } : {}),
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
  const sparseInputs = inputs.filter((i) => i.sparse).map((i) => i.name);
  return { plan, model: modelBytes, tokenOffset, tokenOffsets, sparseInputs };
}
