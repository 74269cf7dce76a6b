// scripts/bench.sh compression — what compressed updates and downloads save on the demo's job
// (16 Node leaves in worker threads, non-IID SpamAssassin shards, the demo's model and training in
// scripts/demo/spam_plan_f32.json, the uncompressed plan) against a fresh fedleaf-server, in three
// settings of every tensor's updates entry (the int8 one is scripts/demo/spam_plan.json's):
//   f32   "compression": {"values": "f32", "ids": "i64"}, "download_values": "f32" (the defaults)
//   f16   "compression": {"values": "f16"}, "download_values": "f16"
//   int8  "compression": {"values": "int8", "ids": "delta_varint"} ("ids" on the row-sparse
//         embedding only), "download_values": "f16"
// Jobs interleave: f32 f16 int8 f32 f16 int8 … (--repeats times), so a drift of the machine hits
// every setting alike; each repetition gives one ratio per pair, and the table reports the
// median with its min–max over repetitions. Per job: bytes uploaded per round (the server's
// history: upload bodies, summed over the round's reports), bytes downloaded per round (the
// leaves' downloaded events: select answers or full models), the final model's eval accuracy on
// the held-out split, and the CPU of the leaves' process and of the server per round (rounds
// 2..N). A dim-32 pair (f32, int8, --dim32-rounds rounds) measures the upload ratio at a wider
// embedding.
//
//   node tests/bench/compression/compression_bench.mjs [--clients 16] [--rounds 20] [--repeats 2]
//     [--dim32-rounds 3] [--out build/bench/compression.json]
// FEDLEAF_BENCH_SMOKE=1: 4 clients, 2 rounds, 1 repetition, 1 dim-32 round (still writes JSON).
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { createExecutor } from '../../../js_bindings/src/index.js';
import { loadSpamAssassin } from '../../../js_bindings/src/datasets/spamassassin.js';
import { simulateLeaves } from '../../../js_bindings/src/node/simulate.js';
import { formatBytes } from '../../../js_bindings/src/leaf/format_bytes.js';
import { startServer, adminClient } from '../../server/server_harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const smoke = process.env.FEDLEAF_BENCH_SMOKE === '1';
const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: smoke ? '4' : '16' },
    rounds: { type: 'string', default: smoke ? '2' : '20' },
    repeats: { type: 'string', default: smoke ? '1' : '2' },
    'dim32-rounds': { type: 'string', default: smoke ? '1' : '3' },
    out: { type: 'string', default: path.join(root, 'build/bench/compression.json') },
  },
});
const clients = Number(args.clients);
const rounds = Number(args.rounds);
const repeats = Number(args.repeats);
const dim32Rounds = Number(args['dim32-rounds']);
const basePlan = JSON.parse(readFileSync(path.join(root, 'scripts/demo/spam_plan_f32.json'), 'utf8'));
const records = await loadSpamAssassin();
const executor = await createExecutor();
const evalRecords = records.filter((r) => r.split === 'eval');

const SETTINGS = {
  f32: () => ({ compression: { values: 'f32', ids: 'i64' }, download_values: 'f32' }),
  f16: () => ({ compression: { values: 'f16' }, download_values: 'f16' }),
  int8: (u) => ({ compression: { values: 'int8', ...(u.encoding === 'row_sparse' ? { ids: 'delta_varint' } : {}) },
    download_values: 'f16' }),
};

function planFor(setting, dim) {
  const layers = basePlan.model.layers.map((l) => (l.type === 'embedding_bag' ? { ...l, dim } : l));
  const updates = Object.fromEntries(Object.entries(basePlan.updates)
    .map(([name, u]) => [name, { ...u, ...SETTINGS[setting](u) }]));
  return { ...basePlan, model: { ...basePlan.model, layers }, updates };
}

const CLOCK_TICKS_PER_S = 100;  // USER_HZ of /proc/PID/stat on Linux
function serverCpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;  // utime + stime
}
function cpuSample(server) {
  const { user, system } = process.cpuUsage();
  return { leaves_ms: (user + system) / 1000, server_ms: serverCpuMs(server.proc.pid) };
}

