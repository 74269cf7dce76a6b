// scripts/bench.sh operators — does the choice of sparse-sum operator matter? The demo's job
// (16 non-IID SpamAssassin shards, scripts/demo/spam_plan.json) simulated in one process with
// the wasm executor and RoundAggregator (no server: identical rounds, deterministic), once per
// aggregator of the embedding table; the dense parts always use weighted_mean. Prints the eval
// accuracy per round and writes build/bench/operators.json with the ratio of rounds-to-95% and
// of final accuracy against weighted_mean (the FedAvg baseline) measured in the same run.
//
//   node tests/bench/operators/operator_comparison.mjs [--rounds 20] [--learning-rate 0.01]
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { createExecutor } from '../../../js_bindings/src/index.js';
import { loadSpamAssassin } from '../../../js_bindings/src/datasets/spamassassin.js';
import { spamAssassinClientData } from '../../../js_bindings/src/node/simulate.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    clients: { type: 'string', default: '16' },
    'learning-rate': { type: 'string', default: '0.01' },
    out: { type: 'string', default: path.join(root, 'build/bench/operators.json') },
  },
});
const rounds = Number(args.rounds);
const clients = Number(args.clients);
const basePlan = JSON.parse(readFileSync(path.join(root, 'scripts/demo/spam_plan.json'), 'utf8'));
basePlan.train.optimizer.learning_rate = Number(args['learning-rate']);

const executor = await createExecutor();
const records = await loadSpamAssassin();
const evalRecords = records.filter((r) => r.split === 'eval');

async function federate(aggregator) {
  const plan = structuredClone(basePlan);
  plan.updates['emb/weight'].aggregator = aggregator;
  const evalData = executor.datasetFromTexts(evalRecords.map((r) => r.text), evalRecords.map((r) => r.label), plan);
  const shards = Array.from({ length: clients }, (_, i) => {
    const { train } = spamAssassinClientData(records, i, clients, { nonIid: true });
    return executor.datasetFromTexts(train.texts, train.labels, plan);
  });
  let model = executor.initializeModel(plan, 1);
  const accuracy = [];
  for (let round = 0; round < rounds; round++) {
    const agg = executor.createRoundAggregator(plan, model);
    for (const shard of shards) agg.addResult((await executor.train(plan, model, shard)).bytes);
    model = agg.nextModel();
    agg.delete();
    accuracy.push(executor.evaluate(plan, model, evalData).accuracy);
    process.stderr.write(`\r${aggregator}: round ${round + 1}/${rounds}`);
  }
  process.stderr.write('\n');
  shards.forEach((s) => s.delete());
  evalData.delete();
  return accuracy;
}

const operators = ['weighted_mean', 'mean_over_contributors'];
const results = {};
for (const op of operators) results[op] = await federate(op);

const roundsTo = (acc, target) => {
  const i = acc.findIndex((a) => a >= target);
  return i < 0 ? Infinity : i + 1;
};
console.log(`${clients} non-IID clients, Adam lr ${args['learning-rate']}, eval accuracy per round:`);
console.log(['round', ...operators].map((c, i) => c.padStart(i ? 24 : 5)).join(''));
for (let r = 0; r < rounds; r++) {
  console.log([String(r + 1).padStart(5), ...operators.map((op) => `${(100 * results[op][r]).toFixed(2)}%`.padStart(24))].join(''));
}
const base = results.weighted_mean;
const ours = results.mean_over_contributors;
const ratios = {
  'mean_over_contributors_vs_weighted_mean.final_accuracy': ours.at(-1) / base.at(-1),
  'mean_over_contributors_vs_weighted_mean.rounds_to_95': roundsTo(base, 0.95) / roundsTo(ours, 0.95),
};
for (const op of operators) {
  const n = roundsTo(results[op], 0.95);
  console.log(`${op}: final ${(100 * results[op].at(-1)).toFixed(2)}%, rounds to 95%: ${n === Infinity ? `not within ${rounds}` : n}`);
}
mkdirSync(path.dirname(args.out), { recursive: true });
writeFileSync(args.out, JSON.stringify({
  clients, rounds, learning_rate: Number(args['learning-rate']),
  results: operators.map((op) => ({ aggregator: op, eval_accuracy: results[op] })),
  ratios: Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, Number.isFinite(v) ? v : null])),
}, null, 2));
console.log(`wrote ${path.relative(root, args.out)}`);
