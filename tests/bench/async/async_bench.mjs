// scripts/bench.sh async — synchronous rounds vs buffered asynchronous aggregation (FedBuff) on a
// heterogeneous population (issue 30): the demo job (N Node leaves in worker threads of one
// process, non-IID SpamAssassin shards, scripts/demo/spam_wide_deep_plan.json unless --plan) with
// --slow-fraction of the leaves --slow-factor× slower and churn (js_bindings/src/node/
// leaf_speeds.js: a delay proportional to each leaf's measured training time, seeded), each run
// against a fresh fedleaf-server (tests/server/server_harness.mjs).
//
// Configurations (the same leaves, data and report budget B):
//   sync           clients_per_round = N, min_reports = ⌈N/2⌉, round_deadline_s 300 (as the demo),
//                  B/N rounds. A round closes at its N-th report: it waits for its slow leaves,
//                  and a churned task is handed out again only once its lease (--lease-s, 10 s:
//                  several times a slow leaf's whole task here, ~1-2 s under load, so no honest
//                  leaf loses its lease; longer leases cost sync more) expires (the 300 s
//                  deadline, after which ⌈N/2⌉ reports would do, is never reached here);
//   buffered       mode buffered, buffer_size K (--buffer-size, default ⌈3N/4⌉: with ⌈N/2⌉, the
//                  demo's, each version is the first half of a non-IID population to report and
//                  the models swing between one class and the other), concurrency N (every
//                  leaf may hold a task), max_staleness --max-staleness (default 20: a slow leaf
//                  trains while ~(factor × N / K) versions pass), staleness weight 1/(1+s)^0.5,
//                  B/K versions;
//   sync-adam, buffered-adam   the same with server_optimizer adam, η --adam-lr (0.1: the design
//                  map's FedAdam table, "Server optimizers").
// Every configuration accepts exactly B reports (a round closes at N, a version at K), so the
// final accuracies compare models built from as many reports. Runs are interleaved (one of each
// configuration per repeat, after --warmup short runs (2 rounds) of the first one that are not
// counted: the machine's caches, the corpus loaded, the wasm compiled); repeat r
// uses leaf seed --seed + r, the same in every configuration of that repeat.
//
// Per run: the eval accuracy of every published model (downloaded as it is published, evaluated
// on the whole eval split after the run, so evaluation takes no CPU from the leaves), wall time
// from the leaves' start to the first model with ≥ --target accuracy (null if none), the final
// model's accuracy; uploads answered 201 (leaves' events and the server's
// fedleaf_uploads_total{status="201"}), reports the server counted (sum of its history's per-round
// reports), double_counted = reports counted − 201 answers (must be 0; per round too for sync,
// where a report folds into its task's round), lost = uploads refused (409 stale, 410 round
// closed or lease expired) while the population was training; refused_at_end = those answered
// after the last model was published (buffered: the tasks still out when the budget is spent);
// churned = tasks a leaf left without uploading.
// Ratios (medians over repeats, min and max alongside): sync_over_buffered_time_to_95 (target
// ≥ 2.0), buffered_over_sync_final_accuracy (≥ 0.99), and the same for the adam pair.
//
//   node tests/bench/async/async_bench.mjs [--clients 16] [--budget 192] [--buffer-size 12]
//     [--repeats 2] [--warmup 1] [--plan FILE] [--slow-fraction 0.3] [--slow-factor 5]
//     [--churn 0.05] [--churn-away 2] [--seed 1] [--lease-s 10] [--max-staleness 20]
//     [--adam-lr 0.1] [--configs sync,buffered,sync-adam,buffered-adam] [--target 0.95]
//     [--out build/bench/async.json]
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { createExecutor } from '../../../js_bindings/src/index.js';
import { loadSpamAssassin, spamAssassinEmailRecord } from '../../../js_bindings/src/datasets/spamassassin.js';
import { planTakesRecords } from '../../../js_bindings/src/leaf/record_leaf_data.js';
import { simulateLeaves } from '../../../js_bindings/src/node/simulate.js';
import { startServer, adminClient } from '../../server/server_harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '16' },
    budget: { type: 'string', default: '192' },
    'buffer-size': { type: 'string' },
    repeats: { type: 'string', default: '2' },
    warmup: { type: 'string', default: '1' },
    plan: { type: 'string', default: path.join(root, 'scripts/demo/spam_wide_deep_plan.json') },
    'slow-fraction': { type: 'string', default: '0.3' },
    'slow-factor': { type: 'string', default: '5' },
    churn: { type: 'string', default: '0.05' },
    'churn-away': { type: 'string', default: '2' },
    seed: { type: 'string', default: '1' },
    'lease-s': { type: 'string', default: '10' },
    'max-staleness': { type: 'string', default: '20' },
    'adam-lr': { type: 'string', default: '0.1' },
    configs: { type: 'string', default: 'sync,buffered,sync-adam,buffered-adam' },
    target: { type: 'string', default: '0.95' },
    'stall-s': { type: 'string', default: '600' },
    out: { type: 'string', default: path.join(root, 'build/bench/async.json') },
  },
});
const clients = Number(args.clients);
const budget = Number(args.budget);
const bufferSize = Number(args['buffer-size'] ?? Math.ceil((3 * clients) / 4));
const target = Number(args.target);
if (budget % clients !== 0 || budget % bufferSize !== 0) {
  throw new Error(`--budget ${budget}: must be a multiple of --clients ${clients} and of --buffer-size ${bufferSize}`);
}
const plan = JSON.parse(readFileSync(args.plan, 'utf8'));
const adam = { type: 'adam', learning_rate: Number(args['adam-lr']) };
const leaseS = Number(args['lease-s']);
const allConfigs = {
  sync: { mode: 'synchronous', spec: { rounds: budget / clients, clients_per_round: clients, min_reports: Math.ceil(clients / 2) } },
  buffered: { mode: 'buffered', spec: { rounds: budget / bufferSize, mode: 'buffered', buffer_size: bufferSize,
    concurrency: clients, max_staleness: Number(args['max-staleness']) } },
};
allConfigs['sync-adam'] = { ...allConfigs.sync, spec: { ...allConfigs.sync.spec, server_optimizer: adam } };
allConfigs['buffered-adam'] = { ...allConfigs.buffered, spec: { ...allConfigs.buffered.spec, server_optimizer: adam } };
const configs = args.configs.split(',');
for (const c of configs) if (!allConfigs[c]) throw new Error(`--configs: unknown configuration ${c}`);
const heterogeneity = {
  slow: { fraction: Number(args['slow-fraction']), factor: Number(args['slow-factor']) },
  churn: { probability: Number(args.churn), awayFactor: Number(args['churn-away']) },
};

