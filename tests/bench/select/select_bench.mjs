// scripts/bench.sh select — what model:select saves one leaf: a 2^20 × 32 embedding model
// (+ dense 2), one leaf whose data touch ~2,000 distinct ids, downloading the full model or only
// its rows, against a fresh fedleaf-server. Per run: bytes downloaded, time from claim to the
// model in hand, training time (executor.runTask), leaf peak memory.
//
//   node tests/bench/select/select_bench.mjs [--rounds 5] [--warmup 1] [--out build/bench/select.json]
//
// Method: two populations with the same plan and seed, one with "download": "full" for
// emb/weight, one with "select". Each variant is its own long-lived Node process (so peak RSS
// is per variant) that creates its executor and dataset once, then runs one task per "run"
// command (runLeaf, maxTasks 1). After --warmup runs of each, --rounds rounds alternate the
// variants A B, B A, ... Memory: "peak RSS" is the process high-water mark; "task memory" is
// that high-water mark minus the one of the started leaf, measured before the first task: Node,
// the wasm module, the dataset, and the process's one-off warm-up — V8 optimizing the training
// code (its compiler takes ~30 MB while it runs, once per process) and loading fetch (~10 MB) —
// done by training the same layers on a small model and one request to the server, the same in
// both variants: what a task costs the leaf. "cold task memory" counts that warm-up inside the
// first task instead (a leaf's very first task). Ratios: medians over rounds;
// memory_full_over_select compares task memory, cold_memory_full_over_select cold task memory.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');

const VOCAB = 1 << 20;
const DIM = 32;
const POOL = 2000;  // distinct ids the leaf's data draw from

function planFor(download) {
  return {
    model: {
      inputs: { tokens: 'sparse_ids' },
      layers: [{ type: 'embedding_bag', name: 'emb', input: 'tokens', vocab: VOCAB, dim: DIM, combiner: 'sqrtn' },
        { type: 'dense', name: 'out', units: 2 }],
      loss: 'softmax_cross_entropy',
    },
    train: { optimizer: { type: 'adam', learning_rate: 0.03 }, epochs: 1, batch_size: 32 },
    updates: {
      'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors', download },
      'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
      'out/bias': { encoding: 'dense', aggregator: 'weighted_mean' },
    },
  };
}

// 2,000 examples of ~20 ids drawn from a fixed pool of POOL ids spread over the vocabulary.
function leafData() {
  let state = 12345;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const pool = Array.from({ length: POOL }, () => Math.floor(next() * VOCAB));
  const offsets = [0];
  const ids = [];
  const labels = [];
  for (let i = 0; i < 2000; i++) {
    const label = next() < 0.5 ? 0 : 1;
    for (let k = 0; k < 20; k++) ids.push(pool[(Math.floor(next() * POOL / 2) * 2 + label) % POOL]);
    offsets.push(ids.length);
    labels.push(label);
  }
  for (const id of pool) ids.push(id);  // every pool id at least once: exactly the pool's rows
  offsets[offsets.length - 1] = ids.length;
  return { offsets, ids, labels, numFeatures: VOCAB };
}

// ---------------------------------------------------------------------------------------------
// Child: one variant's leaf.

// The process's one-off start: the training code optimized by V8 (the same layers and optimizer
// on a 4,096-row model) and fetch loaded (a request to the server).
async function warmUp(executor, server) {
  const small = planFor('full');
  small.model.layers[0].vocab = 4096;
  const data = leafData();
  const dataset = executor.datasetFromCsr({ ...data, ids: data.ids.map((id) => id % 4096), numFeatures: 4096 });
  try {
    await executor.train({ ...small, train: { ...small.train, epochs: 3 } }, executor.initializeModel(small, 1), dataset);
  } finally {
    dataset.delete();
  }
  await (await fetch(new URL('/metrics', server))).arrayBuffer();
  await (await fetch(new URL('/metrics', server), { method: 'POST', body: new Uint8Array(8) })).arrayBuffer();
}

async function child({ server, population, token }) {
  const { createExecutor, runLeaf } = await import(path.join(root, 'js_bindings/src/index.js'));
  const executor = await createExecutor();
  const dataset = executor.datasetFromCsr(leafData());
  const coldRss = process.resourceUsage().maxRSS * 1024;
  await warmUp(executor, server);
  const idleRss = process.resourceUsage().maxRSS * 1024;
  const idleWasm = executor.wasmMemoryBytes;
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line !== 'run') break;
    const result = { downloaded_bytes: 0, distinct_ids: dataset.numDistinctIds };
    let claimedAt = 0;
    await runLeaf({
      server, population, token, dataset, executor, maxTasks: 1, prefetch: 0,
      onEvent: (e) => {
        if (e.type === 'claimed') claimedAt = performance.now();
        if (e.type === 'downloaded') {
          result.downloaded_bytes += e.bytes;
          result.download_ms = performance.now() - claimedAt;
          result.select = e.select;
        }
        if (e.type === 'trained') result.train_ms = e.ms;
        if (e.type === 'uploaded') result.uploaded_bytes = e.bytes;
      },
    });
    const peakRss = process.resourceUsage().maxRSS * 1024;
    Object.assign(result, {
      peak_rss_bytes: peakRss,
      task_rss_bytes: peakRss - idleRss,
      cold_task_rss_bytes: peakRss - coldRss,
      wasm_memory_bytes: executor.wasmMemoryBytes,
      task_wasm_bytes: executor.wasmMemoryBytes - idleWasm,
      idle_rss_bytes: idleRss,
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
  }
  dataset.delete();
}

