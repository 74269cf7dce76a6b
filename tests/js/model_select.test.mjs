// The leaf's side of model:select: padding, the binary request (which tables a plan selects is
// the plan's C++ parse's: plan_handle.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { encodeSelectRequest, selectionIds } from '../../js_bindings/src/protocol/model_select.js';

test('selection ids are the distinct ids, padded with sorted unused ids, or null over max_select_rows', () => {
  const ids = Uint32Array.of(5, 9, 100);
  assert.deepEqual(selectionIds(ids, { vocab: 1000, maxSelectRows: 0, padding: null }), ids);
  for (const [padding, count] of [[{ multiple: 8 }, 8], [{ multiple: 3 }, 3], [{ count: 20 }, 20], [{ count: 2 }, 3]]) {
    const out = selectionIds(ids, { vocab: 1000, maxSelectRows: 0, padding });
    assert.equal(out.length, count, JSON.stringify(padding));
    for (const id of ids) assert.ok(out.includes(id));
    for (let i = 1; i < out.length; i++) assert.ok(out[i - 1] < out[i], 'sorted and unique');
    assert.ok(out.every((id) => id < 1000));
  }
  assert.deepEqual(selectionIds(Uint32Array.of(0, 2), { vocab: 4, maxSelectRows: 0, padding: { count: 100 } }),
    Uint32Array.of(0, 1, 2, 3), 'padding stops at the vocabulary');
  assert.equal(selectionIds(ids, { vocab: 1000, maxSelectRows: 3, padding: null }).length, 3);
  assert.equal(selectionIds(ids, { vocab: 1000, maxSelectRows: 2, padding: null }), null);
  assert.equal(selectionIds(ids, { vocab: 1000, maxSelectRows: 7, padding: { multiple: 8 } }).length, 7,
    'padding stops at max_select_rows');
});

test('the select request is u16 name length, name, u32 count and u32 ids, little-endian, per tensor', () => {
  const bytes = encodeSelectRequest([{ name: 'a', ids: Uint32Array.of(1, 258) }, { name: 'bé', ids: [] }]);
  assert.deepEqual([...bytes], [1, 0, 97, 2, 0, 0, 0, 1, 0, 0, 0, 2, 1, 0, 0, 3, 0, 98, 0xc3, 0xa9, 0, 0, 0, 0]);
});

// Regression: DataView.setUint32 wrapped a bad id (2^32 + 5 → 5, -1 → 2^32 - 1) and setUint16 a
// long name's length, so the request asked for other rows than the caller gave.
test('the select request refuses ids that are not u32 and names longer than 65535 bytes', () => {
  for (const [ids, shown] of [[[2 ** 32 + 5], '4294967301'], [[1, -1], '-1'], [[0.5], '0.5'], [[NaN], 'NaN']]) {
    assert.throws(() => encodeSelectRequest([{ name: 'emb/weight', ids }]),
      new RegExp(`select: ids of 'emb/weight'\\[\\d\\]: ${shown} is not an integer in \\[0, 2\\^32\\)`));
  }
  assert.throws(() => encodeSelectRequest([{ name: 'é'.repeat(40000), ids: [1] }]),
    /select: tensor name of 80000 UTF-8 bytes exceeds 65535/);
  assert.equal(encodeSelectRequest([{ name: 'x', ids: [2 ** 32 - 1] }]).length, 11);
});
