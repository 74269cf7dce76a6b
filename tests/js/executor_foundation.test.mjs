// The executor under Node beyond the cases it shares with browsers
// (tests/e2e/browser/executor_cases.mjs, run under Node by tests/e2e/executor_cases.test.mjs):
// Node's SIMD support, byte-identical safetensors interchange with the native build, the checks of
// dataset inputs in JS (a bad id, offset, label or size throws, naming it, instead of being
// wrapped or truncated on its way to wasm), and every BytesLike wherever bytes are taken.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createExecutor, wasmSimdSupported } from '../../js_bindings/src/index.js';
import { SMALL_TEXT_PLAN, fixtureTensors } from '../e2e/browser/executor_cases.mjs';

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

// Throws exactly `Type` with exactly `message`.
function throwsExactly(fn, Type, message, what) {
  assert.throws(fn, (e) => {
    assert.equal(e.constructor, Type, `${what}: ${e.constructor.name}: ${e.message}`);
    assert.equal(e.message, message, what);
    return true;
  }, what);
}

// Builds, reads what the dataset holds, frees it.
function contents(dataset) {
  try {
    return {
      size: dataset.size, numFeatures: dataset.numFeatures, ids: [...dataset.distinctIds()], labels: [...dataset.labels],
    };
  } finally {
    dataset.delete();
  }
}

const CSR = { offsets: [0, 2, 3], ids: [1, 2, 3], labels: [0, 1] };

