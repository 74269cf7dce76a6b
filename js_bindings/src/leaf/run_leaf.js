// runLeaf — the leaf loop: claim → download model → train in wasm → upload → repeat.
//
//   const controller = new AbortController();
//   await runLeaf({server: 'http://127.0.0.1:8080', population: 'spam', token, dataset,
//                  executor, prefetch: 1, signal: controller.signal,
//                  onEvent: (e) => console.log(e.type, e)});
//
// The leaf is stateless: every task carries its plan and model URL, so any leaf can take any
// task and a vanished leaf costs only its leases. Requests go through a ProtocolClient
// (protocol/protocol_client.js), so every one carries Fedleaf-Version; a 426 answer stops the
// leaf with the server's message.
//
// Its parts, in the order a task meets them:
//   - PrefetchQueue (prefetch_queue.js): jobs prepared ahead while a task trains; leases held at
//     once never exceed prefetch + 1 (the task training or uploading, plus those claimed ahead);
//   - TaskClaims (task_claims.js): a claim and what its answer means (task, idle, finished, stop);
//     its min_round comes from a RoundBook (round_book.js): a leaf trains on one dataset, so it
//     takes at most one train task per round; claims go out one at a time, each past the round
//     the claim before brought, so prefetched tasks are of distinct rounds;
//   - executor.loadPlan: the task's plan parsed once (a PlanHandle) for everything below, deleted
//     when the task's training ends (or its job is dropped unused);
//   - ModelSource (model_source.js): the task's model — the rows of the data's distinct ids for a
//     plan that downloads embedding tables by "select" (issue 11), else the full model, kept with
//     its ETag;
//   - executor.runTask trains it (a failure drops the task);
//   - uploadResult (upload_result.js): the result sent while the next task trains.
// Downloads, selects and uploads retry through one withRetry (protocol/with_retry.js).
//
// Buffered populations ("mode": "buffered", FedBuff) run unchanged: a task's round is the model
// version it trains on, and the server publishes a version every buffer_size reports. With
// prefetch, the claim made while a task of version v trains asks for v + 1 and is answered (long
// poll) once that version is out; its model (model:select by v + 1) is downloaded while v trains.
// A prefetched task whose version was superseded meanwhile is trained and uploaded all the same:
// the staleness is the server's record, and its answer (201, 409 past max_staleness, 410 once the
// version or training is over) decides, as for any upload.
//
// A private population (issue 39) admits enrolled devices only: the first claim answered 401
// device_required enrolls this leaf (POST .../devices) and keeps the credential in
// options.deviceStore (default: in memory, for this run) under its server and population; a
// later run with the same store claims as the same device. A device past max_participations is
// stopped (403, LeafStoppedError naming the rule); one inside min_separation (429) claims again
// asking for the round it may take (its min_round).
//
// Events (onEvent): claimed {task}, enrolled {deviceId}, downloaded {taskId, bytes, cached, select, ms}, progress
// {taskId, step, loss}, trained {taskId, numExamples, loss, ms, setupMs (model reading, when the
// executor says)}, uploaded {taskId, bytes, status}, dropped {taskId, status, reason}, idle {ms,
// reason}, error {error, fatal}, finished {}.
//
// Network failures (fetch's errors, and a request past its ProtocolClient deadline: "no answer
// from <origin> within N s") are retried with backoff: a claim's as idle {reason: 'network: …'},
// a download's, select's or upload's as a non-fatal error event before each retry. Their
// messages carry fetch's cause ("network: fetch failed (connect ECONNREFUSED 127.0.0.1:1)").

import { sleep } from '../protocol/backoff.js';
import { ProtocolClient } from '../protocol/protocol_client.js';
import { failureMessage } from '../protocol/protocol_error.js';
import { withRetry } from '../protocol/with_retry.js';
import { deviceKey, memoryDeviceStore } from './device_store.js';
import { ModelSource } from './model_source.js';
import { PrefetchQueue } from './prefetch_queue.js';
import { RoundBook } from './round_book.js';
import { TaskClaims } from './task_claims.js';
import { uploadResult } from './upload_result.js';

const isTrain = (task) => (task.kind ?? 'train') === 'train';

// The task's plan parsed once, when the executor can (createExecutor's loadPlan), else undefined.
// A plan the core refuses (a newer format, a rule broken) throws, naming the JSON path: runLeaf
// stops with it, since every task of the population carries that plan.
function loadTaskPlan(executor, task) {
  if (typeof executor.loadPlan !== 'function' || !task.plan) return undefined;
  return executor.loadPlan(task.plan, { inference: !isTrain(task) });
}

const deletePlan = (job) => job?.plan?.delete?.();

// The options runLeaf checks before it starts: prefetch and waitS with their defaults.
function checkedOptions({ prefetch = 1, waitS = 20, executor }) {
  if (!Number.isInteger(prefetch) || prefetch < 0) {
    throw new TypeError(`prefetch must be a non-negative integer, got ${prefetch}`);
  }
  if (!Number.isFinite(waitS) || waitS < 0) {
    throw new TypeError(`waitS must be a number of seconds >= 0, got ${waitS}`);
  }
  if (!executor || typeof executor.runTask !== 'function') {
    throw new TypeError('options.executor must have runTask(task, modelBytes, dataset, options)');
  }
  return { prefetch, waitS };
}

