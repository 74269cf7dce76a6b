// Checks of what builds a dataset (ids, offsets, labels, weights, dense values, texts, subset
// indices and the numbers beside them) before they become the typed arrays and numbers the wasm
// module takes. Uint32Array.from, Int32Array.from and embind's number conversions would wrap,
// truncate or zero a bad value silently (2^32 + 5 → 5, -2 → 4294967294, 1.7 → 1, NaN → 0); here it
// throws instead, naming the argument, the index and the rule:
//
//   ids[1]: 4294967301 is not an integer in [0, 2^32)
//
// A value that is not a number (a string, null, a BigInt) throws a TypeError, a number outside the
// rule a RangeError. One pass per array, no allocation per element; an array already of the
// target type is passed on without a copy, and without a check when its type is the rule
// (a Uint32Array of ids or offsets). The C++ core checks the rest (offsets non-decreasing from 0 to
// ids.length, ids below numFeatures, weights and dense values finite in float32, lengths).

export const UINT32_LIMIT = 2 ** 32;
export const INT32_LIMIT = 2 ** 31;

/** A value as a message quotes it: numbers as JS prints them, strings quoted. */
function show(value) {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || value === undefined || typeof value !== 'object') return String(value);
  return value.constructor?.name ?? 'object';
}

function fail(label, value, rule) {
  const message = `${label}: ${show(value)} ${rule}`;
  return typeof value === 'number' ? new RangeError(message) : new TypeError(message);
}

/**
 * `values` as something indexable with a length: an array, a TypedArray, an array-like object, or
 * (as Int32Array.from took them) another iterable, spread once.
 */
export function arrayArg(name, values) {
  if (values !== null && typeof values === 'object') {
    if (Array.isArray(values) || (ArrayBuffer.isView(values) && !(values instanceof DataView))) return values;
    if (Number.isSafeInteger(values.length) && values.length >= 0) return values;
    if (typeof values[Symbol.iterator] === 'function') return Array.from(values);
  }
  throw new TypeError(`${name}: expected an array or TypedArray of numbers, got ${show(values)}`);
}

/**
 * `values` as a `Type` (Uint32Array or Int32Array) after checking every element is an integer in
 * [0, limit); `limitText` is how the message writes the limit ("2^32").
 */
export function integerArray(name, values, Type, limit, limitText) {
  const array = arrayArg(name, values);
  const same = array instanceof Type;
  if (same && Type === Uint32Array && limit >= UINT32_LIMIT) return array;
  const n = array.length;
  const out = same ? array : new Type(n);
  for (let i = 0; i < n; i++) {
    const v = array[i];
    if (typeof v !== 'number' || !(v >= 0 && v < limit) || Math.floor(v) !== v) {
      throw fail(`${name}[${i}]`, v, `is not an integer in [0, ${limitText})`);
    }
    if (!same) out[i] = v;
  }
  return out;
}

/** Feature ids, byte or example offsets: integers in [0, 2^32). */
export function uint32Array(name, values) {
  return integerArray(name, values, Uint32Array, UINT32_LIMIT, '2^32');
}

/** Labels: integers in [0, 2^31) (the core stores them as int32 and rejects negative ones). */
export function labelArray(name, values, count) {
  const array = arrayArg(name, values);
  if (count !== undefined && array.length !== count) {
    throw new TypeError(`${name}: expected ${count} entries, got ${array.length}`);
  }
  return integerArray(name, array, Int32Array, INT32_LIMIT, '2^31');
}

/**
 * Weights and dense values as a Float32Array: numbers, finite once rounded to float32 (tiny ones
 * round to 0, as float32 does). A Float32Array is passed on; the core rejects its non-finite values.
 */
export function float32Array(name, values) {
  const array = arrayArg(name, values);
  if (array instanceof Float32Array) return array;
  const n = array.length;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const v = array[i];
    out[i] = v;
    if (typeof v !== 'number' || !Number.isFinite(out[i])) {
      throw fail(`${name}[${i}]`, v, 'is not a finite number in float32 range');
    }
  }
  return out;
}

/** A number argument: an integer in [min, limit). */
export function integerArg(name, value, min, limit, limitText) {
  if (typeof value !== 'number' || !(value >= min && value < limit) || Math.floor(value) !== value) {
    throw fail(name, value, `is not an integer in [${min}, ${limitText})`);
  }
  return value;
}

/** A number argument that is 0 or 1 (svmlight's indexBase). */
export function zeroOrOneArg(name, value) {
  if (value !== 0 && value !== 1) throw fail(name, value, 'is not 0 or 1');
  return value;
}

/** Texts: an array of strings. */
export function stringArray(name, texts) {
  if (!Array.isArray(texts)) throw new TypeError(`${name}: expected an array of strings, got ${show(texts)}`);
  for (let i = 0; i < texts.length; i++) {
    if (typeof texts[i] !== 'string') throw new TypeError(`${name}[${i}]: ${show(texts[i])} is not a string`);
  }
  return texts;
}