test('dataset inputs that a conversion would rewrite are rejected, naming the argument, the index and the rule', async () => {
  const executor = await createExecutor();
  const csr = (fields) => () => executor.datasetFromCsr({ ...CSR, ...fields });
  const ids32 = 'is not an integer in [0, 2^32)';
  const labels31 = 'is not an integer in [0, 2^31)';
  const float32 = 'is not a finite number in float32 range';
  const cases = [
    // [what, call, error type, message]
    ['id 2^32 + 5 (wrapped to 5)', csr({ ids: [1, 2 ** 32 + 5, 3] }), RangeError, `ids[1]: 4294967301 ${ids32}`],
    ['id 2^32', csr({ ids: [1, 2, 2 ** 32] }), RangeError, `ids[2]: 4294967296 ${ids32}`],
    ['id -2 (wrapped to 2^32 - 2)', csr({ ids: [1, -2, 3] }), RangeError, `ids[1]: -2 ${ids32}`],
    ['id 1.7 (truncated)', csr({ ids: [1, 1.7, 3] }), RangeError, `ids[1]: 1.7 ${ids32}`],
    ['id NaN (zeroed)', csr({ ids: [NaN, 2, 3] }), RangeError, `ids[0]: NaN ${ids32}`],
    ['id Infinity', csr({ ids: [1, 2, Infinity] }), RangeError, `ids[2]: Infinity ${ids32}`],
    ['id "abc" (zeroed)', csr({ ids: [1, 2, 'abc'] }), TypeError, `ids[2]: "abc" ${ids32}`],
    ['id "2" (a numeric string)', csr({ ids: [1, '2', 3] }), TypeError, `ids[1]: "2" ${ids32}`],
    ['id null', csr({ ids: [1, null, 3] }), TypeError, `ids[1]: null ${ids32}`],
    ['a hole in ids', csr({ ids: [1, , 3] }), TypeError, `ids[1]: undefined ${ids32}`], // eslint-disable-line no-sparse-arrays
    ['ids as an Int32Array with a negative', csr({ ids: new Int32Array([1, -5, 3]) }), RangeError, `ids[1]: -5 ${ids32}`],
    ['ids as a Float64Array', csr({ ids: new Float64Array([1, 2, 0.5]) }), RangeError, `ids[2]: 0.5 ${ids32}`],
    ['ids as a BigUint64Array', csr({ ids: new BigUint64Array([1n, 2n, 3n]) }), TypeError, `ids[0]: 1n ${ids32}`],
    ['ids missing', csr({ ids: undefined }), TypeError, 'ids: expected an array or TypedArray of numbers, got undefined'],
    ['ids as a string', csr({ ids: '123' }), TypeError, 'ids: expected an array or TypedArray of numbers, got "123"'],
    ['offset NaN (zeroed)', csr({ offsets: [NaN, 2, 3] }), RangeError, `offsets[0]: NaN ${ids32}`],
    ['offset 2^32 (wrapped to 0)', csr({ offsets: [2 ** 32, 2, 3] }), RangeError, `offsets[0]: 4294967296 ${ids32}`],
    ['offset -1', csr({ offsets: [0, -1, 3] }), RangeError, `offsets[1]: -1 ${ids32}`],
    ['label 1.5 (truncated)', csr({ labels: [0, 1.5] }), RangeError, `labels[1]: 1.5 ${labels31}`],
    ['label 2^32 + 1 (wrapped to 1)', csr({ labels: [0, 2 ** 32 + 1] }), RangeError, `labels[1]: 4294967297 ${labels31}`],
    ['label 2^31 (wrapped negative)', csr({ labels: [2 ** 31, 0] }), RangeError, `labels[0]: 2147483648 ${labels31}`],
    ['label NaN (zeroed)', csr({ labels: [0, NaN] }), RangeError, `labels[1]: NaN ${labels31}`],
    ['label -1', csr({ labels: [-1, 0] }), RangeError, `labels[0]: -1 ${labels31}`],
    ['labels as an Int32Array with a negative', csr({ labels: new Int32Array([0, -3]) }), RangeError, `labels[1]: -3 ${labels31}`],
    ['numFeatures -1 (became "auto")', csr({ numFeatures: -1 }), RangeError, 'numFeatures: -1 is not an integer in [0, 2^32)'],
    ['numFeatures NaN', csr({ numFeatures: NaN }), RangeError, 'numFeatures: NaN is not an integer in [0, 2^32)'],
    ['numFeatures 2^32 + 2', csr({ numFeatures: 2 ** 32 + 2 }), RangeError, 'numFeatures: 4294967298 is not an integer in [0, 2^32)'],
    ['numFeatures 4.5', csr({ numFeatures: 4.5 }), RangeError, 'numFeatures: 4.5 is not an integer in [0, 2^32)'],
    ['numFeatures "8"', csr({ numFeatures: '8' }), TypeError, 'numFeatures: "8" is not an integer in [0, 2^32)'],
    ['weight NaN', csr({ weights: [1, NaN, 2] }), RangeError, `weights[1]: NaN ${float32}`],
    ['weight -Infinity', csr({ weights: [1, 2, -Infinity] }), RangeError, `weights[2]: -Infinity ${float32}`],
    ['weight 1e39 (infinite in float32)', csr({ weights: [1e39, 1, 2] }), RangeError, `weights[0]: 1e+39 ${float32}`],
    ['weight "1"', csr({ weights: [1, '1', 2] }), TypeError, `weights[1]: "1" ${float32}`],
    ['svmlight indexBase 2^32 (wrapped to 0)', () => executor.datasetFromSvmlight('1 0:1\n', { indexBase: 2 ** 32 }),
      RangeError, 'indexBase: 4294967296 is not 0 or 1'],
    ['svmlight indexBase NaN', () => executor.datasetFromSvmlight('1 0:1\n', { indexBase: NaN }), RangeError, 'indexBase: NaN is not 0 or 1'],
    ['svmlight indexBase 0.5', () => executor.datasetFromSvmlight('1 0:1\n', { indexBase: 0.5 }), RangeError, 'indexBase: 0.5 is not 0 or 1'],
    ['svmlight indexBase "0"', () => executor.datasetFromSvmlight('1 0:1\n', { indexBase: '0' }), TypeError, 'indexBase: "0" is not 0 or 1'],
    ['svmlight numFeatures -1', () => executor.datasetFromSvmlight('1 3:1\n', { numFeatures: -1 }),
      RangeError, 'numFeatures: -1 is not an integer in [0, 2^32)'],
    ['dense numColumns 2.5 (truncated)', () => executor.datasetFromDense([1, 2, 3, 4], 2.5, [0, 1]),
      RangeError, 'numColumns: 2.5 is not an integer in [1, 2^32)'],
    ['dense numColumns 0', () => executor.datasetFromDense([], 0, []), RangeError, 'numColumns: 0 is not an integer in [1, 2^32)'],
    ['dense numColumns 2^32 + 2', () => executor.datasetFromDense([1, 2, 3, 4], 2 ** 32 + 2, [0, 1]),
      RangeError, 'numColumns: 4294967298 is not an integer in [1, 2^32)'],
    ['dense label NaN', () => executor.datasetFromDense([1, 2, 3, 4], 2, [NaN, 1.7]), RangeError, `labels[0]: NaN ${labels31}`],
    ['dense value "x"', () => executor.datasetFromDense([1, 2, 'x', 4], 2, [0, 1]), TypeError, `values[2]: "x" ${float32}`],
    ['dense value Infinity', () => executor.datasetFromDense([1, 2, 3, Infinity], 2, [0, 1]), RangeError, `values[3]: Infinity ${float32}`],
    ['text 1 (featurized as "1")', () => executor.datasetFromTexts([1, 'b'], [0, 1]), TypeError, 'texts[0]: 1 is not a string'],
    ['text null (featurized as "null")', () => executor.datasetFromTexts(['a', null], [0, 1]), TypeError, 'texts[1]: null is not a string'],
    ['texts not an array', () => executor.datasetFromTexts('ab', [0, 1]), TypeError, 'texts: expected an array of strings, got "ab"'],
    ['text label NaN', () => executor.datasetFromTexts(['a', 'b'], [0, NaN]), RangeError, `labels[1]: NaN ${labels31}`],
    ['one label too few', () => executor.datasetFromTexts(['a', 'b'], [0]), TypeError, 'labels: expected 2 entries, got 1'],
  ];
  for (const [what, call, Type, message] of cases) throwsExactly(call, Type, message, what);

  const data = executor.datasetFromCsr(CSR);
  try {
    const subsetRule = 'is not an integer in [0, 2)';
    throwsExactly(() => data.subset([2 ** 32, NaN]), RangeError, `indices[0]: 4294967296 ${subsetRule}`, 'subset 2^32 (was example 0)');
    throwsExactly(() => data.subset([1, NaN]), RangeError, `indices[1]: NaN ${subsetRule}`, 'subset NaN (was example 0)');
    throwsExactly(() => data.subset([0, 2]), RangeError, `indices[1]: 2 ${subsetRule}`, 'subset past the end');
    throwsExactly(() => data.subset([-1]), RangeError, `indices[0]: -1 ${subsetRule}`, 'subset -1');
    throwsExactly(() => data.subset(new Uint32Array([1, 7])), RangeError, `indices[1]: 7 ${subsetRule}`, 'subset Uint32Array');
    throwsExactly(() => data.subset(['1']), TypeError, `indices[0]: "1" ${subsetRule}`, 'subset "1"');
  } finally {
    data.delete();
  }
});