async function runJob(setting, dim, jobRounds) {
  const plan = planFor(setting, dim);
  const server = await startServer();
  try {
    const client = adminClient(server.url);
    const created = await client.createPopulation({ plan, seed: 1, rounds: jobRounds, clients_per_round: clients,
      lease_s: 120 });
    const roundOfTask = new Map();
    const downloaded = new Map();
    let cpuFrom;
    const run = simulateLeaves({
      server: server.url, population: created.id, token: created.client_token, clients, nonIid: true,
      prefetch: 1, records,
      onEvent: (index, event) => {
        if (event.type === 'claimed') {
          roundOfTask.set(event.taskId, Number(event.round));
          if (event.round >= 1 && !cpuFrom) cpuFrom = cpuSample(server);
        }
        if (event.type === 'downloaded') {
          const round = roundOfTask.get(event.taskId);
          downloaded.set(round, (downloaded.get(round) ?? 0) + event.bytes);
        }
      },
    });
    await run.done;
    const cpuTo = cpuSample(server);
    const status = await client.status(created.id);
    const history = status.history.filter((h) => h.round < jobRounds);
    const finalModel = (await client.downloadModel(client.modelUrl(created.id, jobRounds), { token: false })).bytes;
    const evalData = executor.datasetFromTexts(evalRecords.map((r) => r.text), evalRecords.map((r) => r.label), plan);
    const accuracy = executor.evaluate(plan, finalModel, evalData).accuracy;
    evalData.delete();
    const steady = Math.max(1, jobRounds - 1);
    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    return {
      setting, dim, rounds: jobRounds,
      upload_bytes_per_round: mean(history.map((h) => h.upload_bytes)),
      download_bytes_per_round: mean(history.map((h) => downloaded.get(h.round) ?? 0)),
      reports_per_round: mean(history.map((h) => h.reports)),
      final_eval_accuracy: accuracy,
      leaves_cpu_ms_per_round: cpuFrom ? (cpuTo.leaves_ms - cpuFrom.leaves_ms) / steady : NaN,
      server_cpu_ms_per_round: cpuFrom ? (cpuTo.server_ms - cpuFrom.server_ms) / steady : NaN,
    };
  } finally {
    await server.stop();
  }
}

const results = [];
for (let rep = 0; rep < repeats; rep += 1) {
  for (const setting of Object.keys(SETTINGS)) {
    process.stderr.write(`compression bench: ${setting}, ${clients} leaves × ${rounds} rounds, repetition ${rep + 1}…\n`);
    results.push({ repetition: rep, ...(await runJob(setting, 16, rounds)) });
  }
}
for (const setting of ['f32', 'int8']) {
  process.stderr.write(`compression bench: ${setting} at dim 32, ${dim32Rounds} rounds…\n`);
  results.push({ repetition: 0, ...(await runJob(setting, 32, dim32Rounds)) });
}

const line = (cells, widths) => cells.map((c, i) => String(c).padStart(widths[i])).join('  ');
// CPU per round counts rounds 2..N: a one-round job has none.
const fixed = (x) => (Number.isFinite(x) ? x.toFixed(0) : '-');
const widths = [7, 4, 4, 12, 14, 9, 13, 13];
console.log(line(['setting', 'dim', 'rep', 'up / round', 'down / round', 'eval acc', 'leaf cpu ms', 'server cpu ms'], widths));
for (const r of results) {
  console.log(line([r.setting, r.dim, r.repetition + 1, formatBytes(r.upload_bytes_per_round),
    formatBytes(r.download_bytes_per_round), `${(100 * r.final_eval_accuracy).toFixed(2)}%`,
    fixed(r.leaves_cpu_ms_per_round), fixed(r.server_cpu_ms_per_round)], widths));
}

// One value per repetition (the pair of that repetition), then the median and its range.
function spread(values) {
  const s = [...values].sort((a, b) => a - b);
  return { median: (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2, min: s[0], max: s[s.length - 1], n: s.length };
}
const at = (setting, rep, dim = 16) => results.find((r) => r.setting === setting && r.repetition === rep && r.dim === dim);
const perRep = (f) => spread(Array.from({ length: repeats }, (_, rep) => f(rep)));
const spreads = {
  upload_bytes_f32_over_int8: perRep((rep) => at('f32', rep).upload_bytes_per_round / at('int8', rep).upload_bytes_per_round),
  upload_bytes_f32_over_f16: perRep((rep) => at('f32', rep).upload_bytes_per_round / at('f16', rep).upload_bytes_per_round),
  download_bytes_f32_over_f16: perRep((rep) => at('f32', rep).download_bytes_per_round / at('f16', rep).download_bytes_per_round),
  int8_over_f32_accuracy: perRep((rep) => at('int8', rep).final_eval_accuracy / at('f32', rep).final_eval_accuracy),
  f16_over_f32_accuracy: perRep((rep) => at('f16', rep).final_eval_accuracy / at('f32', rep).final_eval_accuracy),
  upload_bytes_f32_over_int8_dim32: spread([at('f32', 0, 32).upload_bytes_per_round / at('int8', 0, 32).upload_bytes_per_round]),
};
const ratios = Object.fromEntries(Object.entries(spreads).map(([k, s]) => [k, s.median]));
for (const [k, s] of Object.entries(spreads)) {
  console.log(`${k.padEnd(34)} ${s.median.toFixed(3)}  (min ${s.min.toFixed(3)}, max ${s.max.toFixed(3)}, ${s.n} repetition${s.n > 1 ? 's' : ''})`);
}
console.log('targets: upload_bytes_f32_over_int8 >= 3.0 (dim 16), upload_bytes_f32_over_int8_dim32 >= 3.5, ' +
  'int8_over_f32_accuracy >= 0.995, download_bytes_f32_over_f16 >= 1.8');
mkdirSync(path.dirname(args.out), { recursive: true });
writeFileSync(args.out, JSON.stringify({ clients, rounds, repeats, smoke, results, spreads, ratios }, null, 2));
console.log(`wrote ${path.relative(root, args.out)}`);
