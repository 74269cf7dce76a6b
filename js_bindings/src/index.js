// fedleaf — the leaf executor in WebAssembly.
//
//   import { createExecutor } from 'fedleaf';
//   const executor = await createExecutor();            // picks the SIMD build when supported
//   const bytes = executor.encodeSafetensors(
//       {w: {dtype: 'F32', shape: [2], data: new Float32Array([1, 2])}}, {task_id: '7'});
//   const {tensors, metadata} = executor.decodeSafetensors(bytes);
//   const data = executor.datasetFromTexts(texts, labels, plan);
//   const {bytes: update, loss} = await executor.train(plan, executor.initializeModel(plan, 1), data);
//
// Errors from the C++ core arrive as JS Errors with the core's message and a `code`
// ('InvalidInput', 'NotFound', 'Conflict', 'Error', 'InternalError').
//
// The folders: engine/ (the wasm module and the executor over it), protocol/ (the task
// repository's protocol), leaf/ (runLeaf and what a leaf keeps), interop/ (TF.js Layers models),
// datasets/ (SpamAssassin), privacy/ (the privacy calculator), node/ (the CLIs' Node-only parts).

export { createExecutor } from './engine/executor.js';
export { wasmSimdSupported } from './engine/wasm_features.js';
export { runLeaf } from './leaf/run_leaf.js';
export { LeafStoppedError } from './leaf/leaf_stopped_error.js';
export { memoryDeviceStore } from './leaf/device_store.js';
export { indexedDbDeviceStore } from './leaf/indexeddb_device_store.js';
export { Dataset } from './engine/training.js';
export { PlanHandle } from './engine/plan_handle.js';
export { parsePlan } from './engine/parse_plan.js';
export { LeafData, planTakesRecords } from './leaf/leaf_data.js';
export { TextLeafData } from './leaf/text_leaf_data.js';
export { RecordLeafData } from './leaf/record_leaf_data.js';
export { formatBytes } from './leaf/format_bytes.js';
export { ProtocolClient } from './protocol/protocol_client.js';
export { ProtocolError } from './protocol/protocol_error.js';
export { RequestTimeoutError } from './protocol/request_timeout_error.js';
export { networkErrorMessage } from './protocol/network_error.js';
export { VERSION, PROTOCOL_VERSION } from './protocol/version.js';
export { importTfjsLayersModel } from './interop/tfjs_layers_import.js';
export { exportTfjsLayersModel } from './interop/tfjs_layers_export.js';
export { planPrivacy } from './privacy/plan_privacy.js';

