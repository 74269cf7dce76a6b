// The JS murmur3_32 (splits, shards, the demo page's featurization checks) against the test
// vectors the C++ implementation is checked against too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { murmur3_32 } from '../../js_bindings/src/datasets/murmur3.js';

const { vectors } = JSON.parse(readFileSync(new URL('../fixtures/murmur3_vectors.json', import.meta.url)));

test('murmur3_32 gives every shared test vector, on every seed', () => {
  const encoder = new TextEncoder();
  assert.ok(vectors.length >= 16);
  for (const { text, seed, hash } of vectors) {
    assert.equal(murmur3_32(encoder.encode(text), seed), hash, `${JSON.stringify(text)} seed ${seed}`);
  }
});
