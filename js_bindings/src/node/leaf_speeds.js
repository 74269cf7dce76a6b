// Heterogeneous simulated leaves, reproducibly (issue 30): some leaves slower than others, and
// churn — leaves that leave in the middle of a task and come back later. Real populations are
// never identical; the simulator's leaves are (same machine, same code), so the difference is
// made here, as a delay proportional to each leaf's *measured* training time, so that a slow leaf
// stays `factor`× slower whatever the machine's speed or load:
//
//   - slow: {fraction, factor}. round(fraction × leaves) leaves, chosen by the seed, are slow:
//     after training a task for ms milliseconds, a slow leaf waits (factor − 1) × ms before the
//     task ends (and its result is uploaded), so the task takes factor × ms in all. The wait is a
//     timer, not CPU: the other leaves run at full speed meanwhile.
//   - churn: {probability, awayFactor}. For each task, with that probability, the leaf leaves
//     mid-task: it trains, then is away for awayFactor × (its factor × ms), then drops the task
//     without uploading it. The server learns nothing: the task's lease expires and the server
//     hands the task out again (synchronous round) or frees its slot (buffered population). The
//     leaf then comes back and claims as before.
//   - seed: which leaves are slow and every churn decision come from a seeded generator
//     (mulberry32): the same seed, leaf count and options give the same slow leaves and, for each
//     leaf, the same sequence of churn decisions (the n-th task a leaf trains leaves or not
//     whatever the timing; which task that is depends on what the server hands out).
//
// Both delays happen inside the executor's runTask (heterogeneousExecutor), so runLeaf is
// unchanged: its stop signal aborts them, and its 'trained' event's ms is the whole task's time.

import { sleep } from '../protocol/backoff.js';
import { seededRandom } from './seeded_random.js';

function checkFraction(name, value) {
  if (!Number.isFinite(value) || value < 0 || value > 1) {
    throw new RangeError(`${name}: expected a number in [0, 1], got ${value}`);
  }
}

function checkFactor(name, value, min) {
  if (!Number.isFinite(value) || value < min) {
    throw new RangeError(`${name}: expected a number >= ${min}, got ${value}`);
  }
}

/**
 * Which of `leaves` leaves are slow: round(fraction × leaves) distinct indices, in ascending
 * order, drawn by a seeded shuffle (the same seed gives the same leaves).
 */
export function slowLeaves(leaves, fraction, seed) {
  if (!Number.isInteger(leaves) || leaves < 0) throw new RangeError(`leaves: expected an integer >= 0, got ${leaves}`);
  checkFraction('slow.fraction', fraction);
  const next = seededRandom(seed);
  const order = Array.from({ length: leaves }, (_, i) => i);
  for (let i = leaves - 1; i > 0; i--) {  // Fisher–Yates
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order.slice(0, Math.round(fraction * leaves)).sort((a, b) => a - b);
}

/** How long a leaf of speed `factor` waits after training for `trainMs`: (factor − 1) × trainMs. */
export function slowDelayMs(trainMs, factor) {
  return Math.max(0, (factor - 1) * trainMs);
}

/** How long a leaf that churns is away: awayFactor × the task's time on that leaf (factor × trainMs). */
export function awayMs(trainMs, factor, awayFactor) {
  return Math.max(0, awayFactor * factor * trainMs);
}

/**
 * Each leaf's speed and churn, from the simulator's options:
 * {leaves, slow?: {fraction, factor}, churn?: {probability, awayFactor = 1}, seed = 1} →
 * one {factor, churnProbability, awayFactor, churnSeed} per leaf (factor 1: full speed). Each
 * leaf's churnSeed is drawn from the seed, so its churn decisions are its own and reproducible.
 */
export function leafSpeeds({ leaves, slow, churn, seed = 1 }) {
  if (!Number.isInteger(seed)) throw new RangeError(`seed: expected an integer, got ${seed}`);
  const factor = slow?.factor ?? 1;
  checkFactor('slow.factor', factor, 1);
  const probability = churn?.probability ?? 0;
  checkFraction('churn.probability', probability);
  const awayFactor = churn?.awayFactor ?? 1;
  checkFactor('churn.awayFactor', awayFactor, 0);
  const slowSet = new Set(slowLeaves(leaves, slow?.fraction ?? 0, seed));
  // A second stream for churn seeds, so adding churn never changes which leaves are slow.
  const seeds = seededRandom(seed ^ 0x5bd1e995);
  return Array.from({ length: leaves }, (_, index) => ({
    factor: slowSet.has(index) ? factor : 1,
    churnProbability: probability,
    awayFactor,
    churnSeed: Math.floor(seeds() * 2 ** 32),
  }));
}

/** An error a churned task fails with: runLeaf drops the task (no upload) and goes on. */
export class LeafChurnedError extends Error {
  constructor(awayForMs) {
    super(`left mid-task (churn), back after ${Math.round(awayForMs)} ms`);
    this.name = 'LeafChurnedError';
    this.awayMs = awayForMs;
  }
}

/**
 * The executor a leaf of `speed` (one entry of leafSpeeds) runs: executor's runTask, then the
 * slow leaf's wait, or — when the task churns — the time away and a LeafChurnedError. Other
 * methods are the executor's. onDelay({taskId, trainMs, waitMs, churned}) reports each task's
 * measured training time and the delay added (for benches). `now` is the clock (tests).
 */
export function heterogeneousExecutor(executor, speed, { onDelay, now = () => performance.now(), wait = sleep } = {}) {
  const { factor = 1, churnProbability = 0, awayFactor = 1, churnSeed = 0 } = speed ?? {};
  if (factor === 1 && churnProbability === 0) return executor;
  const churns = seededRandom(churnSeed);
  return new Proxy(executor, {
    get(target, key, receiver) {
      if (key !== 'runTask') return Reflect.get(target, key, receiver);
      return async (task, model, dataset, options = {}) => {
        const churned = churnProbability > 0 && churns() < churnProbability;  // one draw per task
        const t0 = now();
        const result = await target.runTask(task, model, dataset, options);
        const trainMs = now() - t0;
        const waitMs = churned ? awayMs(trainMs, factor, awayFactor) : slowDelayMs(trainMs, factor);
        onDelay?.({ taskId: task?.task_id, trainMs, waitMs, churned });
        if (waitMs > 0) await wait(waitMs, options.signal);
        if (churned) throw new LeafChurnedError(waitMs);
        return result;
      };
    },
  });
}
