// A SparseTensor in COO form ({indices, values, denseShape}) as CSR rows (sparse_tensor_input.js):
// both index layouts, unsorted entries sorted as tf.sparse.reorder does, empty rows, and every
// rule an error naming the input and the entry; datasetFromInputs takes the form and gives the
// dataset of the same CSR rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { csrOfSparseTensor, isSparseTensorInput } from '../../js_bindings/src/engine/sparse_tensor_input.js';

const EXPECTED = { offsets: [0, 2, 2, 3], ids: [3, 7, 1], weights: [0.5, 2, 1], numFeatures: 10 };

function plain(csr) {
  return { offsets: Array.from(csr.offsets), ids: Array.from(csr.ids), weights: Array.from(csr.weights), numFeatures: csr.numFeatures };
}

test('COO indices as pairs, as a flat list, as Int32Array and BigInt64Array give the same CSR rows', () => {
  const values = [0.5, 2, 1];
  assert.deepEqual(plain(csrOfSparseTensor('x', { indices: [[0, 3], [0, 7], [2, 1]], values, denseShape: [3, 10] })), EXPECTED);
  assert.deepEqual(plain(csrOfSparseTensor('x', { indices: [0, 3, 0, 7, 2, 1], values, denseShape: [3, 10] })), EXPECTED);
  assert.deepEqual(plain(csrOfSparseTensor('x', { indices: Int32Array.of(0, 3, 0, 7, 2, 1),
    values: Float32Array.from(values), dense_shape: [3, 10] })), EXPECTED);
  assert.deepEqual(plain(csrOfSparseTensor('x', { indices: BigInt64Array.of(0n, 3n, 0n, 7n, 2n, 1n), values,
    denseShape: BigInt64Array.of(3n, 10n) })), EXPECTED);
  const out = csrOfSparseTensor('x', { indices: [[0, 3], [0, 7], [2, 1]], values, denseShape: [3, 10] });
  assert.ok(out.offsets instanceof Uint32Array && out.ids instanceof Uint32Array && out.weights instanceof Float32Array);
});

test('unsorted entries are sorted by (row, column), each value moving with its index; no entries is empty rows', () => {
  const out = csrOfSparseTensor('x', { indices: [[2, 1], [0, 7], [0, 3]], values: [1, 2, 0.5], denseShape: [3, 10] });
  assert.deepEqual(plain(out), { offsets: [0, 2, 2, 3], ids: [3, 7, 1], weights: [0.5, 2, 1], numFeatures: 10 });
  assert.deepEqual(plain(csrOfSparseTensor('x', { indices: [], values: [], denseShape: [2, 4] })),
    { offsets: [0, 0, 0], ids: [], weights: [], numFeatures: 4 });
});

test('each rule is an error naming the input, the entry and the rule', () => {
  const base = { indices: [[0, 3], [1, 2]], values: [1, 1], denseShape: [2, 5] };
  const cases = [
    [{ ...base, indices: [[0, 3], [2, 2]] }, RangeError, /^inputs\.x\.indices\[1\]: row 2 is not an integer in \[0, 2\)$/],
    [{ ...base, indices: [[0, 5], [1, 2]] }, RangeError, /^inputs\.x\.indices\[0\]: column 5 is not an integer in \[0, 5\)$/],
    [{ ...base, indices: [[0, -1], [1, 2]] }, RangeError, /^inputs\.x\.indices\[0\]: column -1 is not/],
    [{ ...base, indices: [[0, 1.5], [1, 2]] }, RangeError, /^inputs\.x\.indices\[0\]: column 1\.5 is not/],
    [{ ...base, indices: [0, 3, 1] }, TypeError, /^inputs\.x\.indices: a flat list needs 2 numbers per entry, got 3$/],
    [{ ...base, indices: [[0, 3], [1]] }, TypeError, /^inputs\.x\.indices\[1\]: expected \[row, column\]$/],
    [{ ...base, values: [1] }, TypeError, /^inputs\.x\.values: 1 values for 2 indices$/],
    [{ ...base, values: [1, NaN] }, RangeError, /^inputs\.x\.values\[1\]: NaN is not a finite number in float32 range$/],
    [{ ...base, values: Float32Array.of(1, Infinity) }, RangeError, /^inputs\.x\.values\[1\]: Infinity is not a finite/],
    [{ ...base, values: [1, 1e39] }, RangeError, /^inputs\.x\.values\[1\]: 1e\+39 is not a finite number in float32 range$/],
    [{ ...base, denseShape: [2] }, TypeError, /^inputs\.x\.denseShape: expected \[rows, N\], got 1 dimensions$/],
    [{ ...base, denseShape: [2, 0] }, RangeError, /^inputs\.x\.denseShape\[1\]: 0 is not an integer in \[1, 2\^32\)$/],
    [{ ...base, denseShape: undefined, dense_shape: undefined, indices: [[0, 1]] }, TypeError, /^inputs\.x\.denseShape: missing/],
    [{ ...base, dense_shape: [2, 5] }, TypeError, /^inputs\.x: give denseShape or dense_shape, not both$/],
    [{ ...base, values: undefined }, TypeError, /^inputs\.x\.values: missing/],
    // An index twice (here after sorting: entries 0 and 2) — refused as tf.sparse.to_dense does.
    [{ indices: [[1, 2], [0, 3], [1, 2]], values: [1, 1, 1], denseShape: [2, 5] }, RangeError,
      /^inputs\.x\.indices\[2\]: \[1, 2\] repeats indices\[0\] \(each index once, as tf\.sparse\.to_dense requires: add the values into one entry\)$/],
  ];
  for (const [input, type, message] of cases) {
    assert.throws(() => csrOfSparseTensor('inputs.x', input), (error) => error instanceof type && message.test(error.message),
      `${JSON.stringify(input)} → ${message}`);
  }
});

test('isSparseTensorInput tells the COO form from CSR and dense inputs', () => {
  assert.equal(isSparseTensorInput({ indices: [], values: [], denseShape: [0, 1] }), true);
  assert.equal(isSparseTensorInput({ dense_shape: [0, 1] }), true);
  assert.equal(isSparseTensorInput({ ids: [], offsets: [0] }), false);
  assert.equal(isSparseTensorInput({ dense: [], width: 1 }), false);
  assert.equal(isSparseTensorInput(null), false);
});