const executor = await createExecutor();
const records = await loadSpamAssassin();
const evalRecords = records.filter((r) => r.split === 'eval');
const evalLabels = evalRecords.map((r) => r.label);
const evalData = planTakesRecords(plan)
  ? executor.datasetFromRecords(evalRecords.map((r) => spamAssassinEmailRecord(r.text)), evalLabels, plan)
  : executor.datasetFromTexts(evalRecords.map((r) => r.text), evalLabels, plan);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2 : null;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const count = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);

// One run of `config` on a fresh server; `rounds` overrides the budget's rounds (the warm-up).
async function runOnce(config, seed, rounds) {
  const { mode } = allConfigs[config];
  const spec = { ...allConfigs[config].spec, ...(rounds ? { rounds } : {}) };
  const server = await startServer();
  try {
    const client = adminClient(server.url);
    const created = await client.createPopulation({ plan, seed: 1, round_deadline_s: 300, lease_s: leaseS, ...spec });
    const population = created.id;
    const roundOfTask = new Map();
    const answers = [];  // {status, at, round} of every upload answer and drop, as the leaves saw them
    let churned = 0;
    const trainMs = [];  // measured training time of the tasks of slow or churning leaves
    let leafFailure;
    const startedAt = Date.now();
    const run = simulateLeaves({
      server: server.url, population, token: created.client_token, clients, nonIid: true, records,
      ...heterogeneity, seed,
      onEvent: (index, event) => {
        if (event.type === 'claimed') roundOfTask.set(event.taskId, event.round);
        if (event.type === 'uploaded') answers.push({ status: event.status, at: event.at, round: roundOfTask.get(event.taskId) });
        if (event.type === 'dropped' && event.status !== 0) answers.push({ status: event.status, at: event.at });
        if (event.type === 'delayed') trainMs.push(event.trainMs);
        if (event.type === 'delayed' && event.churned) churned += 1;
      },
    });
    run.done.catch((error) => { leafFailure = error; });
    const models = [];  // {round, closed_at, reports, bytes}
    let status;
    let lastChange = Date.now();
    while (!leafFailure) {
      await sleep(200);
      status = await client.status(population);
      const history = (status.history ?? []).filter((h) => h.closed_at != null && h.round < status.rounds);
      while (models.length < history.length) {
        const h = history[models.length];
        const { bytes } = await client.downloadModel(client.modelUrl(population, h.round + 1), { token: false });
        models.push({ round: h.round + 1, closed_at: h.closed_at, reports: h.reports, bytes });
        lastChange = Date.now();
      }
      if (status.state === 'finished' || status.state === 'failed') break;
      if (Date.now() - lastChange > Number(args['stall-s']) * 1000) {
        leafFailure = new Error(`no model published for ${args['stall-s']} s`);
      }
    }
    // Let the leaves end on their own (their next claim answers 'finished'), so uploads in flight
    // get their answer; those still away or waiting are stopped after 5 s. The exactly-once check
    // does not depend on it: it compares the server's reports with the server's 201 answers (and,
    // for sync, where the last round closes at its last report, with the leaves' 201s per round).
    const ended = await Promise.race([run.done.then(() => true, () => true), sleep(5_000).then(() => false)]);
    if (!ended) run.stop();
    await run.done.catch(() => {});
    if (leafFailure) throw new Error(`${config}: ${leafFailure.message}`);
    if (status.state !== 'finished') throw new Error(`${config}: population ${status.state}`);
    const metrics = await client.metrics();
    const server201 = Number(/fedleaf_uploads_total\{status="201"\} (\d+)/.exec(metrics)?.[1] ?? 0);

    const evaluated = models.map((m) => ({
      round: m.round, reports: m.reports, wall_s: m.closed_at - startedAt / 1000,
      accuracy: executor.evaluate(plan, m.bytes, evalData).accuracy,
    }));
    const first = evaluated.find((m) => m.accuracy >= target);
    const finishedAt = models.at(-1).closed_at * 1000;
    const reports = models.reduce((n, m) => n + m.reports, 0);
    const accepted = answers.filter((a) => a.status === 201);
    const refused = answers.filter((a) => a.status === 409 || a.status === 410);
    let doubleCountedRounds = 0;
    if (mode === 'synchronous') {  // a report folds into its task's round: compare per round
      const perRound = new Map();
      for (const a of accepted) count(perRound, a.round);
      doubleCountedRounds = models.filter((m) => (perRound.get(m.round - 1) ?? 0) !== m.reports).length;
    }
    return {
      config, mode, server_optimizer: spec.server_optimizer?.type ?? 'fedavg', seed,
      models: evaluated.length, reports,
      time_to_target_s: first ? first.wall_s : null, target_reached_at: first ? first.round : null,
      final_accuracy: evaluated.at(-1).accuracy, wall_s: evaluated.at(-1).wall_s,
      accepted_201_leaves: accepted.length, accepted_201_server: server201,
      double_counted: reports - server201, rounds_with_mismatch: doubleCountedRounds,
      lost: refused.filter((a) => a.at <= finishedAt).length,
      refused_at_end: refused.filter((a) => a.at > finishedAt).length,
      stale_409: refused.filter((a) => a.status === 409).length,
      churned, train_ms_median: median(trainMs),
      accuracy_by_model: evaluated.map((m) => [m.round, Number(m.accuracy.toFixed(4)), Number(m.wall_s.toFixed(2))]),
    };
  } finally {
    await server.stop();
  }
}

