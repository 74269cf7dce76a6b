// The federated spam-filter demo, driven against a running fedleaf-server (scripts/demo.sh starts
// one): creates a population for a plan — by default scripts/demo/spam_wide_deep_plan.json, a
// wide & deep model over each email's fields as a record (spamAssassinEmailRecord: body and
// subject tokens, sender domain and header categories, numeric features, a wide part on the
// sender × subject-token cross); --plan FILE runs another, records-based when its model inputs
// carry "features", text-based otherwise (scripts/demo/spam_plan.json, the single-input
// bag-of-words plan; scripts/demo/spam_plan_f32.json, the same uncompressed) — runs N Node.js
// leaves in worker threads on SpamAssassin shards, and prints one line per closed round with the
// eval accuracy of the round's new model as GET .../model sends it (F16 where the plan asks) on the
// held-out split (evaluated here, in wasm, on every eval email), the bytes the leaves downloaded
// and uploaded (as sent: compressed where the plan asks) and what dense F32 updates would have
// weighed.
//
//   node scripts/demo/run_demo.mjs --server URL --admin-token-file F [--clients 16] [--rounds 20]
//        [--iid] [--prefetch 1] [--population spam-demo] [--plan FILE] [--json OUT] [--link-file OUT]
//        [--server-optimizer JSON] [--mode synchronous|buffered] [--buffer-size K]
//        [--slow-fraction F --slow-factor X] [--churn P] [--churn-away A] [--seed N]
//        [--privacy EPS [--delta D] [--clip-norm C]]
// --server-optimizer is the population spec's "server_optimizer" (default FedAvg), e.g.
// '{"type": "adam", "learning_rate": 0.01}' for FedAdam (src/server/README.md).
// --mode buffered runs a buffered population (FedBuff, src/server/README.md): --rounds versions,
// each published after --buffer-size reports (default ⌈3/4⌉ of the leaves: with half, each version
// can be the first half of a non-IID population to report, and the models swing — docs/design.md,
// "Heterogeneous leaves and scripts/bench.sh async"), every leaf's task out at
// once (concurrency = --clients), max_staleness 10, staleness weight 1/(1+s)^0.5; each table
// row is then one version.
// Heterogeneous leaves (js_bindings/src/node/leaf_speeds.js): --slow-fraction 0.3 --slow-factor 5
// makes 30% of the leaves 5× slower (after training a task for ms, a slow leaf waits
// (5 − 1) × ms before uploading); --churn 0.1 makes each task, with probability 0.1, one its leaf
// leaves mid-task: it is away --churn-away (default 1) × its task time and never uploads (the
// lease expires — the population's lease_s, 120 s here — and the server hands the task out
// again). --seed (default 1) picks the slow leaves and every churn decision, reproducibly.
// --privacy EPS makes the population private (docs/design.md "Privacy"): each leaf is a device
// that enrolls once, every device takes part in every round (min_separation 0), the noise
// multiplier is the least that keeps ε ≤ EPS at δ (--delta, default 1e-5) after --rounds rounds
// (planPrivacy, the server's accountant), so the run ends with its budget spent: the server
// refuses settings that would pass EPS, and never opens a round past it. Each table row then
// shows ε spent. (Without "rounds" the server would run the most rounds EPS allows, but the 16
// devices would have used their max_participations = --rounds before that.)
// With 16 devices the noise that keeps ε small swamps the model (every coordinate of every row is
// noised, σ·C/16 per round): the table shows the mechanism, scripts/bench.sh privacy the
// population size a private model needs.
// Exits 1 when a leaf fails, the run stalls, or the population does not finish.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