// ---------------------------------------------------------------------------------------------
// Driver

class Variant {
  constructor(name, env) {
    this.name = name;
    this.proc = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child'], {
      env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.lines = createInterface({ input: this.proc.stdout })[Symbol.asyncIterator]();
  }
  async run() {
    this.proc.stdin.write('run\n');
    const { value, done } = await this.lines.next();
    if (done) throw new Error(`${this.name} leaf exited`);
    return { variant: this.name, ...JSON.parse(value) };
  }
  stop() {
    this.proc.stdin.end();
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2 : NaN;
};
const spread = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

async function main(args) {
  const { startServer, adminClient } = await import(path.join(root, 'tests/server/server_harness.mjs'));
  const rounds = Number(args.rounds);
  const warmup = Number(args.warmup);
  const server = await startServer();
  const variants = {};
  try {
    for (const download of ['full', 'select']) {
      const created = await adminClient(server.url).createPopulation(
        { plan: planFor(download), seed: 1, rounds: rounds + warmup + 1, clients_per_round: 1, lease_s: 600 });
      variants[download] = new Variant(download, {
        FEDLEAF_SELECT_BENCH: JSON.stringify({ server: server.url, population: created.id, token: created.client_token }),
      });
    }
    const order = [variants.full, variants.select];
    for (let w = 0; w < warmup; w++) for (const v of order) await v.run();
    const results = [];
    for (let r = 0; r < rounds; r++) {
      for (let turn = 0; turn < 2; turn++) results.push({ round: r + 1, ...await order[(turn + r) % 2].run() });
      process.stderr.write('.');
    }
    process.stderr.write('\n');
    for (const v of order) v.stop();

    const of = (variant, key) => results.filter((x) => x.variant === variant).map((x) => x[key]);
    const perRound = (f) => spread(Array.from({ length: rounds }, (_, r) => f(
      results.find((x) => x.round === r + 1 && x.variant === 'full'),
      results.find((x) => x.round === r + 1 && x.variant === 'select'))));
    const spreads = {
      bytes_full_over_select: perRound((f, s) => f.downloaded_bytes / s.downloaded_bytes),
      memory_full_over_select: perRound((f, s) => f.task_rss_bytes / Math.max(s.task_rss_bytes, 1)),
      cold_memory_full_over_select: perRound((f, s) => f.cold_task_rss_bytes / Math.max(s.cold_task_rss_bytes, 1)),
      peak_rss_full_over_select: perRound((f, s) => f.peak_rss_bytes / s.peak_rss_bytes),
      download_ms_full_over_select: perRound((f, s) => f.download_ms / s.download_ms),
      train_ms_full_over_select: perRound((f, s) => f.train_ms / s.train_ms),
    };
    const ratios = Object.fromEntries(Object.entries(spreads).map(([k, v]) => [k, v.median]));

    const cols = ['variant', 'downloaded', 'download ms', 'train ms', 'peak RSS', 'task memory', 'cold task', 'wasm memory',
      'uploaded'];
    const widths = [8, 12, 12, 10, 10, 12, 10, 12, 10];
    const line = (cells) => cells.map((c, i) => String(c).padStart(widths[i])).join('  ');
    console.log(`model ${VOCAB} × ${DIM} embedding + dense 2 (${mb(4 * (VOCAB * DIM + 2 * DIM + 2))}); ` +
      `leaf: ${results[0].distinct_ids} distinct ids; medians of ${rounds} interleaved rounds after ${warmup} warm-up`);
    console.log(line(cols));
    for (const name of ['full', 'select']) {
      console.log(line([name, mb(median(of(name, 'downloaded_bytes'))), median(of(name, 'download_ms')).toFixed(0),
        median(of(name, 'train_ms')).toFixed(0), mb(median(of(name, 'peak_rss_bytes'))),
        mb(median(of(name, 'task_rss_bytes'))), mb(median(of(name, 'cold_task_rss_bytes'))),
        mb(median(of(name, 'wasm_memory_bytes'))),
        mb(median(of(name, 'uploaded_bytes')))]));
    }
    for (const [k, v] of Object.entries(spreads)) {
      console.log(`${k.padEnd(32)} ${v.median.toFixed(1).padStart(8)}  (min ${v.min.toFixed(1)}, max ${v.max.toFixed(1)})`);
    }
    console.log('targets: bytes_full_over_select >= 50, memory_full_over_select >= 10 (task memory: peak RSS ' +
      'above the started leaf process — Node, wasm module, dataset, training code optimized and fetch loaded by a ' +
      'warm-up, the same in both; cold task: above the process before that warm-up, i.e. a leaf\'s first task)');
    mkdirSync(path.dirname(args.out), { recursive: true });
    writeFileSync(args.out, `${JSON.stringify({
      method: 'interleaved rounds (A B, B A, ...), one long-lived leaf process per variant, medians of per-round ratios',
      rounds, warmup, results, ratios, ratio_spreads: spreads,
    }, null, 2)}\n`);
    console.log(`wrote ${path.relative(root, args.out)}`);
  } finally {
    for (const v of Object.values(variants)) v.proc.kill();
    await server.stop();
  }
}

const { values } = parseArgs({
  options: {
    child: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    out: { type: 'string', default: path.join(root, 'build/bench/select.json') },
  },
});
if (values.child) {
  await child(JSON.parse(process.env.FEDLEAF_SELECT_BENCH));
} else {
  await main(values);
}
