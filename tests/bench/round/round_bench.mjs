// scripts/bench.sh round — where round time goes: the demo's federated job (16 Node leaves in
// worker threads, non-IID SpamAssassin shards, scripts/demo/spam_plan.json) against a fresh
// fedleaf-server, in three configurations: `default` (what the demo runs: prefetch 1, the plan's
// select download), `prefetch0` (prefetch 0) and `full_download` (prefetch 1, "download": "full"
// for every tensor). Per round: wall time (server: opened → closed) against the slowest leaf's
// training time (executor.runTask) in that round; orchestration overhead = wall − slowest
// training; and the slowest leaf's phases: claim wait (round opened → its task claimed),
// download, decode (reading the model into the training session), train (the rest of runTask),
// upload (PUT → answer; the server folds the update before answering). The server's own phases
// (fold, close, publish) are not measured: the server opens the next round inside the last upload's
// request, before answering it, so no client-side span isolates them, and neither the status JSON
// nor /metrics times them. Round 1 is reported but left out of the medians: it includes every
// leaf's one-off start (wasm instantiation, featurizing its shard).
//
//   node tests/bench/round/round_bench.mjs [--clients 16] [--rounds 8] [--out build/bench/round.json]
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { loadSpamAssassin } from '../../../js_bindings/src/datasets/spamassassin.js';
import { simulateLeaves } from '../../../js_bindings/src/node/simulate.js';
import { startServer, adminClient } from '../../server/server_harness.mjs';
import { formatBytes } from '../../../js_bindings/src/format_bytes.js';

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

function planWithDownload(download) {
  const updates = Object.fromEntries(Object.entries(plan.updates).map(([name, u]) => [name, { ...u, download }]));
  return { ...plan, updates };
}

async function runJob(config, prefetch, jobPlan) {
  const server = await startServer();
  try {
    const client = adminClient(server.url);
    const created = await client.createPopulation({ plan: jobPlan, seed: 1, rounds, clients_per_round: clients, lease_s: 120 });
    const tasks = new Map();  // task id → {round, claimedAt, download_ms, downloaded_bytes, ...}
    const run = simulateLeaves({
      server: server.url, population: created.id, token: created.client_token, clients,
      nonIid: true, prefetch, records,
      onEvent: (index, event) => {
        if (event.type === 'claimed') tasks.set(event.taskId, { round: event.round, claimedAt: event.at });
        const task = tasks.get(event.taskId);
        if (!task) return;
        if (event.type === 'downloaded') Object.assign(task, { download_ms: event.ms, downloaded_bytes: event.bytes });
        if (event.type === 'trained') Object.assign(task, { training_ms: event.ms, decode_ms: event.setupMs ?? 0, trainedAt: event.at });
        if (event.type === 'uploaded') task.uploadedAt = event.at;
      },
    });
    await run.done;
    const status = await client.status(created.id);
    return status.history.filter((h) => h.round < rounds).map((h) => {
      const wall = (h.closed_at - h.started_at) * 1000;
      const inRound = [...tasks.values()].filter((t) => t.round === h.round && t.training_ms !== undefined);
      const slowest = inRound.reduce((a, b) => (b.training_ms > (a?.training_ms ?? -1) ? b : a), undefined);
      const training = slowest?.training_ms ?? NaN;
      return {
        config, prefetch, round: h.round + 1, wall_ms: wall, slowest_training_ms: training,
        overhead_ms: wall - training, overhead_share: (wall - training) / wall,
        downloaded_bytes: inRound.reduce((n, t) => n + (t.downloaded_bytes ?? 0), 0),
        slowest_leaf: slowest && {
          claim_wait_ms: slowest.claimedAt - h.started_at * 1000,
          download_ms: slowest.download_ms,
          decode_ms: slowest.decode_ms,
          train_ms: slowest.training_ms - slowest.decode_ms,
          upload_ms: slowest.uploadedAt - slowest.trainedAt,
        },
      };
    });
  } finally {
    await server.stop();
  }
}

const configs = [
  { config: 'default', prefetch: 1, plan },
  { config: 'prefetch0', prefetch: 0, plan },
  { config: 'full_download', prefetch: 1, plan: planWithDownload('full') },
];
const results = [];
for (const { config, prefetch, plan: jobPlan } of configs) {
  process.stderr.write(`round bench: ${clients} leaves × ${rounds} rounds, ${config}…\n`);
  results.push(...await runJob(config, prefetch, jobPlan));
}

const line = (cells, widths) => cells.map((c, i) => String(c).padStart(widths[i])).join('  ');
const fixed = (x) => (Number.isFinite(x) ? x.toFixed(0) : '-');
const widths = [13, 5, 8, 12, 9, 10, 9, 8, 8, 8, 8];
console.log(line(['config', 'round', 'wall ms', 'slowest ms', 'overhead', 'downloaded', 'claim', 'download',
  'decode', 'train', 'upload'], widths));
for (const r of results) {
  const p = r.slowest_leaf ?? {};
  console.log(line([r.config, r.round, fixed(r.wall_ms), fixed(r.slowest_training_ms),
    `${(100 * r.overhead_share).toFixed(1)}%`, formatBytes(r.downloaded_bytes), fixed(p.claim_wait_ms),
    fixed(p.download_ms), fixed(p.decode_ms), fixed(p.train_ms), fixed(p.upload_ms)], widths));
}
const summary = {};
for (const { config } of configs) {
  const steady = results.filter((r) => r.config === config && r.round > 1);
  const phase = (key) => median(steady.map((r) => r.slowest_leaf?.[key]).filter(Number.isFinite));
  summary[config] = {
    wall_ms: median(steady.map((r) => r.wall_ms)),
    slowest_training_ms: median(steady.map((r) => r.slowest_training_ms)),
    overhead_share: median(steady.map((r) => r.overhead_share)),
    downloaded_bytes: median(steady.map((r) => r.downloaded_bytes)),
    slowest_leaf_phases_ms: Object.fromEntries(['claim_wait_ms', 'download_ms', 'decode_ms', 'train_ms', 'upload_ms']
      .map((k) => [k, phase(k)])),
  };
  const s = summary[config];
  console.log(`${config}: median of rounds 2..${rounds}: wall ${s.wall_ms.toFixed(0)} ms, slowest training ` +
    `${s.slowest_training_ms.toFixed(0)} ms, overhead ${(100 * s.overhead_share).toFixed(1)}% of round time, ` +
    `downloaded ${formatBytes(s.downloaded_bytes)} per round; slowest leaf ${JSON.stringify(s.slowest_leaf_phases_ms,
      (k, v) => (typeof v === 'number' ? Math.round(v) : v))}`);
}
console.log('Not measured: the server\'s fold of an update (inside upload: it answers after folding), and its ' +
  'close and publish of a round (inside the last upload); the status JSON and /metrics have no per-phase timings.');
const ratios = {
  'default.training_share': 1 - summary.default.overhead_share,
  'prefetch0.training_share': 1 - summary.prefetch0.overhead_share,
  'default_vs_prefetch0.wall': summary.prefetch0.wall_ms / summary.default.wall_ms,
  'demo.full_download_over_select_download': summary.full_download.downloaded_bytes / summary.default.downloaded_bytes,
};
for (const [k, v] of Object.entries(ratios)) console.log(`${k.padEnd(44)} ${v.toFixed(3)}`);
console.log('targets: default.training_share >= 0.85');
mkdirSync(path.dirname(args.out), { recursive: true });
writeFileSync(args.out, JSON.stringify({ clients, rounds, summary, results, ratios }, null, 2));
console.log(`wrote ${path.relative(root, args.out)}`);