const seed0 = Number(args.seed);
for (let w = 0; w < Number(args.warmup); w++) {
  process.stderr.write(`async bench: warm-up (${configs[0]}, 2 rounds, not counted)…\n`);
  await runOnce(configs[0], seed0 + 1000 + w, 2);
}
// A ratio per repeat (null when either side is null), then median/min/max of those that exist.
// A repeat where one side never reached the target makes the median null: never silently dropped.
function ratio(results, repeats, numConfig, denConfig, key) {
  const per = [];
  for (let r = 1; r <= repeats; r++) {
    const num = results.find((x) => x.repeat === r && x.config === numConfig)?.[key];
    const den = results.find((x) => x.repeat === r && x.config === denConfig)?.[key];
    per.push(num != null && den != null && den > 0 ? num / den : null);
  }
  if (per.length === 0 || per.some((x) => x === null)) return { median: null, min: null, max: null, per_repeat: per };
  return { median: median(per), min: Math.min(...per), max: Math.max(...per), per_repeat: per };
}
// The ratios over the first `repeats` repeats, and build/bench/async.json with them: written after
// every repeat, so a run cut short still leaves the repeats it finished.
function summarize(results, repeats) {
  const ratioDetail = {};
  if (configs.includes('sync') && configs.includes('buffered')) {
    ratioDetail.sync_over_buffered_time_to_95 = ratio(results, repeats, 'sync', 'buffered', 'time_to_target_s');
    ratioDetail.buffered_over_sync_final_accuracy = ratio(results, repeats, 'buffered', 'sync', 'final_accuracy');
  }
  if (configs.includes('sync-adam') && configs.includes('buffered-adam')) {
    ratioDetail['adam.sync_over_buffered_time_to_95'] = ratio(results, repeats, 'sync-adam', 'buffered-adam', 'time_to_target_s');
    ratioDetail['adam.buffered_over_sync_final_accuracy'] = ratio(results, repeats, 'buffered-adam', 'sync-adam', 'final_accuracy');
  }
  // `ratios` holds the medians that exist (a null median is left out, its detail says why).
  const ratios = Object.fromEntries(Object.entries(ratioDetail).filter(([, v]) => v.median !== null).map(([k, v]) => [k, v.median]));
  mkdirSync(path.dirname(args.out), { recursive: true });
  writeFileSync(args.out, JSON.stringify({
    clients, budget, buffer_size: bufferSize, plan: path.relative(root, path.resolve(args.plan)), target,
    lease_s: leaseS, max_staleness: Number(args['max-staleness']), heterogeneity, configs: Object.fromEntries(
      configs.map((c) => [c, allConfigs[c].spec])), repeats, warmup: Number(args.warmup),
    results, ratios, ratio_detail: ratioDetail,
  }, null, 2));
  return ratioDetail;
}

