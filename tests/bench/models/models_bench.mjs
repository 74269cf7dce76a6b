// scripts/bench.sh models — the demo's job with its two models, in one run: the single-input
// bag-of-words plan (scripts/demo/spam_plan.json: hashed email text → embedding_bag → dense,
// softmax) and the wide & deep plan (scripts/demo/spam_wide_deep_plan.json: each email as a record
// of fields, several sparse inputs, one shared table, numeric features, an MLP beside a wide part
// on crossed columns, sigmoid). Same job otherwise: 16 Node leaves in worker threads on the
// non-IID SpamAssassin shards, 20 rounds, a fresh fedleaf-server per job. Jobs alternate
// (single, wide & deep, single, …, --repeats times), so a drift of the machine hits both alike.
// Per job: the final model's eval accuracy and AUC on the held-out split (1,205 emails, evaluated
// here in wasm on the model as GET .../model sends it), its accuracy at every round, bytes
// uploaded per round (the server's history: upload bodies summed over the round's reports) and
// downloaded per round (the leaves' downloaded events: model:select answers or full models), the
// full model's size and the wall time per round. Ratios (median over repetitions):
// wide_deep_over_single_accuracy (target ≥ 1.0), wide_deep_over_single_auc,
// wide_deep_over_single_upload_bytes and …_download_bytes (what the richer model costs on the wire).
//
//   node tests/bench/models/models_bench.mjs [--clients 16] [--rounds 20] [--repeats 1]
//     [--out build/bench/models.json]
// FEDLEAF_BENCH_SMOKE=1: 4 clients, 2 rounds, 1 repetition (still writes the JSON).
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { createExecutor } from '../../../js_bindings/src/index.js';
import { loadSpamAssassin, spamAssassinEmailRecord } from '../../../js_bindings/src/datasets/spamassassin.js';
import { planTakesRecords } from '../../../js_bindings/src/leaf/record_leaf_data.js';
import { simulateLeaves } from '../../../js_bindings/src/node/simulate.js';
import { formatBytes } from '../../../js_bindings/src/leaf/format_bytes.js';
import { startServer, adminClient } from '../../server/server_harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const smoke = process.env.FEDLEAF_BENCH_SMOKE === '1';
const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: smoke ? '4' : '16' },
    rounds: { type: 'string', default: smoke ? '2' : '20' },
    repeats: { type: 'string', default: '1' },
    out: { type: 'string', default: path.join(root, 'build/bench/models.json') },
  },
});
const clients = Number(args.clients);
const rounds = Number(args.rounds);
const repeats = Number(args.repeats);
const PLANS = {
  single: 'scripts/demo/spam_plan.json',
  wide_deep: 'scripts/demo/spam_wide_deep_plan.json',
};
const records = await loadSpamAssassin();
const executor = await createExecutor();
const evalRecords = records.filter((r) => r.split === 'eval');
const evalLabels = evalRecords.map((r) => r.label);
const evalEmailRecords = evalRecords.map((r) => spamAssassinEmailRecord(r.text));

function evalDataFor(plan) {
  return planTakesRecords(plan)
    ? executor.datasetFromRecords(evalEmailRecords, evalLabels, plan)
    : executor.datasetFromTexts(evalRecords.map((r) => r.text), evalLabels, plan);
}

