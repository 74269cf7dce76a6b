// Records in: executor.featurizeRecords and checkRecords — plain records → the columns of a plan's
// inputs through the C++ featurizer, and hostile records refused with an Error, never a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createExecutor } from '../../js_bindings/src/index.js';
import { checkRecords, recordFieldPath } from '../../js_bindings/src/engine/records.js';
import { murmur3_32 } from '../../js_bindings/src/datasets/murmur3.js';

const encoder = new TextEncoder();
const bucket = (text, seed, buckets) => murmur3_32(encoder.encode(text), seed) % buckets;

const PLAN = {
  model: {
    inputs: {
      body: { type: 'sparse_ids', features: { text: 'body', num_buckets: 4096 } },
      sender: { type: 'sparse_ids', features: { column: 'sender_domain', hash_buckets: 1024 } },
      cross: { type: 'sparse_ids', features: { cross: ['sender_domain', 'subject_tokens'], hash_buckets: 65536 } },
      numeric: {
        type: 'dense', dim: 2, features: {
          numeric: [
            { field: 'length', transform: 'log1p' },
            { field: 'caps_share', transform: { standardize: { mean: 0.1, std: 0.05 } }, clip: [-3, 3] },
          ],
        },
      },
    },
    layers: [],
    loss: 'sigmoid_cross_entropy',
  },
};

const executor = await createExecutor();

test('featurizeRecords gives each input with features its columns, in the order of their names', () => {
  const inputs = executor.featurizeRecords([
    { body: 'Win win cash', sender_domain: 'example.com', subject_tokens: ['win', 'cash'], length: 99, caps_share: 0.2 },
    { sender_domain: null, subject_tokens: [], length: null },
  ], PLAN);
  assert.deepEqual(inputs.map((c) => [c.name, c.kind]),
    [['body', 'sparse_ids'], ['cross', 'sparse_ids'], ['numeric', 'dense'], ['sender', 'sparse_ids']]);
  const [body, cross, numeric, sender] = inputs;

  const win = bucket('win', 0, 4096);
  const cash = bucket('cash', 0, 4096);
  assert.ok(body.offsets instanceof Uint32Array && body.ids instanceof Uint32Array && body.weights instanceof Float32Array);
  assert.deepEqual([...body.offsets], [0, 2, 2]);
  assert.deepEqual([...body.ids], [Math.min(win, cash), Math.max(win, cash)]);
  assert.deepEqual([...body.weights], win < cash ? [2, 1] : [1, 2]);
  assert.equal(body.numFeatures, 4096);

  const crossed = ['example.com\x1fwin', 'example.com\x1fcash'].map((t) => bucket(t, 0, 65536)).sort((a, b) => a - b);
  assert.deepEqual([...cross.ids], crossed);
  assert.deepEqual([...cross.offsets], [0, 2, 2]);

  assert.ok(numeric.dense instanceof Float32Array);
  assert.equal(numeric.width, 2);
  assert.deepEqual([...numeric.dense],
    [Math.fround(Math.log1p(99)), Math.fround((0.2 - 0.1) / 0.05), 0, Math.fround(-2)]);

  assert.deepEqual([...sender.ids], [bucket('example.com', 0, 1024)]);
  assert.deepEqual([...sender.offsets], [0, 1, 1]);
});

test('the plan may be JSON text, and a plan without features gives no columns', () => {
  assert.equal(executor.featurizeRecords([{ sender_domain: 'a' }], JSON.stringify(PLAN)).length, 4);
  assert.deepEqual(executor.featurizeRecords([{ a: 1 }], { model: { inputs: { t: 'sparse_ids' } } }), []);
});

// Every hostile input throws an Error (never a crash, never a silent default) naming where.
function refuses(records, pattern, plan = PLAN) {
  assert.throws(() => executor.featurizeRecords(records, plan), (e) => {
    assert.ok(e instanceof Error);
    assert.match(e.message, pattern);
    return true;
  });
}

test('NaN and Infinity are refused in JS before JSON.stringify would make them null', () => {
  refuses([{ length: 1 }, { length: NaN }], /^records\[1\]\.length: NaN is not a finite number/);
  refuses([{ caps_share: Infinity }], /^records\[0\]\.caps_share: Infinity is not a finite number/);
  refuses([{ subject_tokens: ['a', -Infinity] }], /^records\[0\]\.subject_tokens\[1\]: -Infinity is not a finite/);
  // An unused field too: a record's numbers are finite, whichever the plan reads.
  refuses([{ unused: NaN }], /^records\[0\]\.unused: NaN/);
});