/**
 * @param {object} options
 * @param {string|URL} options.server  base URL of the task repository
 * @param {string} options.population
 * @param {string} options.token       client token of the population
 * @param {object} options.dataset     what options.executor.runTask takes: a LeafData (leaf_data.js;
 *                                      TextLeafData, RecordLeafData, EmailLeafData build one) or
 *                                      a Dataset
 * @param {object} options.executor    {runTask(task, modelBytes, dataset, {signal, onProgress, plan}),
 *                                      loadPlan?(plan, {inference}), selectRequest?(dataset, task,
 *                                      plan)} (createExecutor() has all three)
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
 * @param {{load: Function, save: Function}} [options.deviceStore]  where a private population's
 *   device credential is kept (device_store.js; default memoryDeviceStore(): this run only)
 * @returns {Promise<{uploaded: number, dropped: number, stopped: 'finished'|'aborted'|'maxTasks'}>}
 */
export async function runLeaf(options) {
  const { population, token, dataset, executor, signal, maxTasks, backoff } = options;
  const { prefetch, waitS } = checkedOptions(options);
  const client = options.client ?? new ProtocolClient({
    server: options.server, fetch: options.fetch, timeoutMs: options.timeoutMs,
    claimMarginMs: options.claimMarginMs, stallTimeoutMs: options.stallTimeoutMs,
  });
  const emit = (event) => {
    try {
      options.onEvent?.(event);
    } catch {
      // A failing observer must not stop training.
    }
  };
  // A download, select or upload, retried while it fails transiently (or while retryIf says so),
  // each retry a non-fatal error event; it rejects with the call's last error.
  const retry = (what, call, retryIf) => withRetry(call, {
    signal, backoff, retryIf,
    onRetry: (error, ms) => emit({ type: 'error', fatal: false,
      error: new Error(`${what}: ${failureMessage(error)}; retrying in ${Math.round(ms)} ms`, { cause: error }) }),
  });

  const book = new RoundBook();
  const devices = { store: options.deviceStore ?? memoryDeviceStore(), key: deviceKey(client.server, population) };
  const claims = new TaskClaims({ client, population, token, waitS, signal, backoff, book, emit, devices });
  const models = new ModelSource({ client, population, token, executor, dataset, signal, retry, emit });
  const queue = new PrefetchQueue({
    prefetch, maxTasks, signal,
    prepare: async () => {
      const job = await claims.next();
      if (!job.task) return job;
      const plan = loadTaskPlan(executor, job.task);
      try {
        return { task: job.task, plan, model: await models.fetch(job.task, plan === undefined ? job.task.plan : plan) };
      } catch (error) {
        plan?.delete();
        throw error;
      }
    },
  });

  let uploaded = 0;
  let dropped = 0;
  let started = 0;
  let finished = false;
  let stopped = 'finished';
  let fatal;
  const stop = (error) => {
    fatal ??= error;
    emit({ type: 'error', error, fatal: true });
  };
  const uploads = new Set();
  let current;  // the job awaited next
  try {
    current = queue.next();
    while (!fatal) {
      const job = await current;
      current = undefined;
      if (job.finished) {
        finished = true;
        break;
      }
      if (job.idle !== undefined) {
        emit({ type: 'idle', ms: job.idle, reason: job.reason });
        await sleep(job.idle, signal);
        current = queue.next();
        continue;
      }
      started += 1;
      queue.fill(started);
      const { task, model } = job;
      const t0 = performance.now();
      let result;
      let failed = false;
      try {
        result = await executor.runTask(task, model, dataset, {
          signal,
          onProgress: (step, loss) => emit({ type: 'progress', taskId: task.task_id, step, loss }),
          ...(job.plan ? { plan: job.plan } : {}),
        });
      } catch (error) {
        if (signal?.aborted) throw error;
        failed = true;
        queue.done();
        book.release(task, false);
        dropped += 1;
        emit({ type: 'error', error, fatal: false });
        emit({ type: 'dropped', taskId: task.task_id, status: 0, reason: `training failed: ${error.message}` });
      } finally {
        deletePlan(job);  // the task's training is over: its plan handle with it
      }
      if (!failed) {
        emit({ type: 'trained', taskId: task.task_id, numExamples: result.numExamples, loss: result.loss,
          ms: performance.now() - t0, setupMs: result.setupMs });
        // The upload runs while the next task trains; its slot is given back when it ends.
        const pending = uploadResult(task, result.bytes, { client, signal, retry, emit })
          .then((accepted) => {
            book.release(task, accepted);
            return accepted ? uploaded++ : dropped++;
          })
          .catch((error) => {
            if (!signal?.aborted) stop(error);
          })
          .finally(() => {
            queue.done();
            uploads.delete(pending);
          });
        uploads.add(pending);
      }
      if (maxTasks !== undefined && started >= maxTasks) {  // a failed task counts: it was claimed
        stopped = 'maxTasks';
        break;
      }
      current = queue.next();
    }
    await Promise.all(uploads);
  } catch (error) {
    if (signal?.aborted) {
      stopped = 'aborted';
    } else {
      stop(error);
    }
  }
  // Plans of jobs prepared but never trained (the leaf stopped first).
  current?.then(deletePlan, () => {});
  queue.discard(deletePlan);
  await Promise.allSettled([...uploads]);
  if (fatal) throw fatal;
  if (finished) emit({ type: 'finished' });
  return { uploaded, dropped, stopped };
}
