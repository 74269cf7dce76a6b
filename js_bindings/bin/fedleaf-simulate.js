#!/usr/bin/env node
// fedleaf-simulate — N Node.js leaves on SpamAssassin shards, each in its own worker thread.
//
//   node js_bindings/bin/fedleaf-simulate.js --server http://127.0.0.1:8080 --population spam \
//        --token CLIENT_TOKEN --clients 16 [--non-iid] [--prefetch 1] [--max-tasks N]
//
// Prints a progress line (leaves training / uploading / idle, uploads, bytes) until every leaf
// stops: the population finished, --max-tasks reached, or Ctrl-C.
import { parseArgs } from 'node:util';

import { simulateLeaves } from '../src/node/simulate.js';
import { LeafProgress } from '../src/node/leaf_progress.js';

const usage = 'usage: fedleaf-simulate.js --server URL --population P --token T --clients N ' +
  '[--non-iid] [--prefetch K] [--max-tasks N] [--baseline]';

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      server: { type: 'string' },
      population: { type: 'string' },
      token: { type: 'string' },
      clients: { type: 'string', default: '16' },
      'non-iid': { type: 'boolean', default: false },
      prefetch: { type: 'string', default: '1' },
      'max-tasks': { type: 'string' },
      baseline: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (error) {
  console.error(`${error.message}\n${usage}`);
  process.exit(2);
}
if (args.help) {
  console.log(usage);
  process.exit(0);
}
for (const required of ['server', 'population', 'token']) {
  if (!args[required]) {
    console.error(`missing --${required}\n${usage}`);
    process.exit(2);
  }
}
const clients = Number(args.clients);
const prefetch = Number(args.prefetch);
if (!Number.isInteger(clients) || clients < 1 || !Number.isInteger(prefetch) || prefetch < 0) {
  console.error(`--clients must be >= 1 and --prefetch >= 0\n${usage}`);
  process.exit(2);
}

const progress = new LeafProgress(clients, process.stdout);
const run = simulateLeaves({
  server: args.server,
  population: args.population,
  token: args.token,
  clients,
  nonIid: args['non-iid'],
  prefetch,
  maxTasks: args['max-tasks'] === undefined ? undefined : Number(args['max-tasks']),
  simd: args.baseline ? false : 'auto',
  onEvent: (index, event) => progress.update(index, event),
});
process.on('SIGINT', () => {
  progress.note('stopping leaves (Ctrl-C)');
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
} catch (error) {
  clearInterval(timer);
  progress.render(true);
  console.error(`fedleaf-simulate: ${error.message}`);
  process.exit(1);
}
