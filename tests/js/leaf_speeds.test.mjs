// Heterogeneous simulated leaves (js_bindings/src/node/leaf_speeds.js): which leaves are slow,
// the delay rule, churn, and that the same seed gives the same choices.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  awayMs, heterogeneousExecutor, leafSpeeds, LeafChurnedError, slowDelayMs, slowLeaves,
} from '../../js_bindings/src/node/leaf_speeds.js';
import { seededRandom } from '../../js_bindings/src/node/seeded_random.js';
import { simulateLeaves } from '../../js_bindings/src/node/simulate.js';

test('seededRandom: same seed, same sequence in [0, 1); another seed, another sequence', () => {
  const draw = (seed) => { const next = seededRandom(seed); return Array.from({ length: 50 }, next); };
  assert.deepEqual(draw(7), draw(7));
  assert.notDeepEqual(draw(7), draw(8));
  for (const x of draw(123)) assert.ok(x >= 0 && x < 1, `${x}`);
});

test('slowLeaves: round(fraction × leaves) distinct leaves, chosen by the seed', () => {
  const slow = slowLeaves(16, 0.3, 42);
  assert.equal(slow.length, 5);  // round(4.8)
  assert.equal(new Set(slow).size, 5);
  for (const i of slow) assert.ok(Number.isInteger(i) && i >= 0 && i < 16);
  assert.deepEqual(slow, [...slow].sort((a, b) => a - b));
  assert.deepEqual(slowLeaves(16, 0.3, 42), slow, 'same seed, same leaves');
  const others = [1, 2, 3, 4, 5].map((seed) => slowLeaves(16, 0.3, seed).join());
  assert.ok(others.some((s) => s !== slow.join()), 'other seeds choose other leaves');
  assert.deepEqual(slowLeaves(10, 0, 1), []);
  assert.deepEqual(slowLeaves(10, 1, 1), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.throws(() => slowLeaves(10, 1.5, 1), /slow.fraction: expected a number in \[0, 1\], got 1.5/);
});

test('delay rule: a slow leaf waits (factor − 1) × its training time; a churned task is away awayFactor × factor × it', () => {
  assert.equal(slowDelayMs(200, 5), 800);
  assert.equal(slowDelayMs(200, 1), 0);
  assert.equal(awayMs(200, 1, 2), 400);
  assert.equal(awayMs(200, 5, 2), 2000);
});

test('leafSpeeds: the slow leaves get the factor, the others 1; the same seed gives the same speeds', () => {
  const options = { leaves: 10, slow: { fraction: 0.3, factor: 5 }, churn: { probability: 0.1, awayFactor: 2 }, seed: 9 };
  const speeds = leafSpeeds(options);
  const slow = slowLeaves(10, 0.3, 9);
  assert.deepEqual(speeds.map((s, i) => (s.factor === 5 ? i : -1)).filter((i) => i >= 0), slow);
  for (const s of speeds) {
    assert.ok(s.factor === 1 || s.factor === 5);
    assert.equal(s.churnProbability, 0.1);
    assert.equal(s.awayFactor, 2);
  }
  assert.deepEqual(leafSpeeds(options), speeds);
  assert.notDeepEqual(leafSpeeds({ ...options, seed: 10 }).map((s) => s.churnSeed), speeds.map((s) => s.churnSeed));
  // Churn does not move which leaves are slow.
  assert.deepEqual(leafSpeeds({ ...options, churn: undefined }).map((s) => s.factor), speeds.map((s) => s.factor));
  assert.deepEqual(leafSpeeds({ leaves: 3 }).map((s) => s.factor), [1, 1, 1]);
  assert.throws(() => leafSpeeds({ leaves: 3, slow: { fraction: 0.5, factor: 0.5 } }), /slow.factor: expected a number >= 1, got 0.5/);
  assert.throws(() => leafSpeeds({ leaves: 3, churn: { probability: -1 } }), /churn.probability/);
  assert.throws(() => leafSpeeds({ leaves: 3, seed: 1.5 }), /seed: expected an integer/);
});

// An executor whose runTask "trains" for a fixed 100 ms of a fake clock.
function fakeExecutor(clock) {
  return {
    other: () => 'other',
    async runTask(task) {
      clock.t += 100;
      return { bytes: new Uint8Array([task.task_id]), numExamples: 1 };
    },
  };
}

async function runTasks(speed, count) {
  const clock = { t: 0 };
  const waits = [];
  const delays = [];
  const executor = heterogeneousExecutor(fakeExecutor(clock), speed, {
    now: () => clock.t,
    wait: async (ms) => { waits.push(ms); },
    onDelay: (d) => delays.push(d),
  });
  const outcomes = [];
  for (let id = 0; id < count; id++) {
    try {
      await executor.runTask({ task_id: id }, null, null, {});
      outcomes.push('uploaded');
    } catch (error) {
      assert.ok(error instanceof LeafChurnedError);
      outcomes.push('churned');
    }
  }
  return { outcomes, waits, delays, executor };
}

test('heterogeneousExecutor: a slow leaf waits (factor − 1) × the measured training time, then returns the result', async () => {
  const { outcomes, waits, delays, executor } = await runTasks({ factor: 5 }, 3);
  assert.deepEqual(outcomes, ['uploaded', 'uploaded', 'uploaded']);
  assert.deepEqual(waits, [400, 400, 400]);
  assert.deepEqual(delays[0], { taskId: 0, trainMs: 100, waitMs: 400, churned: false });
  assert.equal(executor.other(), 'other', 'other methods are the executor\'s');
});

test('heterogeneousExecutor: full speed and no churn is the executor itself', () => {
  const executor = fakeExecutor({ t: 0 });
  assert.equal(heterogeneousExecutor(executor, { factor: 1, churnProbability: 0 }), executor);
  assert.equal(heterogeneousExecutor(executor, undefined), executor);
});

test('heterogeneousExecutor: churn drops tasks at the seeded rate, away awayFactor × the task time; same seed, same tasks', async () => {
  const speed = { factor: 2, churnProbability: 0.3, awayFactor: 3, churnSeed: 77 };
  const a = await runTasks(speed, 200);
  const b = await runTasks(speed, 200);
  assert.deepEqual(a.outcomes, b.outcomes, 'same seed, same churn decisions');
  const churned = a.outcomes.filter((o) => o === 'churned').length;
  assert.ok(churned > 30 && churned < 90, `${churned} of 200 tasks churned at p = 0.3`);
  a.delays.forEach((d, i) => {
    assert.equal(d.churned, a.outcomes[i] === 'churned');
    assert.equal(d.waitMs, d.churned ? 600 : 100);  // away 3 × 2 × 100, else slow (2 − 1) × 100
  });
  const c = await runTasks({ ...speed, churnSeed: 78 }, 200);
  assert.notDeepEqual(c.outcomes, a.outcomes, 'another seed, other decisions');
});

test('heterogeneousExecutor: the wait is aborted by the stop signal', async () => {
  const executor = heterogeneousExecutor({ runTask: async () => ({ bytes: new Uint8Array(1) }) }, { factor: 1e9 },
    { now: (() => { let t = 0; return () => (t += 1); })() });
  const controller = new AbortController();
  const running = executor.runTask({ task_id: 1 }, null, null, { signal: controller.signal });
  controller.abort(new Error('stopped'));
  await assert.rejects(running, /stopped/);
});

test('simulateLeaves: its speeds come from leafSpeeds with its seed; a bad option throws before any worker starts', async () => {
  assert.throws(() => simulateLeaves({ server: 'http://127.0.0.1:1', population: 'p', token: 't', clients: 2,
    records: [], slow: { fraction: 2, factor: 5 } }), /slow\.fraction: expected a number in \[0, 1\], got 2/);
  const options = { leaves: 4, slow: { fraction: 0.5, factor: 3 }, churn: { probability: 0.2 }, seed: 5 };
  // No records: the run fails on its empty shards before a worker starts, but its speeds are set.
  const run = simulateLeaves({ server: 'http://127.0.0.1:1', population: 'p', token: 't', clients: 4, records: [], ...options });
  assert.deepEqual(run.speeds, leafSpeeds(options));
  await assert.rejects(run.done, /leaf 0/);
});
