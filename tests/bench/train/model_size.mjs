// What a workload's model and data weigh: parameters, the bytes a leaf must hold to train and the
// data densified (the train bench's memory columns).


// A workload's inputs by plan input name: {offsets, ids} or {dense, width} (a chain workload's
// one CSR input under the plan's only input name).
export function inputsOf(plan, data) {
  if (data.inputs) return data.inputs;
  return { [Object.keys(plan.model.inputs)[0]]: { offsets: data.offsets, ids: data.ids, numFeatures: data.numFeatures } };
}

// The graph's layers with their tables and widths: each embedding_bag's owning table layer,
// each layer's input width (dense layers' fan-in) and output width.
function layerShapes(plan) {
  const width = {};
  for (const [name, spec] of Object.entries(plan.model.inputs)) width[name] = spec.dim ?? 0;
  const byName = {};
  let last = null;
  return plan.model.layers.map((l, i) => {
    const reads = l.inputs ?? [l.input ?? (i === 0 ? Object.keys(plan.model.inputs)[0] : last)];
    const owner = l.type === 'embedding_bag' ? (l.table ? byName[l.table] : l) : null;
    const inWidth = width[reads[0]];
    let out = inWidth;
    if (owner) out = owner.dim;
    else if (l.type === 'concatenate') out = reads.reduce((sum, r) => sum + width[r], 0);
    else if (l.type === 'dense') out = l.units;
    const name = l.name ?? `#${i}`;
    byName[name] = l;
    width[name] = out;
    last = name;
    return { layer: l, owner, reads, inWidth, out };
  });
}

// Every parameter of the model (whole tables).
export function parameterCount(plan) {
  return layerShapes(plan).reduce((sum, { layer, owner, inWidth }) => {
    if (owner === layer) return sum + layer.vocab * layer.dim;
    if (layer.type === 'dense') return sum + (inWidth + (layer.use_bias === false ? 0 : 1)) * layer.units;
    return sum;
  }, 0);
}

// Bytes a leaf must hold to train: the embedding rows its data touch (per table, the union over
// the inputs that share it) and every dense parameter, the optimizer's state for them (momentum
// 1, Adam 2 values per parameter) and the data.
export function trainedBytes(plan, data, dataBytes) {
  const inputs = inputsOf(plan, data);
  const touched = new Map();
  let parameters = 0;
  for (const { layer, owner, reads, inWidth } of layerShapes(plan)) {
    if (owner) {
      if (!touched.has(owner)) touched.set(owner, new Set());
      for (const id of inputs[reads[0]].ids) touched.get(owner).add(id);
    } else if (layer.type === 'dense') {
      parameters += (inWidth + (layer.use_bias === false ? 0 : 1)) * layer.units;
    }
  }
  let distinct = 0;
  for (const [owner, ids] of touched) {
    distinct += ids.size;
    parameters += ids.size * owner.dim;
  }
  const slots = { sgd: 0, momentum: 1, adam: 2 }[plan.train.optimizer.type ?? 'sgd'];
  return { distinct_ids: distinct, trained_parameters: parameters, optimizer_values: slots * parameters,
    trained_bytes: 4 * (parameters + slots * parameters) + dataBytes };
}

// The data's bytes (4 per id, offset, weight, value and label) and its bytes densified (every
// sparse input as a row of its id range, every dense input as is, per example).
export function dataSizes(plan, data) {
  let bytes = 4 * (data.labels.length + (data.weights?.length ?? 0));
  let densifiedWidth = 0;
  for (const input of Object.values(inputsOf(plan, data))) {
    bytes += 4 * (input.dense ? input.dense.length : input.offsets.length + input.ids.length);
    densifiedWidth += input.dense ? input.width : input.numFeatures;
  }
  return { dataBytes: bytes, densifiedBytes: 4 * data.labels.length * densifiedWidth };
}
