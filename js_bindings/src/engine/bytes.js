// The bytes arguments of the API (models, updates, results, checkpoints, safetensors to decode):
// everything BytesLike in index.d.ts promises — a TypedArray, a DataView or an ArrayBuffer — as
// a view the wasm module reads (it takes views only). No copy: an ArrayBuffer is wrapped.

// Brand checks that also hold for buffers of another realm (a vm context, an iframe).
const arrayBufferByteLength = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
const sharedByteLength = typeof SharedArrayBuffer === 'function'
  ? Object.getOwnPropertyDescriptor(SharedArrayBuffer.prototype, 'byteLength').get
  : undefined;

function hasBrand(getter, value) {
  if (getter === undefined || value === null || typeof value !== 'object') return false;
  try {
    getter.call(value);
    return true;
  } catch {
    return false;
  }
}

function kindOf(value) {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  return value.constructor?.name ?? 'object';
}

/**
 * `bytes` as an ArrayBufferView; a TypeError naming `name` (the argument) when it is none of
 * ArrayBuffer, SharedArrayBuffer, TypedArray, DataView.
 */
export function bytesOf(name, bytes) {
  if (ArrayBuffer.isView(bytes)) return bytes;
  if (hasBrand(arrayBufferByteLength, bytes) || hasBrand(sharedByteLength, bytes)) return new Uint8Array(bytes);
  throw new TypeError(`${name}: expected an ArrayBuffer, TypedArray or DataView, got ${kindOf(bytes)}`);
}
