// planPrivacy, the privacy calculator, over the C++ accountant in wasm: the published values both
// ways, the feasibility facts, and errors naming the field as JS spells it.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { planPrivacy } from '../../js_bindings/src/index.js';

// Google's Spanish Gboard model (google-research/federated,
// dp_ftrl/blogpost_supplemental_privacy_accounting.ipynb): rho 0.81, epsilon 8.90 at delta 1e-10.
const GBOARD = Object.freeze({ devices: 3_000_000, perRound: 6500, rounds: 2000, maxParticipations: 6,
  minSeparation: 313, delta: 1e-10, noiseMultiplier: 7 });

function within(actual, expected, relative, what) {
  assert.ok(Math.abs(actual - expected) <= relative * Math.abs(expected),
    `${what}: ${actual} is not within ${relative * 100}% of ${expected}`);
}

test('the published Gboard setting reaches rho 0.81 and epsilon 8.90', async () => {
  const plan = await planPrivacy(GBOARD);
  within(plan.rho, 0.81, 0.01, 'rho');
  within(plan.epsilon, 8.90, 0.01, 'epsilon');
  assert.equal(plan.delta, 1e-10);
  assert.equal(plan.noiseMultiplier, 7);
  assert.equal(plan.squaredSensitivity, 79);
});

test('a target epsilon gives the least noise multiplier reaching it', async () => {
  const rest = { ...GBOARD, noiseMultiplier: undefined };
  const plan = await planPrivacy({ ...rest, targetEpsilon: 8.90 });
  within(plan.noiseMultiplier, 7, 0.01, 'noiseMultiplier');
  assert.ok(plan.epsilon <= 8.90);
  const stricter = await planPrivacy({ ...rest, targetEpsilon: 2 });
  assert.ok(stricter.noiseMultiplier > plan.noiseMultiplier);
  assert.ok(stricter.epsilon <= 2);
});

test('the feasibility facts say whether the population can keep the limits', async () => {
  const plan = await planPrivacy(GBOARD);
  assert.equal(plan.participationsPossible, 6);
  assert.equal(plan.deviceRoundsNeeded, 13_000_000);
  assert.equal(plan.deviceRoundsAvailable, 18_000_000);
  assert.equal(plan.devicesNeededPerWindow, 6500 * 314);
  assert.equal(plan.devicesNeeded, 2_166_667);
  assert.equal(plan.feasible, true);
  const small = await planPrivacy({ ...GBOARD, devices: 1_000_000 });
  assert.equal(small.feasible, false);
  assert.equal(small.epsilon, plan.epsilon, 'the population size does not enter epsilon');
});

test('bad settings throw InvalidInput naming the field', async () => {
  const cases = [
    [{ ...GBOARD, noiseMultiplier: 0 }, /^noiseMultiplier: must be a finite number > 0/],
    [{ ...GBOARD, delta: 1 }, /^delta: must be in \(0, 1\)/],
    [{ ...GBOARD, minSeparation: -1 }, /^minSeparation: must be an integer in \[0/],
    [{ ...GBOARD, maxParticipations: 0 }, /^maxParticipations: must be an integer in \[1/],
    [{ ...GBOARD, rounds: 2.5 }, /^rounds: must be an integer/],
    [{ ...GBOARD, perRound: '6500' }, /^perRound: must be an integer/],
    [{ ...GBOARD, devices: 0 }, /^devices: must be an integer in \[1/],
    [{ ...GBOARD, targetEpsilon: 3 }, /exactly one of noiseMultiplier and targetEpsilon/],
    [{ ...GBOARD, noiseMultiplier: undefined }, /exactly one of noiseMultiplier and targetEpsilon/],
    [{ ...GBOARD, noise: 7 }, /unknown field 'noise'/],
    [{ ...GBOARD, rounds: 1 << 20, minSeparation: 1000, maxParticipations: 1000 },
      /minSeparation and maxParticipations: the exact tree accounting/],
    [null, /settings must be an object/],
  ];
  for (const [settings, message] of cases) {
    await assert.rejects(planPrivacy(settings), (e) => e.code === 'InvalidInput' && message.test(e.message),
      `${JSON.stringify(settings)} -> ${message}`);
  }
});
