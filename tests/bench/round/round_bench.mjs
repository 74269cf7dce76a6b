// scripts/bench.sh round — where round time goes: the demo's federated job (16 Node leaves in
// worker threads of one process, non-IID SpamAssassin shards, scripts/demo/spam_plan.json)
// against a fresh fedleaf-server, in three configurations: `default` (what the demo runs:
// prefetch 1, the plan's select download), `prefetch0` (prefetch 0) and `full_download`
// (prefetch 1, "download": "full" for every tensor).
//
// The measure (issue 11): training_share = the slowest leaf's training time ÷ round wall time,
// per round, median over rounds 2..N. Round wall time: the server's round opened → closed
// (status JSON started_at → closed_at). Slowest leaf: the leaf whose training time is longest in
// that round; its training time is executor.runTask's wall time (decode: reading the model into
// the training session, then the training steps). So overhead = wall − slowest training holds
// every leaf's claim wait, download and upload, the server's fold, the previous close's commit
// (the round opens at its close) and the wait for the last peer's upload; a leaf that trains
// less than the slowest one waits for it, which the measure does not count against the round.
// The slowest leaf's phases: claim wait (round opened → its task claimed), download, decode,
// train (runTask minus decode), upload (PUT → answer; the server folds the update and the answer
// waits for the group commit and its fsync; the last upload also closes the round). Round 1 is
// reported but left out of the medians: it includes every leaf's one-off start (wasm
// instantiation, featurizing its shard).
//
// The server's own phases come from its /metrics (fedleaf_phase_seconds: fold per upload; close
// finalize, encode, hash, store per round; commit and sync per group commit), means over the job.
// CPU: the leaves' process (process.cpuUsage(), every worker thread) and the server's
// (/proc/PID/stat) from the first claim of round 2 to the end of the job, per round, against
// the machine's capacity (cores × wall): with every core busy, leaves contend for the CPU and
// each phase of each leaf stretches; with idle cores, the time is waiting (commit, fsync, peers).
//
//   node tests/bench/round/round_bench.mjs [--clients 16] [--rounds 8] [--configs default,prefetch0,full_download]
//     [--out build/bench/round.json]
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { loadSpamAssassin } from '../../../js_bindings/src/datasets/spamassassin.js';
import { simulateLeaves } from '../../../js_bindings/src/node/simulate.js';
import { startServer, adminClient } from '../../server/server_harness.mjs';
import { formatBytes } from '../../../js_bindings/src/leaf/format_bytes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '8' },
    configs: { type: 'string', default: 'default,prefetch0,full_download' },
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

const CLOCK_TICKS_PER_S = 100;  // USER_HZ of /proc/PID/stat on Linux

function serverCpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;  // utime + stime
}

function cpuSample(server) {
  const { user, system } = process.cpuUsage();
  return { at: performance.now(), leaves_ms: (user + system) / 1000, server_ms: serverCpuMs(server.proc.pid) };
}

// Mean milliseconds and count of each fedleaf_phase_seconds phase in a /metrics text.
function serverPhases(metrics) {
  const sums = {};
  const counts = {};
  for (const [, kind, phase, value] of metrics.matchAll(/^fedleaf_phase_seconds_(sum|count)\{phase="([^"]+)"\} (\S+)$/gm)) {
    (kind === 'sum' ? sums : counts)[phase] = Number(value);
  }
  return Object.fromEntries(Object.keys(counts).map((phase) => [phase,
    { mean_ms: (1000 * sums[phase]) / counts[phase], count: counts[phase] }]));
}

