// fedleaf-admin plan-privacy: the calculator's command answers as planPrivacy does (the published
// Gboard values both ways), says when the population cannot keep the limits, and exits 2 naming the
// flag or the accountant's field on bad input.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { runAdmin } from '../../js_bindings/src/node/admin_cli.js';

const GBOARD = ['--devices', '3000000', '--per-round', '6500', '--rounds', '2000', '--max-participations', '6',
  '--min-separation', '313', '--delta', '1e-10'];

async function admin(argv) {
  const out = [];
  const err = [];
  const status = await runAdmin(['plan-privacy', ...argv], { env: {}, out: (l) => out.push(l), err: (l) => err.push(l) });
  return { status, out: out.join('\n'), err: err.join('\n') };
}

test('plan-privacy answers the epsilon of the published Gboard setting and the noise a target needs', async () => {
  const forward = await admin([...GBOARD, '--noise-multiplier', '7', '--json']);
  assert.equal(forward.status, 0, forward.err);
  const plan = JSON.parse(forward.out);
  assert.ok(Math.abs(plan.epsilon - 8.90) / 8.90 < 0.01, `epsilon ${plan.epsilon}`);
  assert.ok(Math.abs(plan.rho - 0.81) / 0.81 < 0.01, `rho ${plan.rho}`);
  assert.equal(plan.feasible, true);

  const inverse = await admin([...GBOARD, '--target-epsilon', '8.9']);
  assert.equal(inverse.status, 0, inverse.err);
  const z = Number(/noise multiplier ([\d.]+)/.exec(inverse.out)[1]);
  assert.ok(Math.abs(z - 7) < 0.07, inverse.out);
  assert.match(inverse.out, /^feasible/m);
});

test('plan-privacy says when the devices cannot keep the limits', async () => {
  const small = GBOARD.map((a) => (a === '3000000' ? '3000' : a));
  const { status, out } = await admin([...small, '--noise-multiplier', '7']);
  assert.equal(status, 0);
  assert.match(out, /NOT feasible: the limits need at least \d+ devices, not 3000/);
});

test('plan-privacy exits 2 naming the flag or the field on bad input', async () => {
  const cases = [
    [[...GBOARD], /exactly one of --noise-multiplier and --target-epsilon/],
    [[...GBOARD, '--noise-multiplier', '7', '--target-epsilon', '8'], /exactly one of/],
    [GBOARD.slice(2).concat('--noise-multiplier', '7'), /missing --devices/],
    [GBOARD.map((a) => (a === '2000' ? 'many' : a)).concat('--noise-multiplier', '7'), /--rounds: expected a number, got 'many'/],
    [GBOARD.map((a) => (a === '1e-10' ? '2' : a)).concat('--noise-multiplier', '7'), /delta.*\(0, 1\)/],
    [[...GBOARD, '--noise-multiplier', '-1'], /noise/i],
  ];
  for (const [argv, message] of cases) {
    const { status, out, err } = await admin(argv);
    assert.equal(status, 2, `${argv.join(' ')}: ${out}`);
    assert.match(err, message);
  }
});
