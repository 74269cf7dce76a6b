// A workload as the train bench's engines read it: one safetensors file of CSR inputs and labels
// (the plan in its metadata), and the initial model beside it.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { multiInputData } from './wide_deep_workload.mjs';

// A workload file read in plain JS (dtypes I32 / F32 only), never through a fedleaf module: a
// wasm engine's linear memory then holds what training needs, not the decoding of the
// benchmark's own input file.
export function readSafetensors(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerSize = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerSize)));
  const tensors = {};
  for (const [name, spec] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [begin, end] = spec.data_offsets;
    const data = bytes.slice(8 + headerSize + begin, 8 + headerSize + end);
    const Type = { I32: Int32Array, F32: Float32Array }[spec.dtype];
    if (!Type) throw new Error(`workload file: tensor ${name} has dtype ${spec.dtype}`);
    tensors[name] = { data: new Type(data.buffer, 0, (end - begin) / Type.BYTES_PER_ELEMENT), shape: spec.shape };
  }
  return { tensors, metadata: header.__metadata__ ?? {} };
}

export function readWorkload(file) {
  const { tensors, metadata } = readSafetensors(new Uint8Array(readFileSync(file)));
  if (metadata.inputs) return { plan: metadata.plan, ...multiInputData(tensors, metadata) };
  return {
    plan: metadata.plan,
    numFeatures: Number(metadata.num_features),
    offsets: tensors.offsets.data,
    ids: tensors.ids.data,
    labels: tensors.labels.data,
    weights: tensors.weights ? tensors.weights.data : new Float32Array(0),
  };
}

// A multi-input workload's input as the wasm module takes it: ids and offsets as Uint32Array views.
export function asUint32(input) {
  if (input.dense) return { sparse: false, dense: input.dense, width: input.width };
  return {
    sparse: true, offsets: new Uint32Array(input.offsets.buffer), ids: new Uint32Array(input.ids.buffer),
    weights: new Float32Array(0), numFeatures: input.numFeatures,
  };
}

// Every engine's initial model: initialize_model(plan, 1), written next to the workload's data.
export function modelFileOf(file) {
  return file.replace(/\.safetensors$/, '.model.safetensors');
}

export function csrFile(executor, dir, workload, data) {
  const file = path.join(dir, `${workload.name}.safetensors`);
  const bytes = executor.encodeSafetensors({
    offsets: { dtype: 'I32', shape: [data.offsets.length], data: data.offsets },
    ids: { dtype: 'I32', shape: [data.ids.length], data: data.ids },
    labels: { dtype: 'I32', shape: [data.labels.length], data: data.labels },
  }, { plan: JSON.stringify(workload.plan), num_features: String(data.numFeatures), workload: workload.name });
  writeFileSync(file, bytes);
  return file;
}
