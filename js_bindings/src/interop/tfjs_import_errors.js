// The errors of importTfjsLayersModel: "TF.js model import: <what>", and for a layer or topology
// fedleaf cannot map, the list of what it can.

export const SUPPORTED = 'InputLayer (ids, dense numbers, or sparse numbers read by Dense), Embedding + GlobalAveragePooling1D, Embedding + Flatten ' +
  '(one id per example; an Embedding may read several inputs), Dense, Activation, Dropout, SpatialDropout1D, ' +
  'Concatenate, Add, Multiply; one output';

export function fail(message) {
  throw new Error(`TF.js model import: ${message}`);
}

/** An Error for a layer or topology fedleaf cannot map, listing what it can. */
export function unsupported(message) {
  return fail(`${message} (supported: ${SUPPORTED})`);
}

/** "Dense 'out'": how messages name a Keras layer. */
export function layerLabel(layer) {
  return `${layer.class_name} '${layer.config?.name ?? '?'}'`;
}
