// The weights of a TF.js Layers model: the weight specs (model.json's weightsManifest or
// ModelArtifacts' weightSpecs) and the shards' bytes → each weight's shape and float32 values.
//
//   const weights = readWeights(specs, concatenated(shards));
//   const kernel = weightOf(weights, layer, 'kernel', fail);   // {shape, data: Float32Array}
//
// float32 and float16-quantized weights (what tensorflowjs_converter --quantize_float16 writes)
// are read; the optimizer's state (group 'optimizer', model.save with includeOptimizer) is skipped.

// F16 bits → number (exact), for weights the converter quantized to float16.
function f16ToNumber(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** The shards (ArrayBuffers or TypedArrays, in manifest order) as one Uint8Array. */
export function concatenated(weightData, fail) {
  const parts = Array.isArray(weightData) ? weightData : [weightData];
  const views = parts.map((p) => {
    if (p instanceof ArrayBuffer) return new Uint8Array(p);
    if (ArrayBuffer.isView(p)) return new Uint8Array(p.buffer, p.byteOffset, p.byteLength);
    return fail('weight data must be ArrayBuffers or TypedArrays (the shards in manifest order)');
  });
  const out = new Uint8Array(views.reduce((n, v) => n + v.length, 0));
  let at = 0;
  for (const v of views) {
    out.set(v, at);
    at += v.length;
  }
  return out;
}

/** name → {shape, data: Float32Array} from the weight specs and the concatenated shards. */
export function readWeights(specs, bytes, fail) {
  const weights = new Map();
  let at = 0;
  for (const spec of specs) {
    const count = spec.shape.reduce((a, b) => a * b, 1);
    if (spec.group === 'optimizer') {  // the optimizer's state (model.save with includeOptimizer)
      at += count * (spec.quantization ? 2 : 4);
      continue;
    }
    const q = spec.quantization;
    if (q && q.dtype !== 'float16') {
      fail(`weight '${spec.name}': quantization ${q.dtype} is not supported (float32, float16)`);
    }
    if (!q && spec.dtype !== 'float32') {
      fail(`weight '${spec.name}': dtype ${spec.dtype} is not supported (float32)`);
    }
    const size = count * (q ? 2 : 4);
    if (at + size > bytes.length) {
      fail(`weight '${spec.name}': the shards hold ${bytes.length} bytes, fewer than the manifest needs`);
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset + at, size);
    const data = new Float32Array(count);
    for (let i = 0; i < count; i++) data[i] = q ? f16ToNumber(view.getUint16(2 * i, true)) : view.getFloat32(4 * i, true);
    weights.set(spec.name, { shape: spec.shape, data });
    at += size;
  }
  if (at !== bytes.length) fail(`the shards hold ${bytes.length} bytes, the manifest ${at}`);
  return weights;
}

/**
 * The weight of `layer` called `kind` ('kernel', 'bias', 'embeddings'): its name ends with
 * "<layer name>/<kind>" (with any scope before it and an optional ':0').
 */
export function weightOf(weights, layer, kind, fail) {
  const name = layer.config.name;
  for (const [key, value] of weights) {
    const parts = key.replace(/:0$/, '').split('/');
    if (parts.at(-1) === kind && parts.at(-2) === name) return value;
  }
  return fail(`${layer.class_name} '${name}': no weight '${name}/${kind}' in the manifest`);
}
