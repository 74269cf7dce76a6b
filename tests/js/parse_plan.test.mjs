// parsePlan: a plan kept as JSON, checked by the C++ parser. The demo's plans (JSON files) pass as
// they are; a broken one throws the parser's message, naming the field and the rule.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { createExecutor, parsePlan } from '../../js_bindings/src/index.js';

const executor = await createExecutor();
const planFile = new URL('../../scripts/demo/spam_wide_deep_plan.json', import.meta.url);

test('a plan file passes as its text and as its parsed object, and comes back as the plan', () => {
  const text = readFileSync(planFile, 'utf8');
  assert.deepEqual(parsePlan(executor, text), JSON.parse(text));
  const object = JSON.parse(text);
  assert.equal(parsePlan(executor, object), object);
});

test('an invalid plan throws the C++ parser\'s message naming the field and the rule', () => {
  const broken = JSON.parse(readFileSync(planFile, 'utf8'));
  broken.train.optimizer.learning_rate = -1;
  assert.throws(() => parsePlan(executor, broken), (e) => e.code === 'InvalidInput' &&
    e.message === 'plan.train.optimizer.learning_rate: expected a number > 0');
  const tensor = Object.keys(broken.updates)[0];
  broken.train.optimizer.learning_rate = 0.01;
  broken.updates[tensor].compresion = { ids: 'u32' };
  assert.throws(() => parsePlan(executor, broken), new RegExp(
    `^Error: plan\\.updates\\['${tensor}'\\]: unknown field 'compresion' \\(the fields are encoding, `));
});

test('the text itself is checked: a key given twice is refused though JSON.parse would keep one', () => {
  const text = '{"model": {"inputs": {"x": "sparse_ids"}, "layers": [{"type": "embedding_bag", "name": "e", ' +
    '"vocab": 4, "dim": 2}, {"type": "dense", "name": "o", "units": 1}], "loss": "sigmoid_cross_entropy"}, ' +
    '"train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}, "epochs": 1, "epochs": 2}, ' +
    '"updates": {"o/weight": {"encoding": "dense", "aggregator": "weighted_mean"}}}';
  assert.throws(() => parsePlan(executor, text), /plan: the key 'epochs' \(in 'train'\) appears twice/);
});

test('anything but an object or JSON text is a TypeError', () => {
  for (const [value, got] of [[null, 'null'], [[], 'an array'], [3, 'number'], [undefined, 'undefined']]) {
    assert.throws(() => parsePlan(executor, value),
      new TypeError(`parsePlan: a plan is a JSON object or its JSON text, got ${got}`));
  }
});
