// A plan's "compression" through wasm: the leaf's int8 + delta_varint and f16 uploads are the same
// bytes in the SIMD and the baseline build, decode (in wasm) to the plain upload within their
// bounds, and stay plain safetensors that a reader knowing nothing of fedleaf opens (the
// independent parser below: header JSON, standard dtype names, packed in-bounds offsets).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createExecutor } from '../../js_bindings/src/index.js';

const plan = {
  model: {
    inputs: { t: 'sparse_ids' },
    layers: [{ type: 'embedding_bag', name: 'emb', input: 't', vocab: 4096, dim: 8, combiner: 'sqrtn' },
      { type: 'dense', name: 'out', units: 2 }],
    loss: 'softmax_cross_entropy',
  },
  train: { optimizer: { type: 'adam', learning_rate: 0.05 }, epochs: 2, batch_size: 8 },
  updates: {
    'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors' },
    'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
    'out/bias': { encoding: 'dense', aggregator: 'weighted_mean' },
  },
};

function withCompression(values, ids) {
  const updates = Object.fromEntries(Object.entries(plan.updates).map(([name, u]) =>
    [name, { ...u, compression: { values, ...(ids && u.encoding === 'row_sparse' ? { ids } : {}) } }]));
  return { ...plan, updates };
}

function randomCsr(seed, examples, vocab) {
  let state = seed;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const offsets = [0];
  const ids = [];
  const labels = [];
  for (let i = 0; i < examples; i++) {
    const count = 1 + Math.floor(next() * 10);
    for (let k = 0; k < count; k++) ids.push(Math.floor(next() * vocab));
    offsets.push(ids.length);
    labels.push(next() < 0.5 ? 0 : 1);
  }
  return { offsets, ids, labels, numFeatures: vocab };
}

// A safetensors reader that shares nothing with fedleaf's: the header, its arrays (dtype names of
// the safetensors format), packed and inside the file.
const DTYPE_SIZES = {
  F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2, U8: 1, BOOL: 1,
};
function independentRead(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  const dataStart = 8 + headerLength;
  const arrays = Object.entries(header).filter(([name]) => name !== '__metadata__');
  let end = 0;
  for (const [name, a] of arrays.sort((x, y) => x[1].data_offsets[0] - y[1].data_offsets[0])) {
    assert.ok(a.dtype in DTYPE_SIZES, `${name}: ${a.dtype} is a safetensors dtype`);
    const count = a.shape.reduce((n, d) => n * d, 1);
    assert.equal(a.data_offsets[1] - a.data_offsets[0], count * DTYPE_SIZES[a.dtype], `${name}: size`);
    assert.equal(a.data_offsets[0], end, `${name}: packed`);
    end = a.data_offsets[1];
  }
  assert.equal(dataStart + end, bytes.length, 'the arrays end where the file does');
  return { arrays: Object.fromEntries(arrays), metadata: header.__metadata__ };
}

test('int8 + delta_varint, f16 and u32-id uploads are the same bytes in both builds and decode within their bounds', async () => {
  const builds = [];
  for (const simd of [true, false]) {
    const executor = await createExecutor({ simd });
    const data = executor.datasetFromCsr(randomCsr(3, 60, 4096));
    try {
      const model = executor.initializeModel(plan, 5);
      const plain = await executor.train(plan, model, data, { taskId: 't1' });
      const int8 = await executor.train(withCompression('int8', 'delta_varint'), model, data, { taskId: 't1' });
      const f16 = await executor.train(withCompression('f16'), model, data, { taskId: 't1' });
      const u32 = await executor.train(withCompression('f32', 'u32'), model, data, { taskId: 't1' });
      builds.push({ int8: int8.bytes, f16: f16.bytes, u32: u32.bytes });
      // dim 8: a row is 8 × 4 bytes of values and an 8-byte id plain, 8 + 4 + 1 to 2 bytes compressed.
      assert.ok(plain.bytes.length > 2.5 * int8.bytes.length, `${plain.bytes.length} vs ${int8.bytes.length} bytes`);

      const sent = executor.decodeSafetensors(plain.bytes).tensors['emb/weight'];
      const got = executor.decodeSafetensors(int8.bytes).tensors['emb/weight'];
      assert.deepEqual(got.indices, sent.indices);
      const dim = 8;
      for (let r = 0; r < sent.indices.length; r++) {
        const row = sent.values.subarray(r * dim, (r + 1) * dim);
        const scale = Math.fround(Math.max(...row.map(Math.abs)) / 127);
        for (let j = 0; j < dim; j++) {
          const error = Math.abs(row[j] - got.values[r * dim + j]);
          assert.ok(error <= scale / 2 + Math.abs(row[j]) * 2 ** -23, `row ${r} value ${j}: ${error} > ${scale / 2}`);
        }
      }
      const halves = executor.decodeSafetensors(f16.bytes).tensors['emb/weight'].values;
      for (let i = 0; i < sent.values.length; i++) {
        const error = Math.abs(sent.values[i] - halves[i]);
        assert.ok(error <= Math.abs(sent.values[i]) * 2 ** -11 + 2 ** -25, `value ${i}: ${error}`);
      }

      const file = independentRead(int8.bytes);
      assert.equal(file.arrays['emb/weight:indices'].dtype, 'U8');
      assert.equal(file.arrays['emb/weight:values'].dtype, 'I8');
      assert.equal(file.arrays['emb/weight:scales'].dtype, 'F32');
      assert.equal(file.arrays['out/weight'].dtype, 'I8');
      assert.equal(file.metadata['emb/weight:values_compression'], 'int8');
      assert.equal(file.metadata['emb/weight:ids_compression'], 'delta_varint');
      assert.equal(independentRead(f16.bytes).arrays['emb/weight:values'].dtype, 'F16');
      // u32 ids: the plain update with 4 bytes an id instead of 8, read back exactly.
      const u32File = independentRead(u32.bytes);
      assert.equal(u32File.arrays['emb/weight:indices'].dtype, 'U32');
      assert.ok(plain.bytes.length - u32.bytes.length >= 4 * sent.indices.length - 8);
      assert.deepEqual(executor.decodeSafetensors(u32.bytes).tensors['emb/weight'], sent);
    } finally {
      data.delete();
    }
  }
  assert.deepEqual(builds[0], builds[1], 'SIMD and baseline write the same compressed bytes');
});