async function runJob(model) {
  const plan = JSON.parse(readFileSync(path.join(root, PLANS[model]), 'utf8'));
  const evalData = evalDataFor(plan);
  const server = await startServer();
  try {
    const client = adminClient(server.url);
    const created = await client.createPopulation({ plan, seed: 1, rounds, clients_per_round: clients,
      min_reports: Math.max(1, Math.ceil(clients / 2)), lease_s: 120 });
    const modelOf = async (round) =>
      (await client.downloadModel(client.modelUrl(created.id, round), { token: false })).bytes;
    const roundOfTask = new Map();
    const downloaded = new Map();
    const t0 = performance.now();
    const run = simulateLeaves({
      server: server.url, population: created.id, token: created.client_token, clients, nonIid: true,
      prefetch: 1, records,
      onEvent: (index, event) => {
        if (event.type === 'claimed') roundOfTask.set(event.taskId, Number(event.round));
        if (event.type === 'downloaded') {
          const round = roundOfTask.get(event.taskId);
          downloaded.set(round, (downloaded.get(round) ?? 0) + event.bytes);
        }
      },
    });
    await run.done;
    const wallS = (performance.now() - t0) / 1000;
    const status = await client.status(created.id);
    const history = status.history.filter((h) => h.round < rounds);
    const perRound = [];
    for (let round = 1; round <= rounds; round += 1) {
      const ev = executor.evaluate(plan, await modelOf(round), evalData);
      perRound.push({ round, eval_accuracy: ev.accuracy, eval_auc: ev.auc ?? null, eval_loss: ev.loss });
    }
    const final = perRound.at(-1);
    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    return {
      model, plan: PLANS[model], rounds, clients,
      final_eval_accuracy: final.eval_accuracy,
      final_eval_auc: final.eval_auc,
      final_eval_loss: final.eval_loss,
      upload_bytes_per_round: mean(history.map((h) => h.upload_bytes)),
      download_bytes_per_round: mean(history.map((h) => downloaded.get(h.round) ?? 0)),
      reports_per_round: mean(history.map((h) => h.reports)),
      full_model_bytes: (await modelOf(0)).length,
      wall_s_per_round: wallS / rounds,
      per_round: perRound,
    };
  } finally {
    evalData.delete();
    await server.stop();
  }
}

const results = [];
for (let rep = 0; rep < repeats; rep += 1) {
  for (const model of Object.keys(PLANS)) {
    process.stderr.write(`models bench: ${model} (${PLANS[model]}), ${clients} leaves × ${rounds} rounds, ` +
      `repetition ${rep + 1}…\n`);
    results.push({ repetition: rep, ...(await runJob(model)) });
  }
}

const line = (cells, widths) => cells.map((c, i) => String(c).padStart(widths[i])).join('  ');
const widths = [9, 3, 9, 8, 12, 14, 11, 9];
const pct = (x) => `${(100 * x).toFixed(2)}%`;
console.log(line(['model', 'rep', 'eval acc', 'eval auc', 'up / round', 'down / round', 'full model', 's/round'], widths));
for (const r of results) {
  console.log(line([r.model, r.repetition + 1, pct(r.final_eval_accuracy),
    r.final_eval_auc === null ? '-' : r.final_eval_auc.toFixed(4), formatBytes(r.upload_bytes_per_round),
    formatBytes(r.download_bytes_per_round), formatBytes(r.full_model_bytes), r.wall_s_per_round.toFixed(2)], widths));
}

function spread(values) {
  const s = [...values].sort((a, b) => a - b);
  return { median: (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2, min: s[0], max: s[s.length - 1], n: s.length };
}
const at = (model, rep) => results.find((r) => r.model === model && r.repetition === rep);
const perRep = (f) => spread(Array.from({ length: repeats }, (_, rep) => f(rep)));
const over = (field) => perRep((rep) => at('wide_deep', rep)[field] / at('single', rep)[field]);
const spreads = {
  wide_deep_over_single_accuracy: over('final_eval_accuracy'),
  wide_deep_over_single_auc: over('final_eval_auc'),
  wide_deep_over_single_upload_bytes: over('upload_bytes_per_round'),
  wide_deep_over_single_download_bytes: over('download_bytes_per_round'),
};
const ratios = Object.fromEntries(Object.entries(spreads).map(([k, s]) => [k, s.median]));
for (const [k, s] of Object.entries(spreads)) {
  console.log(`${k.padEnd(38)} ${s.median.toFixed(3)}  (min ${s.min.toFixed(3)}, max ${s.max.toFixed(3)}, ` +
    `${s.n} repetition${s.n > 1 ? 's' : ''})`);
}
console.log('target: wide_deep_over_single_accuracy >= 1.0 (the byte ratios say what the richer model costs)');
mkdirSync(path.dirname(args.out), { recursive: true });
writeFileSync(args.out, JSON.stringify({ clients, rounds, repeats, smoke, plans: PLANS, results, spreads, ratios },
  null, 2));
console.log(`wrote ${path.relative(root, args.out)}`);
