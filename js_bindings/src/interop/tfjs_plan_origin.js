// The plan's "tfjs" section: what importTfjsLayersModel keeps of the Keras model a plan came
// from that the plan's model does not say, so exportTfjsLayersModel gives that model back — its
// inputs, layer names, loss and masked rows — rather than fedleaf's reading of it. The core
// accepts the section without reading it (src/core/train/plan.h); this file is its one writer
// (tfjsOrigin, called by the import) and its one reader (readTfjsOrigin, by the export).
//
//   "tfjs": {
//     "name": "wide_and_deep",            the model's name
//     "functional": true,                 a functional model (Model / Functional), exported as one
//                                         even when its plan is a chain (else Sequential)
//     "loss": "categoricalCrossentropy",  the training config's loss as written (a Keras loss
//                                         object: its name), which the plan's loss only classifies
//     "inputs": {"<plan input>": {"name": "<InputLayer>", "dtype": "float32" | "int32"}},
//     "poolings": {"<embedding_bag>": "<its GlobalAveragePooling1D or Flatten>"}
//                                         (a table's owner is named after its Embedding)
//     "mask_zero": {"<embedding_bag>": [row 0 of the Embedding]}
//                                         Embedding(vocab + 1, mask_zero): fedleaf id i is token
//                                         i + 1 and the plan's table holds rows 1..vocab
//     "output_activation": "<Activation>" the output's sigmoid or softmax was this Activation layer
//   }
// Every field is optional; a plan without the section exports as fedleaf writes any plan.

function fail(message) {
  throw new Error(`TF.js model export: plan.tfjs${message}`);
}

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The section from what the import saw; fields with nothing to keep are left out. */
export function tfjsOrigin({ name, functional, loss, inputs, poolings, maskZero, outputActivation }) {
  const origin = {};
  if (typeof name === 'string' && name) origin.name = name;
  if (functional) origin.functional = true;
  if (loss !== undefined) origin.loss = loss;
  if (Object.keys(inputs).length > 0) origin.inputs = inputs;
  if (Object.keys(poolings).length > 0) origin.poolings = poolings;
  if (Object.keys(maskZero).length > 0) origin.mask_zero = maskZero;
  if (outputActivation) origin.output_activation = outputActivation;
  return origin;
}

// Checks that a name map holds names (the section may be hand-edited like the rest of a plan).
function names(map, field) {
  if (map === undefined) return {};
  if (!isObject(map) || Object.values(map).some((v) => typeof v !== 'string' || !v)) {
    fail(`.${field}: expected an object of layer names`);
  }
  return map;
}

/**
 * The section of `plan` with its maps defaulted to {}, checked against the plan's model:
 * mask_zero rows have the table's dim, names are strings.
 */
export function readTfjsOrigin(plan, layerByName) {
  const origin = plan.tfjs ?? {};
  if (!isObject(origin)) fail(': expected an object');
  const inputs = origin.inputs ?? {};
  if (!isObject(inputs)) fail('.inputs: expected an object');
  for (const [input, spec] of Object.entries(inputs)) {
    if (!isObject(spec) || (spec.name !== undefined && typeof spec.name !== 'string') ||
      (spec.dtype !== undefined && spec.dtype !== 'float32' && spec.dtype !== 'int32')) {
      fail(`.inputs.${input}: expected {name, dtype: float32 | int32}`);
    }
  }
  const maskZero = origin.mask_zero ?? {};
  if (!isObject(maskZero)) fail('.mask_zero: expected an object');
  for (const [layer, row] of Object.entries(maskZero)) {
    const dim = layerByName.get(layer)?.dim;
    if (!Array.isArray(row) || row.length !== dim || row.some((v) => typeof v !== 'number')) {
      fail(`.mask_zero.${layer}: expected row 0 of the table, ${dim ?? '?'} numbers`);
    }
  }
  if (origin.loss !== undefined && typeof origin.loss !== 'string') fail('.loss: expected a loss name');
  if (origin.output_activation !== undefined && typeof origin.output_activation !== 'string') {
    fail('.output_activation: expected a layer name');
  }
  return { ...origin, inputs, maskZero, poolings: names(origin.poolings, 'poolings') };
}