import { createExecutor, ProtocolClient } from '../../js_bindings/src/index.js';
import { EmailLeafData } from '../../js_bindings/src/datasets/email_leaf_data.js';
import { loadSpamAssassin } from '../../js_bindings/src/datasets/spamassassin.js';
import { planTakesRecords } from '../../js_bindings/src/leaf/leaf_data.js';
import { simulateLeaves } from '../../js_bindings/src/node/simulate.js';
import { leafSpeeds } from '../../js_bindings/src/node/leaf_speeds.js';
import { LeafProgress } from '../../js_bindings/src/node/leaf_progress.js';
import { formatBytes } from '../../js_bindings/src/leaf/format_bytes.js';
import { demoPrivacy } from './demo_privacy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: {
    server: { type: 'string' },
    'admin-token-file': { type: 'string' },
    clients: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '20' },
    iid: { type: 'boolean', default: false },
    prefetch: { type: 'string', default: '1' },
    population: { type: 'string' },
    plan: { type: 'string', default: path.join(here, 'spam_wide_deep_plan.json') },
    json: { type: 'string' },
    'stall-s': { type: 'string', default: '300' },
    'link-file': { type: 'string' },
    'server-optimizer': { type: 'string' },
    mode: { type: 'string', default: 'synchronous' },
    'buffer-size': { type: 'string' },
    'slow-fraction': { type: 'string', default: '0' },
    'slow-factor': { type: 'string', default: '1' },
    churn: { type: 'string', default: '0' },
    'churn-away': { type: 'string', default: '1' },
    seed: { type: 'string', default: '1' },
    privacy: { type: 'string' },
    delta: { type: 'string', default: '1e-5' },
    'clip-norm': { type: 'string', default: '1' },
  },
});
const clients = Number(args.clients);
const rounds = Number(args.rounds);
const server = args.server.replace(/\/$/, '');
const adminToken = readFileSync(args['admin-token-file'], 'utf8').trim();
const plan = JSON.parse(readFileSync(args.plan, 'utf8'));
const client = new ProtocolClient({ server, token: adminToken });
const serverOptimizer = args['server-optimizer'] ? JSON.parse(args['server-optimizer']) : undefined;
if (!['synchronous', 'buffered'].includes(args.mode)) {
  throw new Error(`--mode: expected synchronous or buffered, got ${args.mode}`);
}
const buffered = args.mode === 'buffered';
const speedOptions = {
  slow: { fraction: Number(args['slow-fraction']), factor: Number(args['slow-factor']) },
  churn: { probability: Number(args.churn), awayFactor: Number(args['churn-away']) },
  seed: Number(args.seed),
};
leafSpeeds({ leaves: clients, ...speedOptions });  // a bad flag throws here, before the population exists
const bufferSize = Number(args['buffer-size'] ?? Math.max(1, Math.ceil((3 * clients) / 4)));
if (args.privacy !== undefined && buffered) throw new Error('--privacy: a buffered population cannot be private');
const privacy = args.privacy === undefined ? undefined : await demoPrivacy({
  maxEpsilon: Number(args.privacy), delta: Number(args.delta), clipNorm: Number(args['clip-norm']), clients, rounds });

// ε spent once `rounds` rounds were released, from the status's accountant (privacy section).
function epsilonAfter(status, rounds) {
  const epsilon = status.privacy?.epsilon_by_round?.[rounds - 1];
  return Number.isFinite(epsilon) ? epsilon.toFixed(3) : '–';
}

async function modelBytes(population, round) {
  return (await client.downloadModel(client.modelUrl(population, round), { token: false })).bytes;
}

const executor = await createExecutor();
const records = await loadSpamAssassin();
const evalRecords = records.filter((r) => r.split === 'eval');
const evalLabels = evalRecords.map((r) => r.label);
const takesRecords = planTakesRecords(plan);
// The eval split held as the leaves hold their shards: one record per email, text or records.
const evalSource = new EmailLeafData(executor, { train: { texts: evalRecords.map((r) => r.text), labels: evalLabels } });
const evalData = evalSource.datasetFor({ plan });

const created = await client.createPopulation({
  ...(args.population ? { id: args.population } : {}),
  plan,
  seed: 1,
  rounds,
  ...(privacy ? { privacy } : {}),
  ...(buffered
    ? { mode: 'buffered', buffer_size: bufferSize, concurrency: clients, max_staleness: 10 }
    : { clients_per_round: clients, min_reports: Math.max(1, Math.ceil(clients / 2)) }),
  round_deadline_s: 300,
  lease_s: 120,
  ...(serverOptimizer ? { server_optimizer: serverOptimizer } : {}),
});
const population = created.id;
const link = `${server}/?${new URLSearchParams({ population, token: created.client_token })}`;
if (args['link-file']) writeFileSync(args['link-file'], `${link}\n`);

// What a dense update of every tensor in "updates" would weigh (F32 values), for comparison.
const initialModel = await modelBytes(population, 0);
const initialModelBytes = initialModel.length;
const initial = executor.decodeSafetensors(initialModel).tensors;
const denseUpdateBytes = Object.keys(plan.updates)
  .reduce((n, name) => n + initial[name].data.byteLength, 0);
const baseline = executor.evaluate(plan, await modelBytes(population, 0), evalData);

const split = args.iid ? 'IID shards' : 'non-IID shards (sorted by corpus group and sender domain)';
const optimizer = (await client.status(population)).server_optimizer;
console.log(`plan ${path.relative(process.cwd(), path.resolve(args.plan))} ` +
  `(${takesRecords ? `records: ${Object.keys(plan.model.inputs).length} inputs` : 'text'})`);
const mode = buffered ? `buffered (K ${bufferSize}, versions as rounds)` : 'synchronous';
console.log(`population ${population}: ${clients} leaves, ${rounds} rounds, ${mode}, ${split}; ` +
  `server optimizer ${JSON.stringify(optimizer)}; ` +
  `eval split ${evalData.size} emails; dense update would be ${formatBytes(denseUpdateBytes)} per report`);
console.log(`join from a browser tab: ${link}`);
if (Number(args['slow-fraction']) > 0 || Number(args.churn) > 0) {
  console.log(`heterogeneous leaves (seed ${args.seed}): ${args['slow-fraction']} of them ${args['slow-factor']}× slower, ` +
    `churn ${args.churn} per task (away ${args['churn-away']}× the task time)`);
}
console.log(`round 0 (initial model): eval accuracy ${(100 * baseline.accuracy).toFixed(2)}%`);
const header = ['round', 'reports', 'examples', 'train loss', 'eval acc', 'eval loss',
  'downloaded', 'uploaded (sparse)', 'dense equiv.', 'ratio', 'wall s', ...(privacy ? ['ε spent'] : [])];
