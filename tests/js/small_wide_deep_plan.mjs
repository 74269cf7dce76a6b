// The demo's wide & deep plan (scripts/demo/spam_wide_deep_plan.json) with its big tables cut to
// 2^14 rows (the wide one to 2^16), so a test initializes, trains and ships it in moments; inputs,
// layers and updates are the demo's. Shared by the node:test suites that train it.
import { readFileSync } from 'node:fs';

export const WIDE_DEEP_PLAN = JSON.parse(readFileSync(new URL('../../scripts/demo/spam_wide_deep_plan.json',
  import.meta.url), 'utf8'));

export function smallWideDeepPlan() {
  const plan = structuredClone(WIDE_DEEP_PLAN);
  for (const input of Object.values(plan.model.inputs)) {
    const f = input.features;
    if (f?.num_buckets) f.num_buckets = 16384;
    if (f?.cross) f.hash_buckets = 65536;
  }
  for (const layer of plan.model.layers) {
    if (layer.name === 'tokens') layer.vocab = 16384;
    if (layer.name === 'wide') layer.vocab = 65536;
  }
  return plan;
}
