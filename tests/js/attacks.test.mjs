// The poisoning leaves of robustness tests and benches (js_bindings/src/node/attacks.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createExecutor } from '../../js_bindings/src/index.js';
import { attackedLabels, attackingExecutor, parseAttack } from '../../js_bindings/src/node/attacks.js';
import { SMALL_TEXT_PLAN } from '../e2e/browser/executor_cases.mjs';

test('parseAttack reads each kind and rejects the rest naming the rule', () => {
  assert.deepEqual(parseAttack('scale:1e6'), { kind: 'scale', value: 1e6 });
  assert.deepEqual(parseAttack('claim_examples:9007199254740992'), { kind: 'claim_examples', value: 2 ** 53 });
  assert.deepEqual(parseAttack('flip_labels'), { kind: 'flip_labels', value: null });
  assert.throws(() => parseAttack('nudge:2'), /kind must be one of scale, claim_examples, flip_labels/);
  assert.throws(() => parseAttack('scale'), /scale needs a finite value > 0/);
  assert.throws(() => parseAttack('scale:-1'), /scale needs a finite value > 0/);
  assert.throws(() => parseAttack('claim_examples:1.5'), /claim_examples needs an integer/);
  assert.throws(() => parseAttack('flip_labels:1'), /flip_labels takes no value/);
});

test('attackedLabels flips two-class labels only for flip_labels', () => {
  assert.deepEqual(attackedLabels([0, 1, 1], parseAttack('flip_labels')), [1, 0, 0]);
  const labels = [0, 1];
  assert.equal(attackedLabels(labels, parseAttack('scale:2')), labels);
  assert.equal(attackedLabels(labels, null), labels);
});

test('an attacking executor scales train updates or inflates their example count', async () => {
  const executor = await createExecutor();
  const dataset = executor.datasetFromTexts(['win cash now', 'see you at lunch', 'free prize', 'meeting moved'],
    [1, 0, 1, 0], SMALL_TEXT_PLAN);
  try {
    const model = executor.initializeModel(SMALL_TEXT_PLAN, 7);
    const task = { task_id: 1, kind: 'train', plan: SMALL_TEXT_PLAN };
    const honest = executor.decodeSafetensors((await executor.runTask(task, model, dataset)).bytes);

    const scaled = executor.decodeSafetensors(
      (await attackingExecutor(executor, parseAttack('scale:1000')).runTask(task, model, dataset)).bytes);
    const claimed = executor.decodeSafetensors(
      (await attackingExecutor(executor, parseAttack('claim_examples:9007199254740992')).runTask(task, model, dataset)).bytes);

    const values = (t) => t.values ?? t.data;
    for (const name of Object.keys(honest.tensors)) {
      const h = values(honest.tensors[name]);
      const s = values(scaled.tensors[name]);
      assert.equal(s.length, h.length);
      for (let i = 0; i < h.length; i++) assert.equal(s[i], Math.fround(h[i] * 1000), `${name}[${i}]`);
    }
    assert.equal(claimed.metadata.num_examples, '9007199254740992');
    assert.equal(honest.metadata.num_examples, '4');
    const evaluated = await attackingExecutor(executor, parseAttack('scale:1000'))
      .runTask({ ...task, kind: 'evaluate' }, model, dataset);
    assert.equal(executor.decodeSafetensors(evaluated.bytes).metadata.num_examples, '4');
  } finally {
    dataset.delete();
  }
});