const widths = [5, 7, 8, 10, 8, 9, 10, 17, 12, 7, 7, 8];
if (privacy) {
  console.log(`private population: noise multiplier ${privacy.noise_multiplier.toFixed(3)}, clip norm ` +
    `${privacy.clip_norm}, δ ${privacy.delta}, max ε ${privacy.max_epsilon}; each leaf enrolls as a device`);
}
const row = (cells) => cells.map((c, i) => String(c).padStart(widths[i])).join('  ');
console.log(row(header));

const progress = new LeafProgress(clients, process.stderr);
// Model bytes the leaves downloaded per round (model:select answers or full models; 0 when cached).
const roundOfTask = new Map();
const downloadedBytes = new Map();
let leafFailure;
const run = simulateLeaves({
  server, population, token: created.client_token, clients, nonIid: !args.iid,
  prefetch: Number(args.prefetch), records,
  ...speedOptions,
  onEvent: (index, event) => {
    if (event.type === 'claimed') roundOfTask.set(event.taskId, Number(event.round));
    if (event.type === 'downloaded') {
      const round = roundOfTask.get(event.taskId);
      downloadedBytes.set(round, (downloadedBytes.get(round) ?? 0) + event.bytes);
    }
    progress.update(index, event);
  },
});
run.done.catch((error) => { leafFailure = error; });
process.on('SIGINT', () => { run.stop(); process.exit(130); });

const results = [];
let printed = 0;
let lastChange = Date.now();
let finished = false;
while (!finished) {
  await new Promise((r) => setTimeout(r, 250));
  if (leafFailure) break;
  const status = await client.status(population);
  // Train rounds only: the server keeps one more, evaluation-only round after the last one.
  const history = (status.history ?? []).filter((h) => h.closed_at != null && h.round < status.rounds);
  while (printed < history.length) {
    const h = history[printed];
    const model = await modelBytes(population, h.round + 1);
    const ev = executor.evaluate(plan, model, evalData);
    const wall = h.closed_at - h.started_at;
    const dense = denseUpdateBytes * h.reports;
    const downloaded = downloadedBytes.get(h.round) ?? 0;
    results.push({ round: h.round + 1, reports: h.reports, examples: h.examples,
      train_loss: h.mean_train_loss, eval_accuracy: ev.accuracy, eval_loss: ev.loss, eval_auc: ev.auc,
      download_bytes: downloaded, upload_bytes: h.upload_bytes, dense_bytes: dense, wall_s: wall });
    if (process.stderr.isTTY) process.stderr.write('\r\x1b[2K');
    console.log(row([h.round + 1, h.reports, h.examples, Number(h.mean_train_loss).toFixed(4),
      `${(100 * ev.accuracy).toFixed(2)}%`, ev.loss.toFixed(4), formatBytes(downloaded), formatBytes(h.upload_bytes),
      formatBytes(dense), `${(dense / h.upload_bytes).toFixed(1)}x`, wall.toFixed(2),
      ...(privacy ? [epsilonAfter(status, h.round + 1)] : [])]));
    printed += 1;
    lastChange = Date.now();
  }
  progress.render();
  finished = status.state === 'finished';
  if (Date.now() - lastChange > Number(args['stall-s']) * 1000) {
    leafFailure = new Error(`no round closed for ${args['stall-s']} s`);
  }
}
run.stop();
await run.done.catch(() => {});
if (process.stderr.isTTY) process.stderr.write('\r\x1b[2K');
if (leafFailure) {
  console.error(`demo: failed: ${leafFailure.message}`);
  process.exit(1);
}
if (privacy) {
  const status = await client.status(population);
  console.log(`privacy: ${status.privacy?.guarantee ?? '(no privacy section in the status)'}` +
    (status.finish_reason ? ` The population finished: ${status.finish_reason}.` : ''));
}
const last = results.at(-1);
console.log(`final eval accuracy ${(100 * last.eval_accuracy).toFixed(2)}% after ${results.length} rounds ` +
  `(${clients} leaves, ${args.iid ? 'IID' : 'non-IID'}); sparse uploads were ` +
  `${(results.reduce((n, r) => n + r.dense_bytes, 0) / results.reduce((n, r) => n + r.upload_bytes, 0)).toFixed(1)}x ` +
  'smaller than dense ones; leaves downloaded ' +
  `${formatBytes(results.reduce((n, r) => n + r.download_bytes, 0))} of models ` +
  `(${formatBytes(initialModelBytes)} per full model)`);
if (args.json) {
  mkdirSync(path.dirname(args.json), { recursive: true });
  writeFileSync(args.json, JSON.stringify({ population, plan: path.relative(process.cwd(), path.resolve(args.plan)),
    records: takesRecords, clients, rounds, mode: args.mode, iid: args.iid, initial_model_bytes: initialModelBytes,
    dense_update_bytes: denseUpdateBytes, server_optimizer: optimizer, results }, null, 2));
}
evalSource.delete();