test('dataset inputs at the edges of their rules are accepted unchanged', async () => {
  const executor = await createExecutor();
  const top = 2 ** 32 - 2;
  // The largest ids with numFeatures 2^32 - 1, the largest label, offsets and ids in every array type.
  assert.deepEqual(contents(executor.datasetFromCsr({
    offsets: [0, 2, 3], ids: [0, top, 5], labels: [0, 2 ** 31 - 1], numFeatures: 2 ** 32 - 1,
  })), { size: 2, numFeatures: 2 ** 32 - 1, ids: [0, 5, top], labels: [0, 2 ** 31 - 1] });
  for (const [what, ids] of [['Uint32Array', new Uint32Array([0, top, 5])], ['Int32Array', new Int32Array([0, 7, 5])],
    ['Float64Array', new Float64Array([0, top, 5])], ['array-like object', { length: 3, 0: 0, 1: top, 2: 5 }],
    ['iterable', new Set([0, top, 5])]]) {
    const d = contents(executor.datasetFromCsr({
      offsets: new Float64Array([0, 2, 3]), ids, labels: new Int32Array([1, 0]), weights: new Float64Array([0.5, -2, 3]),
    }));
    assert.deepEqual(d.ids, [0, 5, ids instanceof Int32Array ? 7 : top], what);
    assert.deepEqual(d.labels, [1, 0], what);
  }
  // numFeatures 0 or left out: max id + 1. Id 2^32 - 1 is not rewritten on the way: the core sees
  // it and says it leaves no room for numFeatures.
  assert.equal(contents(executor.datasetFromCsr({ ...CSR, numFeatures: 0 })).numFeatures, 4);
  assert.equal(contents(executor.datasetFromCsr(CSR)).numFeatures, 4);
  assert.throws(() => executor.datasetFromCsr({ ...CSR, ids: [1, 2, 2 ** 32 - 1] }),
    { code: 'InvalidInput', message: /id 4294967295 leaves no room for num_features/ });
  assert.throws(() => executor.datasetFromCsr({ ...CSR, ids: new Uint32Array([1, 2, 9]), numFeatures: 9 }),
    { code: 'InvalidInput', message: /id 9 is not below num_features 9/ });
  // A weight below float32's range rounds to 0 (float32 is the format); non-finite ones in a
  // Float32Array are left to the core, which rejects them too.
  assert.equal(contents(executor.datasetFromCsr({ ...CSR, weights: [1, 1e-50, 2] })).size, 2);
  assert.throws(() => executor.datasetFromCsr({ ...CSR, weights: new Float32Array([1, NaN, 2]) }),
    { code: 'InvalidInput', message: /weight of nonzero 1 is not finite/ });

  assert.deepEqual(contents(executor.datasetFromSvmlight('1 0:1\n2 3:1\n', { indexBase: 0, numFeatures: 2 ** 32 - 1 })),
    { size: 2, numFeatures: 2 ** 32 - 1, ids: [0, 3], labels: [1, 2] });
  assert.deepEqual(contents(executor.datasetFromSvmlight('1 1:1\n')).ids, [0]);
  assert.deepEqual(contents(executor.datasetFromDense(new Float64Array([1, 2, 3]), 1, new Int32Array([0, 1, 2 ** 31 - 1]))),
    { size: 3, numFeatures: 1, ids: [], labels: [0, 1, 2 ** 31 - 1] });
  assert.equal(contents(executor.datasetFromTexts(['', 'free prize'], new Int32Array([0, 1]), SMALL_TEXT_PLAN)).size, 2);

  const data = executor.datasetFromCsr(CSR);
  try {
    assert.deepEqual(contents(data.subset([1, 0, 1])).labels, [1, 0, 1]);
    assert.deepEqual(contents(data.subset(new Float64Array([1]))).labels, [1]);
    assert.deepEqual(contents(data.subset(new Uint32Array([0]))).labels, [0]);
    assert.equal(contents(data.subset([])).size, 0);
  } finally {
    data.delete();
  }
});

