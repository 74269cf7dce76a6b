// runLeaf — the leaf loop: claim → download model → train in wasm → upload → repeat.
//
//   const controller = new AbortController();
//   await runLeaf({server: 'http://127.0.0.1:8080', population: 'spam', token, dataset,
//                  executor, prefetch: 1, signal: controller.signal,
//                  onEvent: (e) => console.log(e.type, e)});
//
// The leaf is stateless: every task carries its plan and model URL, so any leaf can take any
// task and a vanished leaf costs only its leases. Leases held at once never exceed prefetch + 1
// (the task training or uploading, plus the ones claimed ahead). Requests go through a
// ProtocolClient (protocol/protocol_client.js), so every one carries Fedleaf-Version; a 426 answer stops
// the leaf with the server's message.
//
// A leaf trains on one dataset, so it takes at most one train task per round: a RoundBook
// (round_book.js) says which rounds its claims may take.
//
// A task's model comes from a ModelSource (model_source.js): the rows of the data's distinct ids
// for a plan that downloads embedding tables by "select" (issue 11), else the full model, kept
// with its ETag.
//
// Events (onEvent): claimed {task}, downloaded {taskId, bytes, cached, select, ms}, progress {taskId, step,
// loss}, trained {taskId, numExamples, loss, ms, setupMs (model reading, when the executor says)},
// uploaded {taskId, bytes, status},
// dropped {taskId, status, reason}, idle {ms, reason}, error {error, fatal}, finished {}.
//
// Network failures (fetch's errors, and a request past its ProtocolClient deadline: "no answer
// from <origin> within N s") are retried with backoff: a claim's as idle {reason: 'network: …'},
// a download's, select's or upload's as a non-fatal error event before each retry. Their
// messages carry fetch's cause ("network: fetch failed (connect ECONNREFUSED 127.0.0.1:1)").

import { backoffDelayMs, sleep } from '../protocol/backoff.js';
import { networkErrorMessage } from '../protocol/network_error.js';
import { ProtocolClient } from '../protocol/protocol_client.js';
import { ProtocolError } from '../protocol/protocol_error.js';
import { isTransient, withRetry } from '../protocol/with_retry.js';
import { LeafStoppedError } from './leaf_stopped_error.js';
import { ModelSource } from './model_source.js';
import { RoundBook } from './round_book.js';

