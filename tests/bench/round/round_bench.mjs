// scripts/bench.sh round — where round time goes: the demo's federated job (16 Node leaves in
// worker threads, non-IID SpamAssassin shards, scripts/demo/spam_plan.json) run twice against a
// fresh fedleaf-server, with prefetch 0 and prefetch 1. Per round: wall time (server: opened →
// closed) against the slowest leaf's pure training time (executor.runTask) in that round;
// orchestration overhead = wall − slowest training. Round 1 is reported but left out of the
// medians: it includes every leaf's one-off start (wasm instantiation, featurizing its shard).
//
//   node tests/bench/round/round_bench.mjs [--clients 16] [--rounds 8] [--out build/bench/round.json]
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { loadSpamAssassin } from '../../../js_bindings/src/datasets/spamassassin.js';
import { simulateLeaves } from '../../../js_bindings/src/node/simulate.js';
import { startServer, call, ADMIN_TOKEN } from '../../server/server_harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '8' },
    out: { type: 'string', default: path.join(root, 'build/bench/round.json') },
  },
});
const clients = Number(args.clients);
const rounds = Number(args.rounds);
const plan = JSON.parse(readFileSync(path.join(root, 'scripts/demo/spam_plan.json'), 'utf8'));
const records = await loadSpamAssassin();

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2 : NaN;
};

async function runJob(prefetch) {
  const server = await startServer();
  try {
    const created = (await call(`${server.url}/v1/populations`, {
      method: 'POST', token: ADMIN_TOKEN, headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ plan, seed: 1, rounds, clients_per_round: clients, lease_s: 120 }),
    })).json;
    const roundOfTask = new Map();
    const slowest = new Map();  // round → max training ms
    const run = simulateLeaves({
      server: server.url, population: created.id, token: created.client_token, clients,
      nonIid: true, prefetch, records,
      onEvent: (index, event) => {
        if (event.type === 'claimed') roundOfTask.set(event.taskId, event.round);
        if (event.type === 'trained') {
          const round = roundOfTask.get(event.taskId);
          slowest.set(round, Math.max(slowest.get(round) ?? 0, event.ms));
        }
      },
    });
    await run.done;
    const status = (await call(`${server.url}/v1/populations/${created.id}`)).json;
    return status.history.filter((h) => h.round < rounds).map((h) => {
      const wall = (h.closed_at - h.started_at) * 1000;
      const training = slowest.get(h.round) ?? NaN;
      return { prefetch, round: h.round + 1, wall_ms: wall, slowest_training_ms: training,
        overhead_ms: wall - training, overhead_share: (wall - training) / wall };
    });
  } finally {
    await server.stop();
  }
}

const results = [];
for (const prefetch of [0, 1]) {
  process.stderr.write(`round bench: ${clients} leaves × ${rounds} rounds, prefetch ${prefetch}…\n`);
  results.push(...await runJob(prefetch));
}

const line = (cells, widths) => cells.map((c, i) => String(c).padStart(widths[i])).join('  ');
const widths = [8, 5, 9, 16, 12, 9];
console.log(line(['prefetch', 'round', 'wall ms', 'slowest train ms', 'overhead ms', 'overhead'], widths));
for (const r of results) {
  console.log(line([r.prefetch, r.round, r.wall_ms.toFixed(0), r.slowest_training_ms.toFixed(0),
    r.overhead_ms.toFixed(0), `${(100 * r.overhead_share).toFixed(1)}%`], widths));
}
const summary = {};
for (const prefetch of [0, 1]) {
  const steady = results.filter((r) => r.prefetch === prefetch && r.round > 1);
  summary[prefetch] = {
    wall_ms: median(steady.map((r) => r.wall_ms)),
    slowest_training_ms: median(steady.map((r) => r.slowest_training_ms)),
    overhead_share: median(steady.map((r) => r.overhead_share)),
  };
  console.log(`prefetch ${prefetch}: median of rounds 2..${rounds}: wall ${summary[prefetch].wall_ms.toFixed(0)} ms, ` +
    `slowest training ${summary[prefetch].slowest_training_ms.toFixed(0)} ms, ` +
    `overhead ${(100 * summary[prefetch].overhead_share).toFixed(1)}% of round time (target < 15% with prefetch on)`);
}
const ratios = {
  'prefetch1.training_share': 1 - summary[1].overhead_share,
  'prefetch0.training_share': 1 - summary[0].overhead_share,
  'prefetch1_vs_prefetch0.wall': summary[0].wall_ms / summary[1].wall_ms,
};
mkdirSync(path.dirname(args.out), { recursive: true });
writeFileSync(args.out, JSON.stringify({ clients, rounds, summary, results, ratios }, null, 2));
console.log(`wrote ${path.relative(root, args.out)}`);