async function runJob(config, prefetch, jobPlan) {
  const server = await startServer();
  try {
    const client = adminClient(server.url);
    const created = await client.createPopulation({ plan: jobPlan, seed: 1, rounds, clients_per_round: clients, lease_s: 120 });
    const tasks = new Map();  // task id → {round, claimedAt, download_ms, downloaded_bytes, ...}
    let cpuFrom;
    const run = simulateLeaves({
      server: server.url, population: created.id, token: created.client_token, clients,
      nonIid: true, prefetch, records,
      onEvent: (index, event) => {
        if (event.type === 'claimed') tasks.set(event.taskId, { round: event.round, claimedAt: event.at });
        if (event.type === 'claimed' && event.round >= 1 && !cpuFrom) cpuFrom = cpuSample(server);
        const task = tasks.get(event.taskId);
        if (!task) return;
        if (event.type === 'downloaded') Object.assign(task, { download_ms: event.ms, downloaded_bytes: event.bytes });
        if (event.type === 'trained') Object.assign(task, { training_ms: event.ms, decode_ms: event.setupMs ?? 0, trainedAt: event.at });
        if (event.type === 'uploaded') task.uploadedAt = event.at;
      },
    });
    await run.done;
    const cpuTo = cpuSample(server);
    const metrics = await client.metrics();
    const steadyRounds = rounds - 1;
    const cpu = cpuFrom && {
      wall_ms_per_round: (cpuTo.at - cpuFrom.at) / steadyRounds,
      leaves_cpu_ms_per_round: (cpuTo.leaves_ms - cpuFrom.leaves_ms) / steadyRounds,
      server_cpu_ms_per_round: (cpuTo.server_ms - cpuFrom.server_ms) / steadyRounds,
      cores: os.availableParallelism(),
    };
    if (cpu) cpu.busy_share = (cpu.leaves_cpu_ms_per_round + cpu.server_cpu_ms_per_round) / (cpu.cores * cpu.wall_ms_per_round);
    const status = await client.status(created.id);
    const perRound = status.history.filter((h) => h.round < rounds).map((h) => {
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
    return { perRound, server: serverPhases(metrics), cpu };
  } finally {
    await server.stop();
  }
}

const allConfigs = [
  { config: 'default', prefetch: 1, plan },
  { config: 'prefetch0', prefetch: 0, plan },
  { config: 'full_download', prefetch: 1, plan: planWithDownload('full') },
];
const wanted = args.configs.split(',');
const configs = allConfigs.filter((c) => wanted.includes(c.config));
const results = [];
const servers = {};
for (const { config, prefetch, plan: jobPlan } of configs) {
  process.stderr.write(`round bench: ${clients} leaves × ${rounds} rounds, ${config}…\n`);
  const job = await runJob(config, prefetch, jobPlan);
  results.push(...job.perRound);
  servers[config] = { phases: job.server, cpu: job.cpu };
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
  const { phases, cpu } = servers[config];
  s.server_phases = phases;
  s.cpu = cpu;
  console.log(`${config}: server ms (mean × count over the job): ${Object.entries(phases)
    .map(([phase, p]) => `${phase} ${p.mean_ms.toFixed(p.mean_ms < 1 ? 2 : 1)} × ${p.count}`).join(', ')}`);
  if (cpu) {
    console.log(`${config}: CPU per round (rounds 2..${rounds}): leaves ${cpu.leaves_cpu_ms_per_round.toFixed(0)} ms, ` +
      `server ${cpu.server_cpu_ms_per_round.toFixed(0)} ms, in ${cpu.wall_ms_per_round.toFixed(0)} ms × ${cpu.cores} ` +
      `cores: ${(100 * cpu.busy_share).toFixed(0)}% busy`);
  }
}
console.log('training_share = slowest leaf\'s training time (runTask: decode + train) ÷ round wall time ' +
  '(server: round opened → closed), median over rounds 2..N; overhead = 1 − training_share');
const ratio = (config, f) => (summary[config] ? f(summary[config]) : undefined);
const ratios = Object.fromEntries(Object.entries({
  'default.training_share': ratio('default', (s) => 1 - s.overhead_share),
  'prefetch0.training_share': ratio('prefetch0', (s) => 1 - s.overhead_share),
  'default_vs_prefetch0.wall': summary.default && ratio('prefetch0', (s) => s.wall_ms / summary.default.wall_ms),
  'demo.full_download_over_select_download': summary.default &&
    ratio('full_download', (s) => s.downloaded_bytes / summary.default.downloaded_bytes),
}).filter(([, v]) => v !== undefined));
for (const [k, v] of Object.entries(ratios)) console.log(`${k.padEnd(44)} ${v.toFixed(3)}`);
console.log('targets: default.training_share >= 0.85');
mkdirSync(path.dirname(args.out), { recursive: true });
writeFileSync(args.out, JSON.stringify({ clients, rounds, summary, results, ratios }, null, 2));
console.log(`wrote ${path.relative(root, args.out)}`);
