// A sparse input as a TF / Keras user holds it — a SparseTensor in COO form, {indices, values,
// denseShape: [rows, N]} — as the CSR rows datasetFromInputs gives the core: an example's
// nonzero columns are its ids, their values its weights (what a Keras Dense on a sparse input
// reads: an embedding_bag with combiner sum, tfjs_layers_import.js).
//
//   csrOfSparseTensor('inputs.x', {indices: [[0, 3], [0, 7], [2, 1]], values: [0.5, 2, 1],
//                                  denseShape: [3, 10]})
//   // → {offsets: Uint32Array [0, 2, 2, 3], ids: Uint32Array [3, 7, 1],
//   //    weights: Float32Array [0.5, 2, 1], numFeatures: 10}
//
// indices: [[row, column], ...] or a flat array / TypedArray of 2·nnz numbers (row, column, row,
// column, ...: a tf.SparseTensor's indices as dataSync() gives them; BigInt64Array too).
// denseShape (or dense_shape, as Python spells it): [rows, N], rows the input's examples. Rules,
// each an error naming the input, the entry and the rule: rows in [0, rows), columns in [0, N),
// N in [1, 2^32), values finite in float32. Entries in any order are sorted by (row, column) as
// tf.sparse.reorder does (a stable sort: no entry is lost). An index given twice is an error, as
// tf.sparse.to_dense refuses it: a Dense would add both values, and a summed entry is what the
// caller must decide to give.

import { arrayArg, float32Array, UINT32_LIMIT } from './dataset_inputs.js';

/** Whether `input` is a SparseTensor in COO form (it has indices or a dense shape). */
export function isSparseTensorInput(input) {
  return input !== null && typeof input === 'object' &&
    (input.indices !== undefined || input.denseShape !== undefined || input.dense_shape !== undefined);
}

// A number as an integer index, or NaN (BigInts within the safe range become numbers).
function indexValue(v) {
  if (typeof v === 'bigint') return v >= 0n && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : NaN;
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : NaN;
}

function denseShapeOf(name, input) {
  if (input.denseShape !== undefined && input.dense_shape !== undefined) {
    throw new TypeError(`${name}: give denseShape or dense_shape, not both`);
  }
  const given = input.denseShape ?? input.dense_shape;
  if (given === undefined) throw new TypeError(`${name}.denseShape: missing ([rows, N])`);
  const shape = Array.from(arrayArg(`${name}.denseShape`, given), indexValue);
  if (shape.length !== 2) throw new TypeError(`${name}.denseShape: expected [rows, N], got ${shape.length} dimensions`);
  const [rows, columns] = shape;
  if (!(rows >= 0 && rows < UINT32_LIMIT)) throw new RangeError(`${name}.denseShape[0]: ${given[0]} is not an integer in [0, 2^32)`);
  if (!(columns >= 1 && columns < UINT32_LIMIT)) throw new RangeError(`${name}.denseShape[1]: ${given[1]} is not an integer in [1, 2^32)`);
  return [rows, columns];
}

// The (row, column) pairs as two arrays, from [[row, column], ...] or a flat list of 2·nnz.
function coordinatesOf(name, indices, rows, columns) {
  const list = arrayArg(`${name}.indices`, indices);
  const nested = list.length > 0 && typeof list[0] === 'object' && list[0] !== null;
  const nnz = nested ? list.length : list.length / 2;
  if (!Number.isInteger(nnz)) throw new TypeError(`${name}.indices: a flat list needs 2 numbers per entry, got ${list.length}`);
  const r = new Float64Array(nnz);
  const c = new Float64Array(nnz);
  for (let k = 0; k < nnz; k++) {
    let row;
    let column;
    if (nested) {
      const pair = list[k];
      if (pair === null || typeof pair !== 'object' || pair.length !== 2) {
        throw new TypeError(`${name}.indices[${k}]: expected [row, column]`);
      }
      row = indexValue(pair[0]);
      column = indexValue(pair[1]);
    } else {
      row = indexValue(list[2 * k]);
      column = indexValue(list[2 * k + 1]);
    }
    if (!(row >= 0 && row < rows)) throw new RangeError(`${name}.indices[${k}]: row ${nested ? list[k][0] : list[2 * k]} is not an integer in [0, ${rows})`);
    if (!(column >= 0 && column < columns)) {
      throw new RangeError(`${name}.indices[${k}]: column ${nested ? list[k][1] : list[2 * k + 1]} is not an integer in [0, ${columns})`);
    }
    r[k] = row;
    c[k] = column;
  }
  return { r, c, nnz };
}

/**
 * A SparseTensor {indices, values, denseShape} as {offsets, ids, weights, numFeatures} (CSR);
 * `name` prefixes every error ("inputs.x").
 */
export function csrOfSparseTensor(name, input) {
  const [rows, columns] = denseShapeOf(name, input);
  if (input.indices === undefined) throw new TypeError(`${name}.indices: missing ([[row, column], ...])`);
  if (input.values === undefined) throw new TypeError(`${name}.values: missing (one per index)`);
  const { r, c, nnz } = coordinatesOf(name, input.indices, rows, columns);
  const values = float32Array(`${name}.values`, input.values);
  if (values.length !== nnz) throw new TypeError(`${name}.values: ${values.length} values for ${nnz} indices`);
  for (let k = 0; k < nnz; k++) {
    if (!Number.isFinite(values[k])) throw new RangeError(`${name}.values[${k}]: ${values[k]} is not a finite number in float32 range`);
  }
  // Sorted by (row, column) already (the canonical order), or a stable sort into it.
  let sorted = true;
  for (let k = 1; k < nnz && sorted; k++) sorted = r[k - 1] < r[k] || (r[k - 1] === r[k] && c[k - 1] <= c[k]);
  let order = null;
  if (!sorted) {
    order = Array.from({ length: nnz }, (_, k) => k);
    order.sort((a, b) => r[a] - r[b] || c[a] - c[b] || a - b);
  }
  const at = (k) => (order ? order[k] : k);
  const offsets = new Uint32Array(rows + 1);
  const ids = new Uint32Array(nnz);
  const weights = new Float32Array(nnz);
  for (let k = 0; k < nnz; k++) {
    const e = at(k);
    if (k > 0) {
      const previous = at(k - 1);
      if (r[previous] === r[e] && c[previous] === c[e]) {
        throw new RangeError(`${name}.indices[${Math.max(previous, e)}]: [${r[e]}, ${c[e]}] repeats indices[${Math.min(previous, e)}] ` +
          '(each index once, as tf.sparse.to_dense requires: add the values into one entry)');
      }
    }
    offsets[r[e] + 1] += 1;
    ids[k] = c[e];
    weights[k] = values[e];
  }
  for (let i = 0; i < rows; i++) offsets[i + 1] += offsets[i];
  return { offsets, ids, weights, numFeatures: columns };
}
