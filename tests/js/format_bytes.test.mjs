// formatBytes: the one byte-count format of the page, the dashboard, the CLIs and the demo table.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { formatBytes } from '../../js_bindings/src/index.js';

test('formatBytes picks SI units with the documented precision', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(999), '999 B');
  assert.equal(formatBytes(1500), '1.5 kB');
  assert.equal(formatBytes(123456), '123 kB');
  assert.equal(formatBytes(2_840_000), '2.84 MB');
  assert.equal(formatBytes(18_200_000), '18.2 MB');
  assert.equal(formatBytes(268_400_000), '268.4 MB');
  assert.equal(formatBytes(5_370_000_000), '5.37 GB');
});

test('formatBytes shows a dash for what is not a finite number', () => {
  assert.equal(formatBytes(NaN), '–');
  assert.equal(formatBytes(Infinity), '–');
});
