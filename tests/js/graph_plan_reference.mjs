// A reference forward pass of a fedleaf plan's model in float64, in plain JS: the graph format of
// issue 29 (/work/spec29.md §1, plan.h) — named inputs, layers reading "input" or "inputs" (default:
// the previous layer, or the only input), shared tables ("table"), concatenate, add, dense,
// relu/sigmoid/tanh, dropout (the identity: inference), an embedding_bag's use_bias — and so every
// chain plan too. Test code:
// the TF.js interop tests check the import's mapping against it (TF.js's predictions equal the
// plan's meaning) independently of the C++ executor.
//
//   const { predictions } = referenceForward(plan, executor.decodeSafetensors(model).tensors,
//     { body: { ids, offsets }, numeric: { dense, width } });
//   predictions[i]   // example i: [p] (sigmoid), class probabilities (softmax), outputs (mse)

function activate(type, v) {
  switch (type) {
    case 'relu': return v.map((x) => Math.max(x, 0));
    case 'sigmoid': return v.map((x) => 1 / (1 + Math.exp(-x)));
    case 'tanh': return v.map((x) => Math.tanh(x));
    default: throw new Error(`reference: activation ${type}`);
  }
}

function softmax(v) {
  const top = Math.max(...v);
  const e = v.map((x) => Math.exp(x - top));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

function embeddingBag(layer, table, column, example) {
  const [, dim] = table.shape;
  const out = new Array(dim).fill(0);
  const { ids, offsets, weights } = column;
  let norm = 0;
  for (let j = offsets[example]; j < offsets[example + 1]; j++) {
    const w = weights ? weights[j] : 1;
    for (let d = 0; d < dim; d++) out[d] += w * table.data[ids[j] * dim + d];
    norm += (layer.combiner ?? 'mean') === 'sqrtn' ? w * w : Math.abs(w);
  }
  const combiner = layer.combiner ?? 'mean';
  if (combiner === 'sum' || norm === 0) return out;
  const scale = combiner === 'mean' ? 1 / norm : 1 / Math.sqrt(norm);
  return out.map((x) => x * scale);
}

function dense(layer, tensors, x) {
  const kernel = tensors[`${layer.name}/weight`];
  const bias = tensors[`${layer.name}/bias`];
  const [fanIn, units] = kernel.shape;
  if (x.length !== fanIn) throw new Error(`reference: dense '${layer.name}' takes ${fanIn}, got ${x.length}`);
  const y = new Array(units).fill(0);
  for (let u = 0; u < units; u++) {
    let s = layer.use_bias === false ? 0 : bias.data[u];
    for (let i = 0; i < fanIn; i++) s += x[i] * kernel.data[i * units + u];
    y[u] = s;
  }
  return layer.activation ? activate(layer.activation, y) : y;
}

/**
 * @param {object} plan  a plan ({model}) in the graph or chain form
 * @param {Object<string, {shape: number[], data: Float32Array}>} tensors  the model's tensors
 * @param {Object<string, {ids, offsets, weights?}|{dense, width}>} inputs  by input name (a
 *   one-input plan also takes its one column under any name)
 * @returns {{outputs: number[][], predictions: number[][]}}  per example: the output layer's
 *   values, and what the loss makes of them
 */
export function referenceForward(plan, tensors, inputs) {
  const model = plan.model;
  const inputNames = Object.keys(model.inputs);
  const columns = {};
  for (const name of inputNames) {
    const column = inputs[name] ?? (inputNames.length === 1 && Object.keys(inputs).length === 1 ? Object.values(inputs)[0] : null);
    if (!column) throw new Error(`reference: no data for input '${name}'`);
    columns[name] = column;
  }
  const count = (column) => (column.offsets ? column.offsets.length - 1 : column.dense.length / column.width);
  const examples = count(columns[inputNames[0]]);
  const outputs = [];
  for (let e = 0; e < examples; e++) {
    const values = new Map();
    for (const name of inputNames) {
      const c = columns[name];
      if (c.dense) values.set(name, Array.from(c.dense.slice(e * c.width, (e + 1) * c.width)));
    }
    model.layers.forEach((layer, i) => {
      const reads = layer.inputs ?? [layer.input ?? (i === 0 ? (inputNames.length === 1 ? inputNames[0] : null)
        : model.layers[i - 1].name)];
      const name = layer.name ?? `${layer.type}_${i}`;
      const x = reads.map((r) => {
        if (layer.type === 'embedding_bag') return null;
        if (!values.has(r)) throw new Error(`reference: layer '${name}' reads '${r}', not computed yet`);
        return values.get(r);
      });
      let y;
      switch (layer.type) {
        case 'embedding_bag':
          y = embeddingBag(layer, tensors[`${layer.table ?? layer.name}/weight`], columns[reads[0]], e);
          // use_bias (a Keras Dense on a sparse input): the bias after the combiner, also for an
          // example without ids.
          if (layer.use_bias === true) y = y.map((v, k) => v + tensors[`${layer.name}/bias`].data[k]);
          break;
        case 'dense': y = dense(layer, tensors, x[0]); break;
        case 'relu': case 'sigmoid': case 'tanh': y = activate(layer.type, x[0]); break;
        case 'dropout': y = x[0]; break;
        case 'concatenate': y = x.flat(); break;
        case 'add': y = x[0].map((v, k) => x.reduce((s, xi) => s + xi[k], 0)); break;
        case 'multiply': y = x[0].map((v, k) => x.reduce((p, xi) => p * xi[k], 1)); break;
        default: throw new Error(`reference: layer type ${layer.type}`);
      }
      values.set(name, y);
    });
    outputs.push(values.get(model.output ?? model.layers.at(-1).name));
  }
  const predictions = outputs.map((z) => {
    if (model.loss === 'sigmoid_cross_entropy') return activate('sigmoid', z);
    if (model.loss === 'softmax_cross_entropy') return softmax(z);
    return z;
  });
  return { outputs, predictions };
}

/** The largest absolute difference of two equally long arrays of numbers (nested ones flattened). */
export function maxDifference(a, b) {
  const x = a.flat(Infinity);
  const y = b.flat(Infinity);
  if (x.length !== y.length) throw new Error(`maxDifference: lengths ${x.length} and ${y.length}`);
  return x.reduce((worst, v, i) => Math.max(worst, Math.abs(v - y[i])), 0);
}
