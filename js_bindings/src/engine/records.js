// Records in: plain JS objects → the dataset of a plan's inputs, featurized and built by the C++
// core in one call (src/core/features/records_dataset.h: the records cross into wasm once), or
// the columns alone for inspection (featurize_records.h: one featurizer for native, wasm and
// tests).
//
//   const data = executor.datasetFromRecords(records, labels, plan);   // a Dataset
//   const inputs = executor.featurizeRecords(
//     [{ subject_tokens: ['win', 'cash'], sender_domain: 'example.com', length: 1200 }], plan);
//   // [{name, kind: 'sparse_ids', offsets, ids, weights, numFeatures}
//   //  | {name, kind: 'dense', dense, width}, ...]   one per plan input with "features"
//
// A record is a flat plain object: each value a string, a finite number, a boolean, null or
// undefined (both: the field is missing), or an array of strings, finite numbers and booleans.
// The records cross to wasm as JSON.stringify(records), and JSON.stringify would quietly turn NaN
// and Infinity into null (a missing field, so its default) and drop functions; checkRecords
// refuses them first, naming the record and the field. The C++ core checks the rest (the plan's
// types per field, nested values, the JSON rules) with messages of the same form:
//
//   records[17].length: NaN is not a finite number (JSON would carry it as null)

import { float32Array, integerArg, labelArray, UINT32_LIMIT } from './dataset_inputs.js';
import { PlanHandle } from './plan_handle.js';
import { planJson } from './plan_json.js';

const PLAIN_NAME = /^[A-Za-z_$][A-Za-z0-9_$]{0,63}$/;

/** How messages name a field: records[3].length, or records[3]["a b"] (cut to 64 characters). */
export function recordFieldPath(index, field) {
  if (PLAIN_NAME.test(field)) return `records[${index}].${field}`;
  const shown = field.length > 64 ? `${JSON.stringify(field.slice(0, 64))}...` : JSON.stringify(field);
  return `records[${index}][${shown}]`;
}

function describe(value) {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return name && name !== 'Object' ? `a ${name}` : 'an object';
  }
  return `a ${typeof value}`;
}

/** A plain object: its prototype is Object.prototype (of any realm) or null. */
function isPlainObject(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

// What is wrong with one scalar of a record (a field's value, or an element of its array) as
// [ErrorClass, rule], or null; the caller names the field only when there is a problem.
function scalarProblem(value) {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      return Number.isFinite(value) ? null
        : [RangeError, `${value} is not a finite number (JSON would carry it as null)`];
    default:
      return [TypeError, `expected a string, number or boolean, got ${describe(value)}`];
  }
}

/**
 * Throws (TypeError, or RangeError for a non-finite number) unless `records` is an array of flat
 * plain objects as the header says. One pass over every field; nothing is copied.
 */
export function checkRecords(records) {
  if (!Array.isArray(records)) {
    throw new TypeError(`records: expected an array of records (plain objects), got ${describe(records)}`);
  }
  for (let i = 0; i < records.length; i++) {
    const record = records[i];
    if (!isPlainObject(record)) {
      throw new TypeError(`records[${i}]: expected a record (a plain object), got ${describe(record)}`);
    }
    for (const field of Object.keys(record)) {
      const value = record[field];
      if (value === null || value === undefined) continue;
      if (Array.isArray(value)) {
        for (let k = 0; k < value.length; k++) {
          const problem = scalarProblem(value[k]);
          if (problem) throw new problem[0](`${recordFieldPath(i, field)}[${k}]: ${problem[1]}`);
        }
      } else if (typeof value === 'object') {
        throw new TypeError(`${recordFieldPath(i, field)}: expected a string, number, boolean or array of them, ` +
          `got ${describe(value)}`);
      } else {
        const problem = scalarProblem(value);
        if (problem) throw new problem[0](`${recordFieldPath(i, field)}: ${problem[1]}`);
      }
    }
  }
  return records;
}

/**
 * The columns of every input of `plan` (a PlanHandle, an object or JSON text) that has "features", computed
 * from `records` by the module's featurizer: an array of
 * {name, kind: 'sparse_ids', offsets: Uint32Array, ids: Uint32Array, weights: Float32Array,
 *  numFeatures} or {name, kind: 'dense', dense: Float32Array, width}, in the order of the inputs'
 * names. Throws an Error naming records[i].field when a record breaks a rule.
 */
export function featurizeRecords(module, records, plan) {
  checkRecords(records);
  const json = JSON.stringify(records);
  // A PlanHandle's inputs were parsed with it; plan JSON needs only its inputs parsed.
  if (plan instanceof PlanHandle) return plan.handle.featurizeRecords(json);
  return module.featurizeRecords(planJson(plan), json);
}

// The labels of `count` records as the module takes them: [Int32Array, 0], or for
// {targets, width} (mean_squared_error) [Float32Array, width].
function labelsOf(labels, count) {
  if (labels !== null && typeof labels === 'object' && labels.targets !== undefined) {
    const { targets, width = 1 } = labels;
    integerArg('labels.width', width, 1, UINT32_LIMIT, '2^32');
    return [float32Array('labels.targets', targets), width];
  }
  return [labelArray('labels', labels, count), 0];
}

/**
 * The wasm handle of the dataset of `plan`'s inputs with "features" from `records`: featurized
 * and built by the module in one call, the records crossing as one JSON text. `labels` one per
 * record (integers in [0, 2^31)), or {targets, width} for mean_squared_error. Errors as
 * featurizeRecords', and "labels: ..." for a count other than the records'.
 */
export function datasetHandleFromRecords(module, records, labels, plan) {
  checkRecords(records);
  const [values, width] = labelsOf(labels, records.length);
  const json = JSON.stringify(records);
  if (plan instanceof PlanHandle) return plan.handle.datasetFromRecords(json, values, width);
  return module.Dataset.fromRecords(planJson(plan), json, values, width);
}
