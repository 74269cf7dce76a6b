// Conversions between the JS tensor shapes of the public API and the normalized form the wasm
// module takes (see wasm/tensor_js.h). Whole buffers cross the boundary, never single elements.
//
// Public shapes:
//   dense:      {dtype?: 'F32'|'F64'|'I32'|'I64'|'U8', shape: number[], data: TypedArray}
//   coo:        {encoding: 'coo', indices, values, dense_shape: number[]}
//               indices flat, row-major [nnz, rank]; values [nnz]
//   row_sparse: {encoding: 'row_sparse', indices, values, dense_shape: number[]}
//               indices [nrows]; values flat [nrows, ...dense_shape.slice(1)]
// indices are BigInt64Array (I64, the default) or Int32Array (I32: half the bytes on the wire).

const ARRAY_OF_DTYPE = {
  F32: Float32Array,
  F64: Float64Array,
  I32: Int32Array,
  I64: BigInt64Array,
  U8: Uint8Array,
};

/** The safetensors dtype of a TypedArray, or undefined. */
export function dtypeOf(array) {
  for (const [dtype, Type] of Object.entries(ARRAY_OF_DTYPE)) {
    if (array instanceof Type) return dtype;
  }
  return undefined;
}

function typedData(name, data, dtype) {
  if (ArrayBuffer.isView(data)) {
    const actual = dtypeOf(data);
    if (dtype !== undefined && actual !== dtype) {
      throw new TypeError(`tensor '${name}': data is ${data.constructor.name} but dtype is ${dtype}`);
    }
    if (actual === undefined) {
      throw new TypeError(`tensor '${name}': data must be a Float32Array, Float64Array, ` +
        `Int32Array, BigInt64Array or Uint8Array, got ${data.constructor.name}`);
    }
    return { dtype: actual, data };
  }
  if (Array.isArray(data)) {
    if (dtype === undefined) {
      throw new TypeError(`tensor '${name}': a plain array needs an explicit dtype`);
    }
    const Type = ARRAY_OF_DTYPE[dtype];
    if (Type === undefined) throw new TypeError(`tensor '${name}': unknown dtype '${dtype}'`);
    return { dtype, data: Type.from(data, dtype === 'I64' ? (v) => BigInt(v) : undefined) };
  }
  throw new TypeError(`tensor '${name}': data must be a TypedArray or an array`);
}

function indexData(name, indices) {
  if (indices instanceof BigInt64Array) return { index_dtype: 'I64', indices };
  if (indices instanceof Int32Array) return { index_dtype: 'I32', indices };
  if (Array.isArray(indices)) {
    return { index_dtype: 'I64', indices: BigInt64Array.from(indices, (v) => BigInt(v)) };
  }
  throw new TypeError(`tensor '${name}': indices must be a BigInt64Array, Int32Array or array`);
}

function checkShape(name, field, shape) {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new TypeError(`tensor '${name}': ${field} must be an array of non-negative integers`);
  }
}

/** Public tensor → normalized spec for the wasm module. */
export function normalizeTensor(name, tensor) {
  if (tensor === null || typeof tensor !== 'object') {
    throw new TypeError(`tensor '${name}' must be an object`);
  }
  const encoding = tensor.encoding ?? 'dense';
  if (encoding === 'dense') {
    checkShape(name, 'shape', tensor.shape);
    const { dtype, data } = typedData(name, tensor.data, tensor.dtype);
    return { encoding, dtype, shape: tensor.shape, data };
  }
  if (encoding !== 'coo' && encoding !== 'row_sparse') {
    throw new TypeError(`tensor '${name}': unknown encoding '${encoding}' ` +
      '(expected dense, coo or row_sparse)');
  }
  checkShape(name, 'dense_shape', tensor.dense_shape);
  const { index_dtype, indices } = indexData(name, tensor.indices);
  const { dtype, data } = typedData(name, tensor.values, tensor.dtype);
  let valuesShape;
  if (encoding === 'coo') {
    const rank = tensor.dense_shape.length;
    valuesShape = [rank === 0 ? 0 : Math.floor(indices.length / rank)];
  } else {
    valuesShape = [indices.length, ...tensor.dense_shape.slice(1)];
  }
  return {
    encoding,
    index_dtype,
    indices,
    values: { dtype, shape: valuesShape, data },
    dense_shape: tensor.dense_shape,
  };
}

function viewAs(dtype, bytes) {
  const Type = ARRAY_OF_DTYPE[dtype];
  // bytes is a fresh Uint8Array at offset 0 of its own buffer, so every view is aligned.
  return new Type(bytes.buffer, bytes.byteOffset, bytes.byteLength / Type.BYTES_PER_ELEMENT);
}

/** Normalized spec from the wasm module → public tensor. */
export function publicTensor(spec) {
  if (spec.encoding === 'dense') {
    return { dtype: spec.dtype, shape: spec.shape, data: viewAs(spec.dtype, spec.data) };
  }
  return {
    encoding: spec.encoding,
    dtype: spec.values.dtype,
    indices: viewAs(spec.index_dtype, spec.indices),
    values: viewAs(spec.values.dtype, spec.values.data),
    dense_shape: spec.dense_shape,
  };
}

export function normalizeTensors(tensors) {
  if (tensors === null || typeof tensors !== 'object') {
    throw new TypeError('tensors must be an object mapping names to tensors');
  }
  const out = {};
  for (const [name, tensor] of Object.entries(tensors)) out[name] = normalizeTensor(name, tensor);
  return out;
}

export function publicTensors(specs) {
  const out = {};
  for (const [name, spec] of Object.entries(specs)) out[name] = publicTensor(spec);
  return out;
}
