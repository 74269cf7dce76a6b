// fedleaf-admin model: a round's published model (GET /v1/populations/{p}/rounds/{r}/model,
// public) written as the safetensors the server sent (--out FILE, byte for byte: a plan's
// "download_values": "f16" tensors arrive as F16), and/or as a TF.js Layers model (--tfjs DIR:
// model.json and weights.bin, what tf.loadLayersModel reads; interop/tfjs_layers_export.js, run
// on the wasm executor, which widens F16 tensors exactly). The round defaults to the status's
// current one: the latest published model, the final one once the population finished.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { AdminUsageError } from './admin_usage_error.js';
import { parseIntegerFlag } from './leaf_cli.js';

export const MODEL_FLAGS = {
  round: { type: 'string', value: 'R', help: "the round (a buffered population's version) whose model to fetch " +
    '(default: the current one, the final model once the population finished)' },
  out: { type: 'string', value: 'FILE', help: 'write the model to FILE as the safetensors the server sends' },
  tfjs: { type: 'string', value: 'DIR', help: 'write the model to DIR as a TF.js Layers model (model.json, weights.bin)' },
  baseline: { type: 'boolean', default: false,
    help: 'with --tfjs: load the baseline wasm build (default: the SIMD build where the engine supports it)' },
};

// `bytes` to `file` through a temporary file beside it: no half-written model under its name.
function writeWhole(file, bytes) {
  const partial = `${file}.partial-${process.pid}`;
  writeFileSync(partial, bytes);
  renameSync(partial, file);
}

/**
 * Writes the TF.js Layers export of `plan` + `modelBytes` into `dir` (created if missing):
 * model.json and weights.bin. Returns the files written.
 * @param {object} executor  from createExecutor()
 */
export async function writeTfjsModel(executor, plan, modelBytes, dir) {
  const { exportTfjsLayersModel } = await import('../interop/tfjs_layers_export.js');
  const exported = exportTfjsLayersModel(executor, plan, modelBytes, { weightsPath: 'weights.bin' });
  mkdirSync(dir, { recursive: true });
  const files = [path.join(dir, 'weights.bin'), path.join(dir, 'model.json')];
  // The weights first: a model.json on disk always has its shard.
  writeWhole(files[0], new Uint8Array(exported.weightData));
  writeWhole(files[1], JSON.stringify(exported.modelJson));
  return files;
}

/** model: download round R's model to --out and/or --tfjs. */
export async function modelCommand({ args, positionals: [population], client, err }) {
  if (args.out === undefined && args.tfjs === undefined) {
    throw new AdminUsageError('model needs --out FILE or --tfjs DIR (or both)');
  }
  let round;
  if (args.round !== undefined) {
    round = parseIntegerFlag('round', args.round, 0);
    if (typeof round === 'string') throw new AdminUsageError(round);
  }
  // The status gives the current round and the plan an export needs.
  const status = round === undefined || args.tfjs !== undefined ? await client.status(population) : undefined;
  round ??= status.round;
  const model = await client.downloadModel(client.modelUrl(population, round), { token: false });
  if (args.out !== undefined) {
    writeWhole(args.out, model.bytes);
    err(`fedleaf-admin: round ${round} of ${population}: ${model.bytes.length} bytes (etag ${model.etag}) -> ${args.out}`);
  }
  if (args.tfjs !== undefined) {
    const { createExecutor } = await import('../engine/executor.js');
    const executor = await createExecutor({ simd: args.baseline ? false : 'auto' });
    await writeTfjsModel(executor, status.plan, model.bytes, args.tfjs);
    err(`fedleaf-admin: round ${round} of ${population} as a TF.js Layers model -> ${path.join(args.tfjs, 'model.json')} ` +
      '+ weights.bin');
  }
  return 0;
}
