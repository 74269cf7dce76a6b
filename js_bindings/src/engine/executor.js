// createExecutor: the wasm module loaded and wrapped in the executor's API — safetensors,
// coalesce, datasets, training, evaluation and aggregation (the usage is in ../index.js).
// Errors from the C++ core arrive as JS Errors with the core's message and a `code`
// ('InvalidInput', 'NotFound', 'Conflict', 'Error', 'InternalError').

import { bytesOf } from './bytes.js';
import { loadModule } from './load_module.js';
import { datasetHandleFromRecords, featurizeRecords } from './records.js';
import { normalizeTensor, normalizeTensors, publicTensor, publicTensors } from './tensors.js';
import { Dataset, datasetApi, trainingApi } from './training.js';

function checkMetadata(metadata) {
  if (metadata === undefined) return {};
  if (metadata === null || typeof metadata !== 'object') {
    throw new TypeError('metadata must be an object of string values');
  }
  for (const [key, value] of Object.entries(metadata)) {
    if (typeof value !== 'string') throw new TypeError(`metadata '${key}' must be a string`);
  }
  return metadata;
}

/**
 * Loads the wasm module and returns an executor.
 * @param {{simd?: 'auto'|boolean, distUrl?: string|URL}} [options]
 *   simd: 'auto' (default) uses the SIMD build when WebAssembly.validate accepts SIMD;
 *   distUrl: where fedleaf_core*.{js,wasm} are served from (default: the package's dist/);
 *   a relative one is resolved against the page, the worker or Node's current directory.
 */
export async function createExecutor(options = {}) {
  const { module, simd } = await loadModule(options);
  const datasets = datasetApi(module);
  return {
    version: module.version(),
    simd,
    /** Bytes of the module's linear memory now: its high-water mark (wasm memory never shrinks). */
    get wasmMemoryBytes() {
      return module.HEAP8.buffer.byteLength;
    },
    encodeSafetensors(tensors, metadata) {
      return module.encodeSafetensors(normalizeTensors(tensors), checkMetadata(metadata));
    },
    decodeSafetensors(bytes) {
      const { tensors, metadata } = module.decodeSafetensors(bytesOf('bytes', bytes));
      return { tensors: publicTensors(tensors), metadata };
    },
    coalesce(tensor) {
      return publicTensor(module.coalesce(normalizeTensor('coalesce input', tensor)));
    },
    /**
     * The columns of the plan's inputs that have "features", from plain records (records.js):
     * [{name, kind: 'sparse_ids', offsets, ids, weights, numFeatures} | {name, kind: 'dense',
     * dense, width}].
     */
    featurizeRecords(records, plan) {
      return featurizeRecords(module, records, plan);
    },
    /**
     * A dataset of the plan's inputs from plain records, featurized and built in wasm by one call
     * (the records cross once; the same dataset as featurizeRecords then datasetFromInputs).
     * labels: one per record, or {targets, width} for mean_squared_error. What a LeafData
     * builds for each task's plan.
     */
    datasetFromRecords(records, labels, plan) {
      return new Dataset(datasetHandleFromRecords(module, records, labels, plan));
    },
    ...datasets,
    ...trainingApi(module),
  };
}