class Slots {
  constructor(count) {
    this.free = count;
    this.waiting = [];
  }
  async acquire(signal) {
    while (this.free === 0) {
      await new Promise((resolve, reject) => {
        this.waiting.push(resolve);
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    this.free -= 1;
  }
  release() {
    this.free += 1;
    const next = this.waiting.shift();
    if (next) next();
  }
}

/**
 * @param {object} options
 * @param {string|URL} options.server  base URL of the task repository
 * @param {string} options.population
 * @param {string} options.token       client token of the population
 * @param {object} options.dataset     what options.executor.runTask takes
 * @param {object} options.executor    {runTask(task, modelBytes, dataset, {signal, onProgress}),
 *                                      distinctIds?(dataset, task)} (createExecutor() has both)
 * @param {number} [options.prefetch=1]  tasks claimed and downloaded ahead of the one training
 * @param {number} [options.waitS=20]  long poll: seconds the server may hold a claim until a task
 *   appears (it caps the wait; an older server ignores it and answers at once); 0: poll with the
 *   server's retry hints
 * @param {AbortSignal} [options.signal]
 * @param {(event: object) => void} [options.onEvent]
 * @param {number} [options.maxTasks]  stop after this many tasks, counting those whose training
 *   failed and those dropped (default: until finished)
 * @param {typeof fetch} [options.fetch]  what the leaf's ProtocolClient fetches with
 * @param {ProtocolClient} [options.client]  the client to talk through (default: one for
 *   options.server, options.fetch and the three deadlines below)
 * @param {number} [options.timeoutMs=90000]  deadline for an answer's headers (all but claims)
 * @param {number} [options.claimMarginMs=15000]  a claim's deadline is waitS plus this
 * @param {number} [options.stallTimeoutMs=30000]  longest wait for the next chunk of a body
 * @param {{baseMs?: number, maxMs?: number}} [options.backoff]
 * @returns {Promise<{uploaded: number, dropped: number, stopped: 'finished'|'aborted'|'maxTasks'}>}
 */
export async function runLeaf(options) {
  const {
    server, population, token, dataset, executor, signal, maxTasks,
  } = options;
  const prefetch = options.prefetch ?? 1;
  if (!Number.isInteger(prefetch) || prefetch < 0) {
    throw new TypeError(`prefetch must be a non-negative integer, got ${prefetch}`);
  }
  const waitS = options.waitS ?? 20;
  if (!Number.isFinite(waitS) || waitS < 0) {
    throw new TypeError(`waitS must be a number of seconds >= 0, got ${waitS}`);
  }
  if (!executor || typeof executor.runTask !== 'function') {
    throw new TypeError('options.executor must have runTask(task, modelBytes, dataset, options)');
  }
  const client = options.client ?? new ProtocolClient({
    server, fetch: options.fetch, timeoutMs: options.timeoutMs, claimMarginMs: options.claimMarginMs,
    stallTimeoutMs: options.stallTimeoutMs,
  });
  const emit = (event) => {
    try {
      options.onEvent?.(event);
    } catch {
      // A failing observer must not stop training.
    }
  };
  const slots = new Slots(prefetch + 1);
  let claimAttempt = 0;
  const book = new RoundBook();
  let finished = false;
  let fatal;

  function stop(error) {
    if (!fatal) fatal = error;
    emit({ type: 'error', error, fatal: true });
  }

  // What a failed request is, for messages: 'HTTP 503: busy' or 'network: fetch failed (cause)'.
  const failure = (error) => (error instanceof ProtocolError ? `HTTP ${error.status}: ${error.message}`
    : `network: ${networkErrorMessage(error)}`);

  // A download, select or upload, retried while it fails transiently (retryIf: while that says
  // so), each retry a non-fatal error event. What it rejects with is the call's last error.
  function retry(what, call, retryIf = isTransient) {
    return withRetry(call, {
      signal, backoff: options.backoff, retryIf,
      onRetry: (error, ms) => emit({ type: 'error', fatal: false,
        error: new Error(`${what}: ${failure(error)}; retrying in ${Math.round(ms)} ms`, { cause: error }) }),
    });
  }

  const models = new ModelSource({ client, population, token, executor, dataset, signal, retry, emit });

  // Claims one task and downloads its model. Resolves to {task, model} | {idle: ms} | {finished}.
  async function prepare() {
    await slots.acquire(signal);
    let holding = true;
    try {
      let claim;
      try {
        claim = await client.claim(population, { minRound: book.minRound(), waitS, token, signal });
      } catch (error) {
        if (signal?.aborted) throw error;
        if (!(error instanceof ProtocolError)) {
          return { idle: backoffDelayMs(claimAttempt++, options.backoff), reason: failure(error) };
        }
        if (error.status === 410) return { finished: true };
        if (error.retryable) {
          const ms = Math.max(error.retryAfterMs ?? 0, backoffDelayMs(claimAttempt++, options.backoff));
          return { idle: ms, reason: `HTTP ${error.status}: ${error.message}` };
        }
        throw LeafStoppedError.after('claim', error);
      }
      if (claim.kind === 'task') {
        claimAttempt = 0;
        const { task } = claim;
        book.hold(task);
        emit({ type: 'claimed', task });
        const model = await models.fetch(task);
        holding = false;
        return { task, model };
      }
      if (claim.finished) return { finished: true };
      claimAttempt = 0;
      return { idle: claim.retryAfterMs ?? backoffDelayMs(0, options.backoff), reason: 'no task available' };
    } finally {
      if (holding) slots.release();
    }
  }

  // Uploads until a final answer or the lease expiry. Never throws except on abort/426.
  async function upload(task, bytes) {
    const expiresAt = Number(task.lease_expires_at) * 1000;
    let answer;
    try {
      answer = await retry(`upload of task ${task.task_id}`, () => client.upload(task, bytes, { signal }),
        (error) => isTransient(error) && Date.now() < expiresAt);
    } catch (error) {
      if (signal?.aborted) throw error;
      if (!(error instanceof ProtocolError)) {
        emit({ type: 'dropped', taskId: task.task_id, status: 0, reason: `lease expired during retries: ${failure(error)}` });
        return false;
      }
      if (error.status === 426) throw LeafStoppedError.after('upload', error);
      emit({ type: 'dropped', taskId: task.task_id, status: error.status, reason: error.message });
      return false;
    }
    emit({ type: 'uploaded', taskId: task.task_id, bytes: bytes.length, status: answer.status });
    return true;
  }

  let uploaded = 0;
  let dropped = 0;
  let started = 0;
  const inFlight = new Set();
  const queue = [];
  const guarded = () => {
    const p = prepare();
    p.catch(() => {});  // observed when taken from the queue
    return p;
  };
  const fill = () => {
    while (queue.length < prefetch && (maxTasks === undefined || started + queue.length < maxTasks)) {
      queue.push(guarded());
    }
  };

  let stopped = 'finished';
  try {
    let current = guarded();
    while (!fatal) {
      const job = await current;
      if (job.finished) {
        finished = true;
        break;
      }
      if (job.idle !== undefined) {
        emit({ type: 'idle', ms: job.idle, reason: job.reason });
        await sleep(job.idle, signal);
        current = queue.shift() ?? guarded();
        continue;
      }
      started += 1;
      fill();
      const { task, model } = job;
      const t0 = performance.now();
      let result;
      try {
        result = await executor.runTask(task, model, dataset, {
          signal,
          onProgress: (step, loss) => emit({ type: 'progress', taskId: task.task_id, step, loss }),
        });
      } catch (error) {
        if (signal?.aborted) throw error;
        slots.release();
        book.release(task, false);
        dropped += 1;
        emit({ type: 'error', error, fatal: false });
        emit({ type: 'dropped', taskId: task.task_id, status: 0, reason: `training failed: ${error.message}` });
        if (maxTasks !== undefined && started >= maxTasks) {  // a failed task counts: it was claimed
          stopped = 'maxTasks';
          break;
        }
        current = queue.shift() ?? guarded();
        continue;
      }
      emit({ type: 'trained', taskId: task.task_id, numExamples: result.numExamples, loss: result.loss,
        ms: performance.now() - t0, setupMs: result.setupMs });
      const pending = upload(task, result.bytes)
        .then((ok) => {
          book.release(task, ok);
          return ok ? uploaded++ : dropped++;
        })
        .catch((error) => {
          if (!signal?.aborted) stop(error);
        })
        .finally(() => {
          slots.release();
          inFlight.delete(pending);
        });
      inFlight.add(pending);
      if (maxTasks !== undefined && started >= maxTasks) {
        stopped = 'maxTasks';
        break;
      }
      current = queue.shift() ?? guarded();
    }
    await Promise.all(inFlight);
  } catch (error) {
    if (signal?.aborted) {
      stopped = 'aborted';
    } else {
      stop(error);
    }
  }
  await Promise.allSettled([...inFlight]);
  if (fatal) throw fatal;
  if (finished) emit({ type: 'finished' });
  return { uploaded, dropped, stopped };
}