const results = [];
let ratioDetail = {};
for (let r = 0; r < Number(args.repeats); r++) {
  for (const config of configs) {
    process.stderr.write(`async bench: repeat ${r + 1}, ${config}: ${clients} leaves, budget ${budget} reports…\n`);
    const result = await runOnce(config, seed0 + r);
    result.repeat = r + 1;
    results.push(result);
    process.stderr.write(`  time to ${target}: ${result.time_to_target_s?.toFixed(1) ?? 'never'} s, ` +
      `final ${(100 * result.final_accuracy).toFixed(2)}%, lost ${result.lost}, double-counted ${result.double_counted}\n`);
  }
  ratioDetail = summarize(results, r + 1);
}
evalData.delete();

const line = (cells, widths) => cells.map((c, i) => String(c).padStart(widths[i])).join('  ');
const widths = [13, 6, 6, 7, 10, 9, 7, 6, 7, 7, 7, 7];
console.log(line(['config', 'repeat', 'models', 'reports', `to ${target} s`, 'final', 'wall s', 'lost',
  'at end', 'stale', 'churned', 'double'], widths));
for (const r of results) {
  console.log(line([r.config, r.repeat, r.models, r.reports, r.time_to_target_s?.toFixed(1) ?? 'never',
    `${(100 * r.final_accuracy).toFixed(2)}%`, r.wall_s.toFixed(1), r.lost, r.refused_at_end, r.stale_409,
    r.churned, r.double_counted], widths));
}
for (const [k, v] of Object.entries(ratioDetail)) {
  const f = (x) => (x == null ? 'null' : x.toFixed(3));
  console.log(`${k.padEnd(40)} median ${f(v.median)} (min ${f(v.min)}, max ${f(v.max)})`);
}
console.log('targets: sync_over_buffered_time_to_95 >= 2.0, buffered_over_sync_final_accuracy >= 0.99');
console.log(`wrote ${path.relative(root, args.out)}`);
if (results.some((r) => r.double_counted !== 0 || r.rounds_with_mismatch !== 0)) {
  console.error('async bench: a report was double-counted or lost after its 201');
  process.exitCode = 1;
}
