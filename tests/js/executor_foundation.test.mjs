// The foundation of the JS API: loading both wasm builds, the safetensors codec across the
// boundary, errors, and byte-identical interchange with the native build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createExecutor, wasmSimdSupported } from '../../js_bindings/src/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const buildDir = process.env.FEDLEAF_BUILD_DIR ?? path.join(root, 'build');
const packageJson = JSON.parse(readFileSync(path.join(root, 'js_bindings/package.json'), 'utf8'));

// The same tensors tests/tools/safetensors_tool.cc writes with `fixture`.
function fixtureTensors() {
  return {
    'dense/f32': { shape: [2, 3], data: new Float32Array([1.5, -2, 0.25, 3, 4, -0]) },
    'dense/f64': { shape: [2], data: new Float64Array([1e-300, 2.5]) },
    'dense/i32': { shape: [3], data: new Int32Array([-1, 7, 2147483647]) },
    'dense/i64': { shape: [1], data: new BigInt64Array([-9007199254740993n]) },
    'dense/u8': { shape: [3], data: new Uint8Array([0, 128, 255]) },
    coo: {
      encoding: 'coo',
      indices: new BigInt64Array([0n, 2n, 3n, 1n]),
      values: new Float32Array([0.5, -1]),
      dense_shape: [4, 3],
    },
    'emb/weight': {
      encoding: 'row_sparse',
      indices: new Int32Array([1, 5]),
      values: new Float32Array([1, 2, 3, 4]),
      dense_shape: [8, 2],
    },
  };
}

test('auto picks the SIMD build exactly when the engine validates SIMD', async () => {
  const executor = await createExecutor();
  assert.equal(executor.simd, wasmSimdSupported());
  assert.equal(wasmSimdSupported(), true, 'Node 18+ supports wasm SIMD');
});

for (const simd of [true, false]) {
  const variant = simd ? 'SIMD' : 'baseline';

  test(`${variant} build loads and reports the package version`, async () => {
    const executor = await createExecutor({ simd });
    assert.equal(executor.simd, simd);
    assert.equal(executor.version, packageJson.version);
  });

  test(`${variant} build round-trips a 1e6-element tensor`, async () => {
    const executor = await createExecutor({ simd });
    const data = new Float32Array(1_000_000);
    for (let i = 0; i < data.length; i++) data[i] = Math.sin(i) * 1000;
    const bytes = executor.encodeSafetensors({ big: { shape: [1000, 1000], data } }, { k: 'v' });
    assert.equal(bytes.length % 8, 0);
    const { tensors, metadata } = executor.decodeSafetensors(bytes);
    assert.deepEqual(metadata, { k: 'v' });
    assert.deepEqual(tensors.big.shape, [1000, 1000]);
    assert.equal(tensors.big.dtype, 'F32');
    assert.deepEqual(tensors.big.data, data);
  });

  test(`${variant} build round-trips every dtype and both sparse encodings`, async () => {
    const executor = await createExecutor({ simd });
    const input = fixtureTensors();
    const { tensors } = executor.decodeSafetensors(executor.encodeSafetensors(input));
    for (const [name, t] of Object.entries(input)) {
      if (t.encoding) {
        assert.equal(tensors[name].encoding, t.encoding, name);
        assert.deepEqual(tensors[name].indices, t.indices, name);
        assert.deepEqual(tensors[name].values, t.values, name);
        assert.deepEqual(tensors[name].dense_shape, t.dense_shape, name);
      } else {
        assert.deepEqual(tensors[name].shape, t.shape, name);
        assert.deepEqual(tensors[name].data, t.data, name);
      }
    }
  });

  test(`${variant} build throws an Error with the core's message on a malformed buffer`, async () => {
    const executor = await createExecutor({ simd });
    const good = executor.encodeSafetensors({ w: { shape: [4], data: new Float32Array(4) } });
    assert.throws(() => executor.decodeSafetensors(good.subarray(0, good.length - 3)), (e) => {
      assert.ok(e instanceof Error);
      assert.equal(e.code, 'InvalidInput');
      assert.match(e.message, /tensor 'w': data_offsets end 16 is out of bounds of the 13-byte data section/);
      return true;
    });
    assert.throws(() => executor.decodeSafetensors(new Uint8Array([1, 2])),
      { message: /truncated input: 2 bytes/ });
    assert.throws(
      () => executor.encodeSafetensors({ w: { dtype: 'F32', shape: [3], data: new Float32Array(4) } }),
      { code: 'InvalidInput', message: /tensor 'w': 16 bytes do not match shape \[3\] of F32/ });
    assert.throws(
      () => executor.encodeSafetensors({
        s: { encoding: 'coo', indices: new BigInt64Array([7n]), values: new Float32Array([1]), dense_shape: [5] },
      }),
      { message: /tensor 's': index 7 at entry 0, dimension 0 is out of range for dense_shape \[5\]/ });
  });

  test(`${variant} build coalesces sparse tuples`, async () => {
    const executor = await createExecutor({ simd });
    const c = executor.coalesce({
      encoding: 'row_sparse',
      indices: new Int32Array([4, 1, 4]),
      values: new Float64Array([1, 2, 10, 20, 100, 200]),
      dense_shape: [6, 2],
    });
    assert.deepEqual(c.indices, new Int32Array([1, 4]));
    assert.deepEqual(c.values, new Float64Array([10, 20, 101, 202]));
    assert.throws(() => executor.coalesce({ shape: [1], data: new Float32Array(1) }),
      { message: /expected a coo or row_sparse tensor/ });
  });
}

test('a file written natively is read and re-written byte-identically by wasm, and vice versa', async () => {
  const tool = path.join(buildDir, 'tests/tools/safetensors_tool');
  assert.ok(existsSync(tool), `native tool missing: ${tool} (run scripts/build.sh)`);
  const dir = mkdtempSync(path.join(tmpdir(), 'fedleaf-'));
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
