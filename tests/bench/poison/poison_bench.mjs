// scripts/bench.sh poison — what three poisoning leaves do to the demo job, with the robust
// aggregation defaults and with them turned off, in one run.
//
// The demo job: scripts/demo/spam_plan.json, 16 honest Node leaves on the non-IID SpamAssassin
// shards, 20 rounds. Under attack, 3 more leaves join (holding copies of honest shards 0, 5 and
// 10, so each has real data): one scales its update ×1e6, one claims 2^53 examples, one trains on
// flipped labels (js_bindings/src/node/attacks.js). Every round waits for all 19 reports, so
// every attacker reaches every round. Final model evaluated here on the 1,205 held-out emails.
//
//   node tests/bench/poison/poison_bench.mjs [--rounds 20] [--out build/bench/poison.json]
//       [--attacks scale:1e6,flip_labels] [--robust-only] [--plan scripts/demo/spam_plan.json]
//       [--jobs attacked-robust] [--clean-accuracy 0.9867]
//
// --attacks runs only the named attackers (to see which one costs accuracy); --robust-only
// skips the two jobs with robust aggregation off; --jobs runs only the named ones (clean-robust,
// attacked-robust, attacked-plain, clean-plain), and --clean-accuracy then stands in for the
// clean job's accuracy in the ratios (its accuracy is deterministic: one run is enough).
//
// Ratios: robust_under_attack_over_clean = accuracy with attackers and the defaults ÷ clean
// accuracy (target ≥ 0.97); plain_under_attack_over_clean, the same with robust aggregation off.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { createExecutor } from '../../../js_bindings/src/index.js';
import { loadSpamAssassin } from '../../../js_bindings/src/datasets/spamassassin.js';
import { simulateLeaves } from '../../../js_bindings/src/node/simulate.js';
import { startServer, adminClient } from '../../server/server_harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    out: { type: 'string', default: path.join(root, 'build/bench/poison.json') },
    attacks: { type: 'string', default: 'scale:1e6,claim_examples:9007199254740992,flip_labels' },
    'robust-only': { type: 'boolean', default: false },
    plan: { type: 'string', default: path.join(root, 'scripts/demo/spam_plan.json') },
    jobs: { type: 'string' },
    'clean-accuracy': { type: 'string' },
  },
});
const rounds = Number(args.rounds);
const honest = 16;
const ATTACKS = args.attacks.split(',').filter(Boolean);
const demoPlan = JSON.parse(readFileSync(args.plan, 'utf8'));

// The demo plan with every robust-aggregation default turned off explicitly (the schema is in
// src/core/aggregation/updates/update_plan.h): no clip of any report, no cap on claimed examples, no
// minimum of contributors per row.
function plainPlan(plan) {
  const updates = Object.fromEntries(Object.entries(plan.updates)
    .map(([name, spec]) => [name, {
      ...spec, clip: 'off',
      ...(spec.aggregator === 'mean_over_contributors' && { min_contributors: 'off' }),
    }]));
  return { ...plan, updates, max_examples_per_report: 'off' };
}

const records = await loadSpamAssassin();
const executor = await createExecutor();
const evalRecords = records.filter((r) => r.split === 'eval');
const evalData = executor.datasetFromTexts(evalRecords.map((r) => r.text), evalRecords.map((r) => r.label), demoPlan);

async function runJob({ name, plan, attacked }) {
  const leaves = honest + (attacked ? ATTACKS.length : 0);
  const server = await startServer();
  const started = Date.now();
  try {
    const client = adminClient(server.url);
    const created = await client.createPopulation(
      { plan, seed: 1, rounds, clients_per_round: leaves, lease_s: 120, round_deadline_s: 600 });
    const attacks = attacked ? Object.fromEntries(ATTACKS.map((a, i) => [honest + i, a])) : {};
    const rejected = { count: 0 };
    const run = simulateLeaves({
      server: server.url, population: created.id, token: created.client_token, clients: honest, leaves,
      nonIid: true, prefetch: 1, records, attacks, shardOf: (i) => (i < honest ? i : (i - honest) * 5),
      onEvent: (index, event) => { if (event.type === 'dropped') rejected.count += 1; },
    });
    await run.done;
    const status = await client.status(created.id);
    const { bytes: model } = await client.downloadModel(client.modelUrl(created.id, rounds));
    const ev = executor.evaluate(plan, model, evalData);
    return { name, attacked, leaves, eval_accuracy: ev.accuracy, eval_loss: ev.loss,
      dropped_uploads: rejected.count, rejections: status.rejections,
      seconds: (Date.now() - started) / 1000 };
  } finally {
    await server.stop();
  }
}

const JOBS = [
  { key: 'clean-robust', name: 'clean, robust defaults', plan: demoPlan, attacked: false },
  { key: 'attacked-robust', name: 'attacked, robust defaults', plan: demoPlan, attacked: true },
  { key: 'attacked-plain', name: 'attacked, robust off', plan: plainPlan(demoPlan), attacked: true },
  { key: 'clean-plain', name: 'clean, robust off', plan: plainPlan(demoPlan), attacked: false },
];
const selected = args.jobs?.split(',').filter(Boolean);
for (const key of selected ?? []) {
  if (!JOBS.some((job) => job.key === key)) {
    throw new RangeError(`--jobs: '${key}' is not one of ${JOBS.map((job) => job.key).join(', ')}`);
  }
}
const jobs = JOBS.filter((job) => (selected ? selected.includes(job.key) : !args['robust-only'] || job.plan === demoPlan));
const results = [];
for (const job of jobs) {
  process.stderr.write(`poison bench: ${job.name} (${rounds} rounds)…\n`);
  results.push({ key: job.key, ...(await runJob(job)) });
}
evalData.delete();

const widths = [28, 7, 9, 10, 8, 9];
const line = (cells) => cells.map((c, i) => String(c)[i ? 'padStart' : 'padEnd'](widths[i])).join('  ');
console.log(line(['job', 'leaves', 'eval acc', 'eval loss', 'dropped', 'wall s']));
for (const r of results) {
  console.log(line([r.name, r.leaves, `${(100 * r.eval_accuracy).toFixed(2)}%`, r.eval_loss.toFixed(4),
    r.dropped_uploads, r.seconds.toFixed(1)]));
}
const accuracyOf = (key) => results.find((r) => r.key === key)?.eval_accuracy;
const clean = args['clean-accuracy'] !== undefined ? Number(args['clean-accuracy']) : accuracyOf('clean-robust');
const ratioNames = { 'attacked-robust': 'robust_under_attack_over_clean',
  'attacked-plain': 'plain_under_attack_over_clean', 'clean-plain': 'plain_clean_over_robust_clean' };
const ratios = Object.fromEntries(Object.entries(ratioNames)
  .filter(([key]) => clean !== undefined && accuracyOf(key) !== undefined)
  .map(([key, ratio]) => [ratio, accuracyOf(key) / clean]));
for (const [k, v] of Object.entries(ratios)) console.log(`${k} = ${v.toFixed(4)}`);
mkdirSync(path.dirname(args.out), { recursive: true });
writeFileSync(args.out, JSON.stringify({ rounds, honest, attacks: ATTACKS, results, ratios }, null, 2));
console.log(`wrote ${path.relative(root, args.out)}`);
