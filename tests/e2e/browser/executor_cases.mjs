// Executor test cases shared by Node and browsers: tests/e2e/executor_cases.test.mjs runs them
// under node:test, tests/e2e/browser/index.html (served at /tests/) runs them in a page, and
// tests/e2e/web_demo.test.mjs asserts that all of them pass in headless Chromium.
//
//   for (const {name, run} of executorCases({createExecutor, wasmSimdSupported, version})) {
//     await run();   // throws an Error describing the first failed check
//   }
//
// No test framework and no Node APIs: the checks below are all the assertions the cases need.

function fail(message) {
  throw new Error(message);
}

function equal(actual, expected, what) {
  if (!Object.is(actual, expected)) {
    fail(`${what}: expected ${String(expected)}, got ${String(actual)}`);
  }
}

function ok(value, what) {
  if (!value) fail(what);
}

// Deep equality of plain values, arrays and typed arrays (element type must match too).
function sameValue(a, b) {
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) {
    if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b)) return false;
    if (a.constructor !== b.constructor || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => sameValue(v, b[i]));
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((k) => sameValue(a[k], b[k]));
  }
  return Object.is(a, b);
}

function deepEqual(actual, expected, what) {
  if (!sameValue(actual, expected)) fail(`${what}: values differ`);
}

// Runs fn, which must throw an Error whose message matches `message` (and whose code is `code`).
async function throws(fn, { message, code }, what) {
  let error;
  try {
    await fn();
  } catch (e) {
    error = e;
  }
  ok(error instanceof Error, `${what}: expected an Error to be thrown`);
  if (code !== undefined) equal(error.code, code, `${what}: error code`);
  ok(message.test(error.message), `${what}: message "${error.message}" does not match ${message}`);
}

// Every dtype and both sparse encodings (the tensors tests/tools/safetensors_tool.cc writes).
export function fixtureTensors() {
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

/**
 * The test suites' one plan shape: hashed bag-of-words → embedding_bag → dense (2 classes), the
 * embedding aggregated with mean_over_contributors and the dense parts with weighted_mean.
 * `features: false` leaves the "features" section out (plans of scripted, pre-featurized leaves);
 * `bias: false` leaves out/bias out of "updates" (it is then carried over unchanged).
 */
export function textPlan({ vocab, dim, combiner = 'sqrtn', optimizer = { type: 'sgd', learning_rate: 0.1 },
                           epochs = 1, batchSize = 32, features = true, bias = true }) {
  const plan = {
    model: {
      inputs: { tokens: 'sparse_ids' },
      layers: [
        { type: 'embedding_bag', name: 'emb', input: 'tokens', vocab, dim, combiner },
        { type: 'dense', name: 'out', units: 2 },
      ],
      loss: 'softmax_cross_entropy',
    },
    train: { optimizer, epochs, batch_size: batchSize },
    updates: {
      'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors' },
      'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
    },
  };
  if (features) plan.features = { hash: 'murmur3_32', num_buckets: vocab, ngrams: 1, binary: true };
  if (bias) plan.updates['out/bias'] = { encoding: 'dense', aggregator: 'weighted_mean' };
  return plan;
}

// A hashed bag-of-words spam model small enough to train in a few milliseconds.
export const SMALL_TEXT_PLAN = textPlan({
  vocab: 4096, dim: 4, optimizer: { type: 'adam', learning_rate: 0.05 }, epochs: 3, batchSize: 4,
});

const TEXTS = [
  'win a free prize now click here', 'cheap meds online buy now', 'you are a winner claim cash',
  'limited offer free money click', 'meeting moved to thursday afternoon', 'patch for the build script attached',
  'lunch tomorrow with the team', 'notes from the design review',
];
const LABELS = [1, 1, 1, 1, 0, 0, 0, 0];