test('model, result and checkpoint bytes are taken as every BytesLike, and a non-bytes argument is named', async () => {
  const executor = await createExecutor();
  const plan = SMALL_TEXT_PLAN;
  const data = executor.datasetFromTexts(['win a free prize', 'meeting at noon', 'cheap meds now', 'notes attached'],
    [1, 0, 1, 0], plan);
  try {
    const model = executor.initializeModel(plan, 3);
    const forms = {
      ArrayBuffer: (u8) => u8.buffer.slice(u8.byteOffset, u8.byteOffset + u8.byteLength),
      DataView: (u8) => new DataView(u8.buffer, u8.byteOffset, u8.byteLength),
      'offset Uint8Array': (u8) => {
        const copy = new Uint8Array(u8.length + 5);
        copy.set(u8, 5);
        return copy.subarray(5);
      },
    };
    const task = { task_id: 't', kind: 'evaluate', plan };
    const expected = {
      execute: executor.execute(plan, model, data, { taskId: 't' }),
      train: (await executor.train(plan, model, data, { taskId: 't' })).bytes,
      evaluate: executor.evaluate(plan, model, data),
      predict: executor.predict(plan, model, data),
      runTask: (await executor.runTask(task, model, data)).bytes,
    };
    const reference = executor.createRoundAggregator(plan, model);
    reference.addResult(expected.train);
    const nextModel = reference.nextModel();
    const checkpoint = reference.checkpoint();
    reference.delete();

    for (const [form, of] of Object.entries(forms)) {
      const bytes = of(model);
      assert.deepEqual(executor.execute(plan, bytes, data, { taskId: 't' }), expected.execute, form);
      assert.deepEqual((await executor.train(plan, bytes, data, { taskId: 't' })).bytes, expected.train, form);
      assert.deepEqual(executor.evaluate(plan, bytes, data), expected.evaluate, form);
      assert.deepEqual(executor.predict(plan, bytes, data), expected.predict, form);
      assert.deepEqual((await executor.runTask(task, bytes, data)).bytes, expected.runTask, form);
      assert.deepEqual(Object.keys(executor.decodeSafetensors(bytes).tensors).sort(),
        Object.keys(executor.decodeSafetensors(model).tensors).sort(), form);
      const aggregator = executor.createRoundAggregator(plan, bytes);
      aggregator.addResult(of(expected.train));
      assert.equal(aggregator.numReports(), 1, form);
      assert.deepEqual(aggregator.nextModel(), nextModel, form);
      const restored = executor.restoreRoundAggregator(plan, bytes, of(checkpoint));
      restored.merge(aggregator);
      assert.equal(restored.numReports(), 2, form);
      assert.ok(restored.totalWeight() > 0, form);
      restored.delete();
      aggregator.delete();
    }

    const rule = 'expected an ArrayBuffer, TypedArray or DataView';
    const aggregator = executor.createRoundAggregator(plan, model);
    try {
      const calls = [
        ['execute', () => executor.execute(plan, [1, 2], data), `modelBytes: ${rule}, got Array`],
        ['train', () => executor.train(plan, 'abc', data), `modelBytes: ${rule}, got string`],
        ['evaluate', () => executor.evaluate(plan, null, data), `modelBytes: ${rule}, got null`],
        ['predict', () => executor.predict(plan, undefined, data), `modelBytes: ${rule}, got undefined`],
        ['runTask', () => executor.runTask(task, {}, data), `modelBytes: ${rule}, got Object`],
        ['createRoundAggregator', () => executor.createRoundAggregator(plan, 7), `modelBytes: ${rule}, got number`],
        ['restoreRoundAggregator', () => executor.restoreRoundAggregator(plan, model, [0]), `checkpoint: ${rule}, got Array`],
        ['addResult', () => aggregator.addResult('x'), `bytes: ${rule}, got string`],
        ['decodeSafetensors', () => executor.decodeSafetensors([1]), `bytes: ${rule}, got Array`],
      ];
      for (const [what, call, message] of calls) {
        await assert.rejects(async () => call(), (e) => {
          assert.equal(e.constructor, TypeError, `${what}: ${e.message}`);
          assert.equal(e.message, message, what);
          return true;
        }, what);
      }
    } finally {
      aggregator.delete();
    }
  } finally {
    data.delete();
  }
});

// Regression: embind converted a seed of -1 or NaN silently, so two "different" seeds gave one model.
test('initializeModel takes a seed that is an integer in [0, 2^53), naming it otherwise', async () => {
  const executor = await createExecutor();
  for (const [seed, Type, shown] of [[-1, RangeError, '-1'], [NaN, RangeError, 'NaN'], [1.5, RangeError, '1.5'],
    [2 ** 53, RangeError, '9007199254740992'], ['7', TypeError, '"7"']]) {
    throwsExactly(() => executor.initializeModel(SMALL_TEXT_PLAN, seed), Type,
      `seed: ${shown} is not an integer in [0, 2^53)`, String(seed));
  }
  assert.deepEqual(executor.initializeModel(SMALL_TEXT_PLAN, 2 ** 53 - 1), executor.initializeModel(SMALL_TEXT_PLAN, 2 ** 53 - 1));
  assert.notDeepEqual(executor.initializeModel(SMALL_TEXT_PLAN, 0), executor.initializeModel(SMALL_TEXT_PLAN, 1));
});
