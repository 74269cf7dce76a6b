// Runs N leaves in worker_threads, each with its own wasm instance and SpamAssassin shard.
// Each leaf holds its emails raw (EmailLeafData): a plan whose model inputs carry "features" (the
// demo's wide & deep plan) trains on their spamAssassinEmailRecord records, a text plan on the texts.
//
//   const run = simulateLeaves({server, population, token, clients: 16, nonIid: true,
//                               onEvent: (index, event) => ...});
//   const summaries = await run.done;     // one {uploaded, dropped, stopped} per leaf
//   run.stop();                           // aborts every leaf
//
// Shards: the train split cut into `clients` shards (IID, or non-IID as documented in
// datasets/spamassassin.js); each leaf also holds its share of the eval split (evalShardRecords:
// dealt round-robin in hash order, never empty), which it uses for evaluate tasks. `attacks` makes some of them poisoning leaves (see attacks.js): leaf i
// runs attacks[i] ('scale:1e6', 'claim_examples:9007199254740992', 'flip_labels') when set.
//
// Heterogeneous leaves (leaf_speeds.js): `slow: {fraction: 0.3, factor: 5}` makes 30% of the
// leaves 5× slower (after training a task for ms, a slow leaf waits 4 × ms before uploading);
// `churn: {probability: 0.1, awayFactor: 2}` makes each task, with probability 0.1, one its leaf
// leaves mid-task (trains, is away 2 × its task time, never uploads: the lease expires and the
// server hands the task out again); `seed` (default 1) picks the slow leaves and every churn
// decision, reproducibly. Each task with a delay emits an event {type: 'delayed', taskId,
// trainMs, waitMs, churned}; `speeds` on the returned run is each leaf's {factor, …}.
import { Worker } from 'node:worker_threads';

import { leafSpeeds } from './leaf_speeds.js';
import { emptyShardProblem, evalShardRecords, loadSpamAssassin, shardRecords, shardSizes } from '../datasets/spamassassin.js';

const workerUrl = new URL('./simulated_leaf_worker.js', import.meta.url);

function part(records) {
  return { texts: records.map((r) => r.text), labels: records.map((r) => r.label) };
}

/** The data of client `index` of `count`: {train, eval} texts and labels. */
export function spamAssassinClientData(records, index, count, { nonIid = false } = {}) {
  const train = records.filter((r) => r.split === 'train');
  const evalRecords = records.filter((r) => r.split === 'eval');
  return {
    train: part(shardRecords(train, index, count, { nonIid })),
    eval: part(evalShardRecords(evalRecords, index, count)),
  };
}

/**
 * Why `count` shards of the train split cannot all hold emails (a leaf on an empty shard claims
 * tasks only to drop them), or null when they can: "100000 shards of the SpamAssassin train split
 * (4841 emails): at most 4841 …".
 */
export function spamAssassinShardsProblem(records, count, { nonIid = false } = {}) {
  const train = records.filter((r) => r.split === 'train');
  const sizes = shardSizes(train, count, { nonIid });
  const empty = [];
  sizes.forEach((size, index) => { if (size === 0) empty.push(index); });
  if (empty.length === 0) return null;
  const what = `${count} shards of the SpamAssassin train split (${train.length} emails)`;
  if (count > train.length) return `${what}: at most ${train.length} shards can each hold an email`;
  const some = empty.slice(0, 5).join(', ') + (empty.length > 5 ? ', …' : '');
  return `${what}: ${empty.length} IID shard(s) would hold no emails (${some}); use fewer, or --non-iid`;
}

/**
 * @param {{server: string, population: string, token: string, clients: number, leaves?: number,
 *          nonIid?: boolean,
 *          prefetch?: number, maxTasks?: number, simd?: 'auto'|boolean, records?: object[],
 *          attacks?: Record<number, string>, shardOf?: (index: number) => number,
 *          slow?: {fraction: number, factor: number},
 *          churn?: {probability: number, awayFactor?: number}, seed?: number,
 *          onEvent?: (index: number, event: object) => void}} options
 * clients: how many shards the data is cut into; leaves: how many leaves run (default clients).
 * shardOf: which of the `clients` shards leaf i holds (default i) — e.g. extra attacking leaves
 * holding copies of honest shards. A leaf whose train shard would hold no emails fails the run
 * before any worker starts.
 * @returns {{done: Promise<object[]>, stop: () => void, speeds: object[]}}
 */
export function simulateLeaves(options) {
  const workers = [];
  // Checked here, before any worker starts (a bad option throws at once).
  const speeds = leafSpeeds({
    leaves: options.leaves ?? options.clients, slow: options.slow, churn: options.churn, seed: options.seed ?? 1,
  });
  const done = (async () => {
    const records = options.records ?? await loadSpamAssassin();
    const leaves = options.leaves ?? options.clients;
    const shards = Array.from({ length: leaves }, (_, index) => {
      const shard = options.shardOf ? options.shardOf(index) : index;
      const data = spamAssassinClientData(records, shard, options.clients, { nonIid: options.nonIid });
      if (data.train.texts.length === 0) {
        const train = records.filter((r) => r.split === 'train');
        throw new Error(`leaf ${index}: ${emptyShardProblem(train, shard, options.clients, { nonIid: options.nonIid })}`);
      }
      return data;
    });
    const results = await Promise.all(shards.map((data, index) =>
      new Promise((resolve, reject) => {
        const worker = new Worker(workerUrl, {
          workerData: {
            index,
            server: options.server,
            population: options.population,
            token: options.token,
            prefetch: options.prefetch,
            maxTasks: options.maxTasks,
            simd: options.simd,
            attack: options.attacks?.[index],
            speed: speeds[index],
            ...data,
          },
        });
        workers.push(worker);
        let settled = false;
        worker.on('message', (message) => {
          if (message.type === 'event') options.onEvent?.(index, message.event);
          if (message.type === 'done') {
            settled = true;
            resolve(message.summary);
          }
          if (message.type === 'failed') {
            settled = true;
            reject(new Error(`leaf ${index}: ${message.message}`));
          }
        });
        worker.on('error', (error) => {
          settled = true;
          reject(new Error(`leaf ${index}: ${error.message}`));
        });
        worker.on('exit', (code) => {
          if (!settled) reject(new Error(`leaf ${index}: worker exited with code ${code}`));
        });
      })));
    return results;
  })();
  done.catch(() => {}).finally(() => {
    for (const worker of workers) worker.terminate();
  });
  return {
    done,
    speeds,
    stop() {
      for (const worker of workers) worker.postMessage({ type: 'stop' });
    },
  };
}