test('what is not an array of flat plain objects is refused', () => {
  refuses('[{}]', /^records: expected an array of records \(plain objects\), got a string/);
  refuses({ 0: {} }, /^records: expected an array/);
  refuses([{}, null], /^records\[1\]: expected a record \(a plain object\), got null/);
  refuses([[1]], /^records\[0\]: expected a record \(a plain object\), got an array/);
  refuses([new Date(0)], /^records\[0\]: expected a record \(a plain object\), got a Date/);
  refuses([{ sender_domain: { nested: 1 } }], /^records\[0\]\.sender_domain: expected a string, number, boolean or array of them, got an object/);
  refuses([{ when: new Date(0) }], /^records\[0\]\.when: .* got a Date/);
  refuses([{ tokens: ['a', ['b']] }], /^records\[0\]\.tokens\[1\]: expected a string, number or boolean, got an array/);
  refuses([{ tokens: ['a', null] }], /^records\[0\]\.tokens\[1\]: expected a string, number or boolean, got null/);
  refuses([{ f: () => 1 }], /^records\[0\]\.f: expected a string, number or boolean, got a function/);
  refuses([{ n: 10n }], /^records\[0\]\.n: expected a string, number or boolean, got a bigint/);
  refuses([{ 'a b': NaN }], /^records\[0\]\["a b"\]: NaN/);
});

test('the core refuses a field of the wrong type for its feature, naming record and field', () => {
  refuses([{ length: '12' }], /^records\[0\]\.length: expected a number \(or null\), got a string/);
  refuses([{ body: 3 }], /^records\[0\]\.body: expected a string \(or null\), got a number/);
  refuses([{ sender_domain: 1.5 }], /^records\[0\]\.sender_domain: a categorical number must be an integer/);
  refuses([{ length: 1e300 }], /^records\[0\]\.length: 1e\+300 is beyond a 32-bit float/, {
    model: { inputs: { n: { type: 'dense', dim: 1, features: { numeric: [{ field: 'length' }] } } } },
  });
  refuses([{}], /^plan\.model\.inputs\.sender\.features\.hash_buckets: missing/, {
    model: { inputs: { sender: { type: 'sparse_ids', features: { column: 'd' } } } },
  });
});

test('hostile records: 10 MB strings, 100,000 fields, __proto__ keys', () => {
  const big = 'spam '.repeat(2 * 1024 * 1024); // 10 MB
  const [body] = executor.featurizeRecords([{ body: big }], {
    model: { inputs: { body: PLAN.model.inputs.body } },
  });
  assert.deepEqual([...body.ids], [bucket('spam', 0, 4096)]);
  assert.deepEqual([...body.weights], [2 * 1024 * 1024]);

  const wide = {};
  for (let i = 0; i < 100000; i++) wide[`f${i}`] = i;
  wide.sender_domain = 'last.org';
  const [sender] = executor.featurizeRecords([wide], { model: { inputs: { sender: PLAN.model.inputs.sender } } });
  assert.deepEqual([...sender.ids], [bucket('last.org', 0, 1024)]);

  const wideNaN = { ...wide, f99999: NaN };
  refuses([wideNaN], /^records\[0\]\.f99999: NaN/);

  // A JSON.parse'd record holds "__proto__" as an own field: a plain field name to the featurizer.
  const proto = JSON.parse('[{"__proto__": "x.org"}, {"__proto__": {"polluted": true}}]');
  const plan = { model: { inputs: { p: { type: 'sparse_ids', features: { column: '__proto__', hash_buckets: 64 } } } } };
  const [p] = executor.featurizeRecords(proto.slice(0, 1), plan);
  assert.deepEqual([...p.ids], [bucket('x.org', 0, 64)]);
  refuses(proto, /^records\[1\]\.__proto__: expected a string, number, boolean or array of them, got an object/, plan);
  assert.equal({}.polluted, undefined);
  // A record made with a null prototype is a plain object too.
  const bare = Object.create(null);
  bare.sender_domain = 'b.org';
  assert.equal(executor.featurizeRecords([bare], plan).length, 1);
});

test('checkRecords passes good records through and names fields as the core does', () => {
  const records = [{ a: 'x', b: 1, c: true, d: null, e: undefined, f: ['x', 2, false] }];
  assert.equal(checkRecords(records), records);
  assert.equal(recordFieldPath(3, 'length'), 'records[3].length');
  assert.equal(recordFieldPath(0, '__proto__'), 'records[0].__proto__');
  assert.equal(recordFieldPath(1, 'a b'), 'records[1]["a b"]');
  assert.equal(recordFieldPath(1, 'k'.repeat(70)), `records[1]["${'k'.repeat(64)}"...]`);
});

test('the baseline and the SIMD builds featurize alike', async () => {
  const baseline = await createExecutor({ simd: false });
  const records = [
    { body: 'Cheap meds, cheap!', sender_domain: 'x.org', subject_tokens: ['cheap', 7, true], length: 5e6, caps_share: 0.9 },
    { body: '', sender_domain: ['a', 'b'], subject_tokens: ['z'] },
  ];
  assert.deepEqual(baseline.featurizeRecords(records, PLAN), executor.featurizeRecords(records, PLAN));
});
