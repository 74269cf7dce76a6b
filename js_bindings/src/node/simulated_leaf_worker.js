// One simulated leaf in a worker_threads Worker: its own wasm instance, its own data shard.
// workerData: {index, server, population, token, prefetch, maxTasks, simd,
//              train: {texts, labels}, eval?: {texts, labels}, attack?: 'scale:1e6' | …,
//              speed?: {factor, churnProbability, awayFactor, churnSeed} }
// (texts: raw emails; a records plan trains on their spamAssassinEmailRecord, see
// datasets/email_leaf_data.js. attack: this leaf poisons its train updates, see attacks.js;
// speed: this leaf is slower or churns, see leaf_speeds.js — each task with a delay posts an
// event {type: 'delayed', taskId, trainMs, waitMs, churned})
// Posts {type: 'event', index, event} for every leaf event (errors as messages), then
// {type: 'done', index, summary} or {type: 'failed', index, message}. A 'stop' message aborts.
import { parentPort, workerData } from 'node:worker_threads';

import { createExecutor } from '../index.js';
import { EmailLeafData } from '../datasets/email_leaf_data.js';
import { runLeaf } from '../leaf/run_leaf.js';
import { attackedLabels, attackingExecutor, parseAttack } from './attacks.js';
import { heterogeneousExecutor } from './leaf_speeds.js';

const { index } = workerData;
const controller = new AbortController();
parentPort.on('message', (message) => {
  if (message?.type === 'stop') controller.abort(new Error('stopped'));
});

// Events as structured-cloneable objects, stamped with the wall clock (ms) of when they happened.
function plain(event) {
  const at = Date.now();
  if (event.type === 'error') {
    return { type: 'error', fatal: event.fatal, message: event.error?.message ?? String(event.error), at };
  }
  if (event.type === 'claimed') {
    const { task_id: taskId, round, kind } = event.task;
    return { type: 'claimed', taskId, round, kind, at };
  }
  return { ...event, at };
}

let data;
try {
  const attack = workerData.attack ? parseAttack(workerData.attack) : null;
  const honest = await createExecutor({ simd: workerData.simd ?? 'auto' });
  // The delays wrap the attack: a slow leaf's measured training time is its whole runTask.
  const executor = heterogeneousExecutor(attackingExecutor(honest, attack), workerData.speed, {
    onDelay: (delay) => parentPort.postMessage({ type: 'event', index, event: { type: 'delayed', ...delay, at: Date.now() } }),
  });
  const train = { texts: workerData.train.texts, labels: attackedLabels(workerData.train.labels, attack) };
  data = new EmailLeafData(honest, { train, eval: workerData.eval });
  const summary = await runLeaf({
    server: workerData.server,
    population: workerData.population,
    token: workerData.token,
    prefetch: workerData.prefetch ?? 1,
    maxTasks: workerData.maxTasks,
    executor,
    dataset: data,
    signal: controller.signal,
    onEvent: (event) => parentPort.postMessage({ type: 'event', index, event: plain(event) }),
  });
  parentPort.postMessage({ type: 'done', index, summary });
} catch (error) {
  parentPort.postMessage({ type: 'failed', index, message: error?.message ?? String(error) });
} finally {
  data?.delete();
}