// Safetensors bytes of raw arrays [{name, dtype, shape, bytes: Uint8Array}]: how the cases build
// F16 and BF16 files, which encodeSafetensors (F32, F64, I32, I64, U8) does not write.
function rawSafetensors(arrays) {
  const header = {};
  let offset = 0;
  for (const { name, dtype, shape, bytes } of arrays) {
    header[name] = { dtype, shape, data_offsets: [offset, offset + bytes.length] };
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const out = new Uint8Array(8 + json.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(new TextEncoder().encode(json), 8);
  let at = 8 + json.length;
  for (const { bytes } of arrays) {
    out.set(bytes, at);
    at += bytes.length;
  }
  return out;
}

const halfBytes = (bits) => new Uint8Array(Uint16Array.from(bits).buffer);

/**
 * @param {{createExecutor: Function, wasmSimdSupported: Function, version: string}} env
 * @returns {Array<{name: string, run: () => Promise<void>}>}
 */
export function executorCases({ createExecutor, wasmSimdSupported, version }) {
  const cases = [];
  const add = (name, run) => cases.push({ name, run });
  const executors = new Map();
  const executorFor = (simd) => {
    if (!executors.has(simd)) executors.set(simd, createExecutor({ simd }));
    return executors.get(simd);
  };

  add('auto picks the SIMD build exactly when the engine validates SIMD', async () => {
    const executor = await createExecutor();
    equal(executor.simd, wasmSimdSupported(), 'executor.simd');
  });

  for (const simd of [true, false]) {
    const variant = simd ? 'SIMD' : 'baseline';
    const needsSimd = simd && !wasmSimdSupported();

    add(`${variant} build loads and reports the package version`, async () => {
      if (needsSimd) {
        await throws(() => createExecutor({ simd: true }), { message: /does not support wasm SIMD/ },
          'asking for SIMD without support');
        return;
      }
      const executor = await executorFor(simd);
      equal(executor.simd, simd, 'executor.simd');
      equal(executor.version, version, 'executor.version');
    });
    if (needsSimd) continue;

    add(`${variant} build round-trips a 1e6-element tensor`, async () => {
      const executor = await executorFor(simd);
      const data = new Float32Array(1_000_000);
      for (let i = 0; i < data.length; i++) data[i] = Math.sin(i) * 1000;
      const bytes = executor.encodeSafetensors({ big: { shape: [1000, 1000], data } }, { k: 'v' });
      equal(bytes.length % 8, 0, 'encoded length modulo 8');
      const { tensors, metadata } = executor.decodeSafetensors(bytes);
      deepEqual(metadata, { k: 'v' }, 'metadata');
      deepEqual(tensors.big.shape, [1000, 1000], 'shape');
      equal(tensors.big.dtype, 'F32', 'dtype');
      deepEqual(tensors.big.data, data, 'data');
    });

    add(`${variant} build round-trips every dtype and both sparse encodings`, async () => {
      const executor = await executorFor(simd);
      const input = fixtureTensors();
      const { tensors } = executor.decodeSafetensors(executor.encodeSafetensors(input));
      for (const [name, t] of Object.entries(input)) {
        if (t.encoding) {
          equal(tensors[name].encoding, t.encoding, `${name} encoding`);
          deepEqual(tensors[name].indices, t.indices, `${name} indices`);
          deepEqual(tensors[name].values, t.values, `${name} values`);
          deepEqual(tensors[name].dense_shape, t.dense_shape, `${name} dense_shape`);
        } else {
          deepEqual(tensors[name].shape, t.shape, `${name} shape`);
          deepEqual(tensors[name].data, t.data, `${name} data`);
        }
      }
    });

    add(`${variant} build reads F16 and BF16 tensors as F32 and trains from a BF16 model`, async () => {
      const executor = await executorFor(simd);
      const { tensors } = executor.decodeSafetensors(rawSafetensors([
        { name: 'a', dtype: 'F16', shape: [3], bytes: halfBytes([0x3c00, 0x0001, 0xfc00]) },
        { name: 'b', dtype: 'BF16', shape: [2], bytes: halfBytes([0x3f80, 0xc040]) },
      ]));
      equal(tensors.a.dtype, 'F32', 'F16 is read as');
      deepEqual(tensors.a.data, new Float32Array([1, 2 ** -24, -Infinity]), 'F16 values');
      deepEqual(tensors.b.data, new Float32Array([1, -3]), 'BF16 values');

      // The initial model truncated to BF16 (the top 16 bits of each F32) trains to the same
      // update as its F32 widening.
      const initial = executor.decodeSafetensors(executor.initializeModel(SMALL_TEXT_PLAN, 1)).tensors;
      const stored = rawSafetensors(Object.entries(initial).map(([name, t]) => ({
        name, dtype: 'BF16', shape: t.shape,
        bytes: halfBytes(Array.from(new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length), (b) => b >>> 16)),
      })));
      const widened = executor.encodeSafetensors(executor.decodeSafetensors(stored).tensors);
      const data = executor.datasetFromTexts(TEXTS, LABELS, SMALL_TEXT_PLAN);
      try {
        deepEqual((await executor.train(SMALL_TEXT_PLAN, stored, data)).bytes,
          (await executor.train(SMALL_TEXT_PLAN, widened, data)).bytes, 'updates from BF16 and from F32');
      } finally {
        data.delete();
      }
    });

    add(`${variant} build throws Errors with the core's message`, async () => {
      const executor = await executorFor(simd);
      const good = executor.encodeSafetensors({ w: { shape: [4], data: new Float32Array(4) } });
      await throws(() => executor.decodeSafetensors(good.subarray(0, good.length - 3)), {
        code: 'InvalidInput',
        message: /tensor 'w': data_offsets end 16 is out of bounds of the 13-byte data section/,
      }, 'truncated data section');
      await throws(() => executor.decodeSafetensors(new Uint8Array([1, 2])),
        { message: /truncated input: 2 bytes/ }, 'two bytes');
      await throws(
        () => executor.encodeSafetensors({ w: { dtype: 'F32', shape: [3], data: new Float32Array(4) } }),
        { code: 'InvalidInput', message: /tensor 'w': 16 bytes do not match shape \[3\] of F32/ },
        'shape mismatch');
      await throws(() => executor.validatePlan({ model: {} }), { code: 'InvalidInput', message: /plan\.model/ },
        'invalid plan');
    });

    add(`${variant} build coalesces sparse tuples`, async () => {
      const executor = await executorFor(simd);
      const c = executor.coalesce({
        encoding: 'row_sparse',
        indices: new Int32Array([4, 1, 4]),
        values: new Float64Array([1, 2, 10, 20, 100, 200]),
        dense_shape: [6, 2],
      });
      deepEqual(c.indices, new Int32Array([1, 4]), 'indices');
      deepEqual(c.values, new Float64Array([10, 20, 101, 202]), 'values');
    });

    add(`${variant} build trains a text model whose update holds only the touched rows`, async () => {
      const executor = await executorFor(simd);
      const data = executor.datasetFromTexts(TEXTS, LABELS, SMALL_TEXT_PLAN);
      try {
        const model = executor.initializeModel(SMALL_TEXT_PLAN, 3);
        const steps = [];
        const result = await executor.train(SMALL_TEXT_PLAN, model, data, {
          taskId: 't1', onProgress: (step) => steps.push(step),
        });
        equal(result.numExamples, 8, 'numExamples');
        equal(result.steps, 6, 'steps (3 epochs of 2 batches)');
        equal(steps[steps.length - 1], 6, 'last progress step');
        ok(Number.isFinite(result.loss) && result.loss > 0, `loss ${result.loss} is positive`);
        const { tensors, metadata } = executor.decodeSafetensors(result.bytes);
        equal(metadata.kind, 'train', 'metadata kind');
        equal(metadata.num_examples, '8', 'metadata num_examples');
        equal(metadata.task_id, 't1', 'metadata task_id');
        const emb = tensors['emb/weight'];
        equal(emb.encoding, 'row_sparse', 'emb/weight encoding');
        equal(emb.indices.length, data.numDistinctIds, 'update rows = distinct ids of the data');
        ok(data.numDistinctIds < 4096 / 10, 'the texts touch few rows of the table');
        deepEqual(emb.dense_shape, [4096, 4], 'emb/weight dense_shape');
        deepEqual(result.bytes, executor.execute(SMALL_TEXT_PLAN, model, data, { taskId: 't1' }),
          'train() equals the one-call execute()');

        const before = executor.evaluate(SMALL_TEXT_PLAN, model, data);
        const trained = executor.applyUpdate(SMALL_TEXT_PLAN, model, result.bytes);
        deepEqual(executor.decodeSafetensors(trained).tensors,
          executor.decodeSafetensors(addUpdate(executor, model, result.bytes)).tensors, 'applyUpdate is model + update');
        const after = executor.evaluate(SMALL_TEXT_PLAN, trained, data);
        ok(after.loss < before.loss, `eval loss falls after training (${before.loss} → ${after.loss})`);
        equal(after.numExamples, 8, 'evaluated examples');
      } finally {
        data.delete();
      }
    });

    add(`${variant} build predicts class probabilities that agree with evaluate`, async () => {
      const executor = await executorFor(simd);
      const data = executor.datasetFromTexts(TEXTS, LABELS, SMALL_TEXT_PLAN);
      try {
        const model = executor.initializeModel(SMALL_TEXT_PLAN, 5);
        const p = executor.predict(SMALL_TEXT_PLAN, model, data);
        ok(p instanceof Float32Array, 'predict returns a Float32Array');
        equal(p.length, 16, 'probabilities of 8 examples × 2 classes');
        let correct = 0;
        for (let i = 0; i < 8; i++) {
          ok(Math.abs(p[2 * i] + p[2 * i + 1] - 1) < 1e-6, `row ${i} sums to 1`);
          if ((p[2 * i + 1] > p[2 * i] ? 1 : 0) === LABELS[i]) correct += 1;
        }
        equal(correct / 8, executor.evaluate(SMALL_TEXT_PLAN, model, data).accuracy, 'accuracy');
        deepEqual(executor.predict({ model: SMALL_TEXT_PLAN.model }, model, data), p,
          'a plan with only its model (inference) predicts the same');
        await throws(() => executor.predict(SMALL_TEXT_PLAN, new Uint8Array(3), data),
          { code: 'InvalidInput', message: /truncated input: 3 bytes/ }, 'predict with a broken model');
      } finally {
        data.delete();
      }
    });

    add(`${variant} build stops training when the signal aborts`, async () => {
      const executor = await executorFor(simd);
      const data = executor.datasetFromTexts(TEXTS, LABELS, SMALL_TEXT_PLAN);
      try {
        const controller = new AbortController();
        controller.abort(new Error('stopped by the test'));
        await throws(() => executor.train(SMALL_TEXT_PLAN, executor.initializeModel(SMALL_TEXT_PLAN, 1), data,
          { signal: controller.signal }), { message: /stopped by the test/ }, 'aborted training');
      } finally {
        data.delete();
      }
    });
  }
  return cases;
}

// model + update, using only the public codec: the reference of executor.applyUpdate.
function addUpdate(executor, modelBytes, updateBytes) {
  const { tensors: model } = executor.decodeSafetensors(modelBytes);
  const { tensors: update } = executor.decodeSafetensors(updateBytes);
  for (const [name, u] of Object.entries(update)) {
    const target = model[name].data;
    if (u.encoding === 'row_sparse') {
      const width = u.values.length / u.indices.length;
      u.indices.forEach((row, k) => {
        for (let j = 0; j < width; j++) target[Number(row) * width + j] += u.values[k * width + j];
      });
    } else {
      for (let i = 0; i < target.length; i++) target[i] += u.data[i];
    }
  }
  return executor.encodeSafetensors(model);
}
