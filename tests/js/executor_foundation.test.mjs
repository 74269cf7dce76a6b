// The executor under Node beyond the cases it shares with browsers
// (tests/e2e/browser/executor_cases.mjs, run under Node by tests/e2e/executor_cases.test.mjs):
// Node's SIMD support, and byte-identical safetensors interchange with the native build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createExecutor, wasmSimdSupported } from '../../js_bindings/src/index.js';
import { fixtureTensors } from '../e2e/browser/executor_cases.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const buildDir = process.env.FEDLEAF_BUILD_DIR ?? path.join(root, 'build');

test('Node loads the SIMD build by default', async () => {
  assert.equal(wasmSimdSupported(), true, 'Node 18+ supports wasm SIMD');
  assert.equal((await createExecutor()).simd, true);
});

test('a file written natively is read and re-written byte-identically by wasm, and vice versa', async (t) => {
  // tests/tools/safetensors_tool.cc `fixture` writes the same tensors as fixtureTensors().
  const tool = path.join(buildDir, 'tests/tools/safetensors_tool');
  assert.ok(existsSync(tool), `native tool missing: ${tool} (run scripts/build.sh)`);
  const dir = mkdtempSync(path.join(tmpdir(), 'fedleaf-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const nativeFile = path.join(dir, 'native.safetensors');
  execFileSync(tool, ['fixture', nativeFile]);
  const nativeBytes = new Uint8Array(readFileSync(nativeFile));

  const executor = await createExecutor();
  const wasmBytes = executor.encodeSafetensors(fixtureTensors(), { producer: 'native' });
  assert.deepEqual(wasmBytes, nativeBytes, 'wasm encoding of the fixture equals the native one');

  const decoded = executor.decodeSafetensors(nativeBytes);
  assert.deepEqual(executor.encodeSafetensors(decoded.tensors, decoded.metadata), nativeBytes);

  const wasmFile = path.join(dir, 'wasm.safetensors');
  const again = path.join(dir, 'again.safetensors');
  writeFileSync(wasmFile, executor.encodeSafetensors(fixtureTensors(), { producer: 'wasm' }));
  execFileSync(tool, ['roundtrip', wasmFile, again]);
  assert.deepEqual(readFileSync(again), readFileSync(wasmFile));
});
