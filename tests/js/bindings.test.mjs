// The wasm bindings report C++ errors through Module.takeError(), and js_bindings/src/engine/bindings.js
// throws them in JS: every registered binding is wrapped, and a failed call frees what it was given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createExecutor } from '../../js_bindings/src/index.js';
import { BINDINGS } from '../../js_bindings/src/engine/bindings.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// Every name registered with embind in wasm/, as "name" or "Class.name" / "Class#name".
function registeredBindings() {
  const names = new Set();
  for (const file of readdirSync(path.join(root, 'wasm'))) {
    if (!/\.(cc|h)$/.test(file)) continue;
    const text = readFileSync(path.join(root, 'wasm', file), 'utf8');
    for (const block of text.matchAll(/class_<\w+>\("(\w+)"\)([^;]*);/g)) {
      for (const [, kind, name] of block[2].matchAll(/\.(class_function|function)\("(\w+)"/g)) {
        names.add(kind === 'function' ? `${block[1]}#${name}` : `${block[1]}.${name}`);
      }
    }
    for (const [, name] of text.matchAll(/emscripten::function\("(\w+)"/g)) names.add(name);
  }
  names.delete('takeError');
  return names;
}

test('every binding registered in wasm/ is in the list that turns its errors into throws', () => {
  const listed = new Set(BINDINGS.functions);
  for (const [cls, { statics, methods }] of Object.entries(BINDINGS.classes)) {
    for (const name of statics) listed.add(`${cls}.${name}`);
    for (const name of methods) listed.add(`${cls}#${name}`);
  }
  const registered = registeredBindings();
  assert.ok(registered.size > 30, `found ${registered.size} registrations`);
  assert.deepEqual([...listed].sort(), [...registered].sort());
});

// Regression: the error was thrown from inside the call, skipping the C++ frames below it, so
// every failed call leaked its string arguments and the handles of its buffers: 3,000 rejected
// 100 kB plans grew wasm memory from 1 to 288 MB.
test('failed calls throw the core\'s error and free their arguments', async () => {
  const executor = await createExecutor();
  const model = new Uint8Array(1 << 20);
  const badPlan = JSON.stringify({ model: {}, padding: 'x'.repeat(100000) });
  const svmlight = `${'1 3:1 '.repeat(20000)}x`;
  const calls = [
    () => executor.validatePlan(badPlan),
    () => executor.initializeModel(badPlan, 1),
    () => executor.datasetFromSvmlight(svmlight),
    () => executor.decodeSafetensors(model),
  ];
  for (const call of calls) {
    assert.throws(call, (e) => e instanceof Error && e.code === 'InvalidInput' && e.message.length > 10);
  }
  const before = executor.wasmMemoryBytes;
  for (let i = 0; i < 300; i++) {
    for (const call of calls) assert.throws(call);
  }
  // 300 × (100 kB plan twice + 120 kB of svmlight) would be ~100 MB if each call leaked them.
  assert.ok(executor.wasmMemoryBytes - before < 8 << 20,
    `wasm memory grew from ${before} to ${executor.wasmMemoryBytes} bytes`);
  // A call that succeeds right after a failed one returns normally: the error was taken.
  assert.throws(() => executor.validatePlan('{'), /plan: not valid JSON/);
  assert.equal(typeof executor.version, 'string');
});

test('an allocation the wasm memory cannot hold is an Error that says so, and the module goes on', async () => {
  const executor = await createExecutor();
  const huge = {
    model: {
      inputs: { t: 'sparse_ids' },
      layers: [{ type: 'embedding_bag', name: 'emb', input: 't', vocab: 2 ** 21, dim: 512 },
        { type: 'dense', name: 'out', units: 2 }],
      loss: 'softmax_cross_entropy',
    },
    train: { optimizer: { type: 'sgd', learning_rate: 0.1 } },
    updates: { 'out/bias': { encoding: 'dense', aggregator: 'weighted_mean' } },
  };
  assert.throws(() => executor.initializeModel(huge, 1), (e) => e.code === 'InternalError' &&
    /^out of memory: wasm memory .* cannot hold what this call needs/.test(e.message));
  huge.model.layers[0].vocab = 16;
  assert.ok(executor.initializeModel(huge, 1).length > 16 * 512 * 4);
});
