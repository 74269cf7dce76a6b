// Run once to choose the numbers of scripts/demo/spam_wide_deep_plan.json: statistics of the
// SpamAssassin records (spamAssassinEmailRecord) over the train split — the standardize mean and
// std of each numeric field, the spread of the log1p ones, and how many distinct categories each
// categorical field has (and whether the plan's hash_buckets keep them apart).
//   node scripts/demo/spam_record_stats.mjs [plan.json]
import { readFile } from 'node:fs/promises';

import { loadSpamAssassin, spamAssassinEmailRecord } from '../../js_bindings/src/datasets/spamassassin.js';
import { murmur3_32 } from '../../js_bindings/src/datasets/murmur3.js';

const planPath = process.argv[2] ?? new URL('./spam_wide_deep_plan.json', import.meta.url);
const plan = JSON.parse(await readFile(planPath, 'utf8'));
const train = (await loadSpamAssassin()).filter((r) => r.split === 'train');
const records = train.map((r) => spamAssassinEmailRecord(r.text));
const encoder = new TextEncoder();

function moments(values) {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length;
  const sorted = [...values].sort((a, b) => a - b);
  const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { mean: Number(mean.toPrecision(4)), std: Number(Math.sqrt(variance).toPrecision(4)),
    p01: Number(q(0.01).toPrecision(4)), p50: Number(q(0.5).toPrecision(4)), p99: Number(q(0.99).toPrecision(4)) };
}

console.log(`${records.length} train emails`);
for (const field of ['length', 'links', 'caps_share', 'exclamations', 'html']) {
  const raw = records.map((r) => r[field]);
  console.log(field, 'raw', moments(raw), 'log1p', moments(raw.map((x) => Math.log1p(Math.max(x, 0)))));
}
for (const [name, input] of Object.entries(plan.model.inputs)) {
  const f = input.features;
  if (!f?.column) continue;
  const values = new Set(records.flatMap((r) => [r[f.column]].flat().map(String)));
  const buckets = new Set([...values].map((v) => murmur3_32(encoder.encode(v), f.seed ?? 0) % f.hash_buckets));
  console.log(`${name} (${f.column}): ${values.size} distinct values in ${buckets.size} of ${f.hash_buckets} buckets`);
}
