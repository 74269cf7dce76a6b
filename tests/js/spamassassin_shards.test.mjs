// The SpamAssassin client shards: what each simulated or CLI leaf holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { evalShardRecords, loadSpamAssassin, shardSizes } from '../../js_bindings/src/datasets/spamassassin.js';
import { spamAssassinClientData } from '../../js_bindings/src/node/simulate.js';

const records = await loadSpamAssassin();
const evalSplit = records.filter((r) => r.split === 'eval');
const key = (r) => `${r.group}/${r.id}`;

test('eval shards partition the eval split into near-equal shares of every group', () => {
  for (const count of [1, 3, 16, 500, evalSplit.length]) {
    const shards = Array.from({ length: count }, (_, i) => evalShardRecords(evalSplit, i, count));
    const keys = shards.flat().map(key);
    assert.equal(new Set(keys).size, evalSplit.length, `${count}: disjoint`);
    assert.deepEqual([...keys].sort(), evalSplit.map(key).sort(), `${count}: the whole split`);
    const sizes = shards.map((s) => s.length);
    assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `${count}: sizes ${Math.min(...sizes)}..${Math.max(...sizes)}`);
  }
  // Dealt in hash order, not in the corpus's group order: 16 shares each hold spam and ham.
  for (let i = 0; i < 16; i++) {
    const labels = new Set(evalShardRecords(evalSplit, i, 16).map((r) => r.label));
    assert.deepEqual([...labels].sort(), [0, 1], `shard ${i}/16`);
  }
});

test('with more clients than eval emails, each client past them evaluates one email a lower one holds', () => {
  const count = evalSplit.length + 7;
  const last = evalShardRecords(evalSplit, count - 1, count);
  assert.equal(last.length, 1);
  assert.deepEqual(last, evalShardRecords(evalSplit, (count - 1) % evalSplit.length, count));
  assert.deepEqual(evalShardRecords([], 0, 3), []);
  assert.throws(() => evalShardRecords(evalSplit, 3, 3), /shard 3\/3: need 0 <= index < count/);
});

// Regression: eval shards were hashed like IID train shards, so 50 of 500 simulated leaves (and
// 428 of 1,200) held no eval emails and failed every evaluate task they claimed.
test('every simulated client holds eval emails, up to as many clients as train emails', () => {
  for (const count of [500, 4000]) {
    // The clients the hashed rule left empty, and a few others.
    const hashedEmpty = shardSizes(evalSplit, count).flatMap((size, index) => (size === 0 ? [index] : []));
    assert.ok(hashedEmpty.length > 0);
    for (const index of [0, count - 1, ...hashedEmpty.slice(0, 8)]) {
      const data = spamAssassinClientData(records, index, count, { nonIid: true });
      assert.ok(data.eval.texts.length > 0, `client ${index}/${count}`);
      assert.equal(data.eval.texts.length, data.eval.labels.length);
    }
  }
});
