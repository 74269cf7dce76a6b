// A fedleaf plan + safetensors model → a TF.js Layers model: tf.io ModelArtifacts, which
// tf.io.fromMemory takes as they are, plus the model.json and its one weight shard for disk (what
// tf.loadLayersModel reads from a URL, and tensorflowjs_converter turns into a Keras model).
//
//   const exported = exportTfjsLayersModel(executor, plan, modelBytes);
//   const tfModel = await tf.loadLayersModel(tf.io.fromMemory(exported));
//   await writeFile('model.json', JSON.stringify(exported.modelJson));
//   await writeFile('weights.bin', new Uint8Array(exported.weightData));
//
// The mapping is the inverse of tfjs_layers_import.js: embedding_bag (combiner mean) →
// Embedding + GlobalAveragePooling1D (fedleaf id = token id, no mask: feed one example's ids as
// an unpadded sequence); dense → Dense; relu/sigmoid/tanh → Activation; the loss's sigmoid or
// softmax becomes the last Dense's activation (or a final Activation layer), and the training
// config holds the matching loss and the plan's optimizer. Other plans — a sum or sqrtn
// combiner, which GlobalAveragePooling1D cannot express — are an Error naming the layer.

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

/**
 * @param {{decodeSafetensors: Function, version: string}} executor  from createExecutor()
 * @param {object|string} plan  a fedleaf plan (its model section is exported)
 * @param {Uint8Array|ArrayBuffer} modelBytes  safetensors with every parameter the plan declares
 * @param {{weightsPath?: string, name?: string}} [options]  the shard's file name in modelJson
 *   ('weights.bin') and the model's name ('fedleaf')
 * @returns {{format: string, generatedBy: string, convertedBy: null, modelTopology: object,
 *   trainingConfig?: object, weightSpecs: object[], weightData: ArrayBuffer, modelJson: object}}
 *   ModelArtifacts, and modelJson: the same with weightsManifest (paths: [weightsPath]) in place
 *   of weightSpecs and weightData
 */
export function exportTfjsLayersModel(executor, plan, modelBytes, options = {}) {
  const { weightsPath = 'weights.bin', name = 'fedleaf' } = options;
  const parsed = typeof plan === 'string' ? JSON.parse(plan) : plan;
  const spec = parsed?.model;
  if (!spec?.layers?.length) fail('the plan has no model layers');
  const { tensors } = executor.decodeSafetensors(modelBytes);
  const [input] = Object.values(spec.inputs ?? {});
  const layers = [];
  const weights = [];  // {name, shape, data}
  const add = (className, config) => {
    if (layers.length === 0) {
      config.batch_input_shape = className === 'Embedding' ? [null, null] : [null, input?.dim];
    }
    layers.push({ class_name: className, config: { trainable: true, dtype: 'float32', ...config } });
  };
  for (const [i, layer] of spec.layers.entries()) {
    const layerName = layer.name ?? `${layer.type}_${i}`;
    switch (layer.type) {
      case 'embedding_bag': {
        if ((layer.combiner ?? 'mean') !== 'mean') {
          fail(`embedding_bag '${layerName}': combiner ${layer.combiner} has no TF.js equivalent (mean only)`);
        }
        const table = denseTensor(tensors, `${layerName}/weight`);
        add('Embedding', { name: layerName, input_dim: layer.vocab, output_dim: layer.dim, mask_zero: false,
          embeddings_initializer: { class_name: 'RandomUniform', config: { minval: -0.05, maxval: 0.05, seed: null } },
          embeddings_regularizer: null, activity_regularizer: null, embeddings_constraint: null, input_length: null });
        weights.push({ name: `${layerName}/embeddings`, shape: table.shape, data: table.data });
        add('GlobalAveragePooling1D', { name: `${layerName}_mean`, data_format: 'channels_last' });
        break;
      }
      case 'dense': {
        const useBias = layer.use_bias !== false;
        const kernel = denseTensor(tensors, `${layerName}/weight`);
        add('Dense', { name: layerName, units: layer.units, activation: layer.activation ?? 'linear', use_bias: useBias,
          kernel_initializer: { class_name: 'GlorotUniform', config: { seed: null } },
          bias_initializer: { class_name: 'Zeros', config: {} }, kernel_regularizer: null, bias_regularizer: null,
          activity_regularizer: null, kernel_constraint: null, bias_constraint: null });
        weights.push({ name: `${layerName}/kernel`, shape: kernel.shape, data: kernel.data });
        if (useBias) {
          const bias = denseTensor(tensors, `${layerName}/bias`);
          weights.push({ name: `${layerName}/bias`, shape: bias.shape, data: bias.data });
        }
        break;
      }
      case 'relu':
      case 'sigmoid':
      case 'tanh':
        add('Activation', { name: layer.name ?? `${layer.type}_${i}`, activation: layer.type });
        break;
      default:
        fail(`layer type ${layer.type} '${layerName}' is not supported`);
    }
  }
  const sigmoid = spec.loss === 'sigmoid_cross_entropy';
  const output = sigmoid ? 'sigmoid' : 'softmax';
  const lastLayer = layers.at(-1);
  if (lastLayer.class_name === 'Dense' && lastLayer.config.activation === 'linear') {
    lastLayer.config.activation = output;
  } else {
    add('Activation', { name: `${name}_${output}`, activation: output });
  }

  const byteLength = weights.reduce((n, w) => n + w.data.length * 4, 0);
  const weightData = new ArrayBuffer(byteLength);
  let at = 0;
  for (const w of weights) {
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
    modelTopology: { class_name: 'Sequential', config: { name, layers }, keras_version: 'tfjs-layers', backend: 'tensor_flow.js' },
    ...(optimizer ? { trainingConfig: { loss: sigmoid ? 'binary_crossentropy' : 'sparse_categorical_crossentropy',
      metrics: null, sample_weight_mode: null, loss_weights: null, optimizer_config: optimizer } } : {}),
    weightSpecs: weights.map((w) => ({ name: w.name, shape: w.shape, dtype: 'float32' })),
  };
  const { weightSpecs, ...described } = artifacts;
  const modelJson = { ...described, weightsManifest: [{ paths: [weightsPath], weights: weightSpecs }] };
  return { ...artifacts, weightData, modelJson };
}
