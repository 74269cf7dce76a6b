#!/usr/bin/env node
// fedleaf-simulate — N Node.js leaves on SpamAssassin shards, each in its own worker thread.
//
//   node js_bindings/bin/fedleaf-simulate.js --server http://127.0.0.1:8080 --population spam \
//        --token CLIENT_TOKEN --clients 16 [--non-iid] [--prefetch 1] [--max-tasks N]
//
// Prints a progress line (leaves training / uploading / idle, uploads, bytes) until every leaf
// stops: the population finished, --max-tasks reached, or Ctrl-C.
import { simulateLeaves } from '../src/node/simulate.js';
import { LeafProgress } from '../src/node/leaf_progress.js';
import { parseLeafCommandLine } from '../src/node/leaf_cli.js';

const usage = 'usage: fedleaf-simulate.js --server URL --population P --token T --clients N ' +
  '[--non-iid] [--prefetch K] [--max-tasks N] [--baseline]';

const { args, fail, prefetch, maxTasks, simd } = parseLeafCommandLine('fedleaf-simulate', usage, {
  clients: { type: 'string', default: '16' },
});
const clients = Number(args.clients);
if (!Number.isInteger(clients) || clients < 1) fail('--clients must be an integer >= 1');

const progress = new LeafProgress(clients, process.stdout);
const run = simulateLeaves({
  server: args.server,
  population: args.population,
  token: args.token,
  clients,
  nonIid: args['non-iid'],
  prefetch,
  maxTasks,
  simd,
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
