// scripts/bench.sh train — local training throughput of every engine on the same data:
// native C++ (fedleaf_train_bench), fedleaf wasm SIMD and baseline under Node, and TensorFlow.js
// in Node (@tensorflow/tfjs with its wasm and cpu backends), written as a TF.js user would.
//
//   node tests/bench/train/train_bench.mjs --native BIN --fixture FILE --out FILE.json
//        [--reps 5] [--workloads a,b,c] [--tfjs-seconds 1]
//
// The driver generates each workload's data deterministically, writes it as a safetensors file
// (CSR offsets / ids / labels, the plan in the metadata) and runs every engine in its own process
// on that file (so peak RSS is per engine). Every engine starts from the same model: fedleaf's
// initialize_model(plan, 1); TF.js gets those weights and the same hashed ids (SpamAssassin is
// featurized once, by fedleaf's featurizer, for all engines).
//
// Timed: the per-batch training loop only (no model decode / update encode, no dataset build),
// after one warm-up run; median of --reps repetitions. fedleaf engines train the whole run (all
// epochs) per repetition; TF.js is time-boxed: each repetition trains consecutive batches for
// about --tfjs-seconds, and examples/s is extrapolated from those batches.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const bindings = path.join(root, 'js_bindings');
// npm packages (TF.js) are installed in js_bindings/node_modules.
const requireFromBindings = createRequire(path.join(bindings, 'package.json'));
const importPackage = (name) => import(pathToFileURL(requireFromBindings.resolve(name)).href);

// ---------------------------------------------------------------------------------------------
// Workloads

const SGD = { type: 'sgd', learning_rate: 0.1 };

function planOf({ layers, loss, epochs, updates, features, optimizer = SGD }) {
  const plan = {
    model: { inputs: { tokens: 'sparse_ids' }, layers, loss },
    train: { optimizer, epochs, batch_size: 32, shuffle: true, shuffle_seed: 7 },
    updates,
  };
  if (features) plan.features = features;
  return plan;
}

const WORKLOADS = {
  a: {
    name: 'a_sparse_logreg',
    describe: 'sparse logistic regression, 2^20 hashed features, ~40 ids/example, 20k examples, ' +
      'batch 32, 3 epochs, sgd',
    plan: planOf({
      layers: [{ type: 'embedding_bag', name: 'lr', vocab: 1 << 20, dim: 1, combiner: 'sum',
        initializer: 'zeros' }],
      loss: 'sigmoid_cross_entropy',
      epochs: 3,
      updates: { 'lr/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors' } },
    }),
    generate: () => synthetic({ seed: 1, examples: 20000, vocab: 1 << 20, meanIds: 40, classes: 2 }),
  },
  b: {
    name: 'b_embedding_bag',
    describe: 'embedding_bag 100k x 32 (mean, ~20 ids/example) + dense to 10 classes, 10k ' +
      'examples, batch 32, 1 epoch, sgd',
    plan: planOf({
      layers: [
        { type: 'embedding_bag', name: 'emb', vocab: 100000, dim: 32, combiner: 'mean' },
        { type: 'dense', name: 'out', units: 10 },
      ],
      loss: 'softmax_cross_entropy',
      epochs: 1,
      updates: {
        'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors' },
        'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
        'out/bias': { encoding: 'dense', aggregator: 'weighted_mean' },
      },
    }),
    generate: () => synthetic({ seed: 2, examples: 10000, vocab: 100000, meanIds: 20, classes: 10 }),
  },
  c: {
    name: 'c_spamassassin',
    describe: 'SpamAssassin train split, murmur3 hashed bag of words (2^18 buckets, binary), ' +
      'embedding_bag 262144 x 16 (sqrtn) + dense 2, batch 32, 5 epochs, adam',
    plan: planOf({
      layers: [
        { type: 'embedding_bag', name: 'emb', vocab: 262144, dim: 16, combiner: 'sqrtn' },
        { type: 'dense', name: 'out', units: 2 },
      ],
      loss: 'softmax_cross_entropy',
      epochs: 5,
      optimizer: { type: 'adam', learning_rate: 0.01 },
      updates: {
        'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors' },
        'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
        'out/bias': { encoding: 'dense', aggregator: 'weighted_mean' },
      },
      features: { hash: 'murmur3_32', num_buckets: 262144, binary: true },
    }),
  },
};

// mulberry32: a small deterministic PRNG (same data on every run and machine).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Uniform ids, meanIds/2 .. 3 meanIds/2 per example. Labels follow a planted rule so the data is
// learnable: each id votes for class hash(id) % classes; the label is the most voted class.
function synthetic({ seed, examples, vocab, meanIds, classes }) {
  const random = rng(seed);
  const offsets = new Int32Array(examples + 1);
  const idList = [];
  const labels = new Int32Array(examples);
  const votes = new Int32Array(classes);
  for (let i = 0; i < examples; i++) {
    const count = Math.floor(meanIds / 2) + Math.floor(random() * (meanIds + 1));
    votes.fill(0);
    for (let k = 0; k < count; k++) {
      const id = Math.floor(random() * vocab);
      idList.push(id);
      votes[(Math.imul(id, 2654435761) >>> 7) % classes]++;
    }
    let best = 0;
    for (let c = 1; c < classes; c++) if (votes[c] > votes[best]) best = c;
    labels[i] = best;
    offsets[i + 1] = idList.length;
  }
  return { offsets, ids: Int32Array.from(idList), labels, numFeatures: vocab };
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

async function fedleafModule(simd) {
  const { loadModule } = await import(path.join(bindings, 'src/load_module.js'));
  const { publicTensors } = await import(path.join(bindings, 'src/tensors.js'));
  const { module } = await loadModule({ simd });
  return {
    module,
    decode(bytes) {
      const { tensors, metadata } = module.decodeSafetensors(bytes);
      return { tensors: publicTensors(tensors), metadata };
    },
  };
}

function readWorkload(fedleaf, file) {
  const { tensors, metadata } = fedleaf.decode(new Uint8Array(readFileSync(file)));
  return {
    plan: metadata.plan,
    numFeatures: Number(metadata.num_features),
    offsets: tensors.offsets.data,
    ids: tensors.ids.data,
    labels: tensors.labels.data,
    weights: tensors.weights ? tensors.weights.data : new Float32Array(0),
  };
}

function median(values) {
  const v = [...values].sort((x, y) => x - y);
  const n = v.length;
  return n % 2 ? v[(n - 1) / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

function peakRss() {
  return process.resourceUsage().maxRSS * 1024;
}

// ---------------------------------------------------------------------------------------------
// Child engines: each prints one JSON line.

async function runFedleafWasm(simd, file, reps, stepsPerCall) {
  const fedleaf = await fedleafModule(simd);
  const { module } = fedleaf;
  const data = readWorkload(fedleaf, file);
  const plan = JSON.parse(data.plan);
  const dataset = module.Dataset.fromCsr(Uint32Array.from(data.offsets), Uint32Array.from(data.ids),
    data.weights, data.labels, data.numFeatures);
  const model = module.initializeModel(data.plan, 1);
  const examples = data.labels.length * plan.train.epochs;
  const rates = [];
  const setups = [];
  let loss = 0;
  for (let rep = 0; rep <= reps; rep++) { // rep 0 warms up (and lets V8 tier the code up)
    const t0 = performance.now();
    const session = module.TrainingSession.create(data.plan, model, dataset);
    const t1 = performance.now();
    while (session.step(stepsPerCall)) { /* one wasm call per stepsPerCall batches */ }
    const t2 = performance.now();
    loss = session.meanLoss();
    session.delete();
    if (rep > 0) {
      rates.push(examples / ((t2 - t1) / 1000));
      setups.push((t1 - t0) / 1000);
    }
  }
  const memory = module.HEAP8 ? module.HEAP8.buffer.byteLength : undefined;
  dataset.delete();
  return {
    engine: simd ? 'wasm_simd' : 'wasm_baseline',
    examples_per_second: median(rates),
    repetitions: rates,
    setup_seconds: median(setups),
    mean_loss: loss,
    peak_rss_bytes: peakRss(),
    wasm_memory_bytes: memory,
    steps_per_call: stepsPerCall,
  };
}

// UnsortedSegmentSum is the gradient of tf.gather (and the bag's segment sum). TF.js as shipped
// cannot use it here: the wasm backend has no such kernel, and the cpu backend's runs one mask
// over all ids per segment (O(vocab x ids) time and memory per batch: 8 GB and minutes for
// workload a). The benchmark registers this plain JS kernel for both backends and says so.
function registerUnsortedSegmentSum(tf, backendName) {
  if (tf.getKernel('UnsortedSegmentSum', backendName)) {
    tf.unregisterKernel('UnsortedSegmentSum', backendName);
  }
  tf.registerKernel({
    kernelName: 'UnsortedSegmentSum',
    backendName,
    kernelFunc: ({ inputs, backend, attrs }) => {
      const { x, segmentIds } = inputs;
      const { numSegments } = attrs;
      const rowSize = x.shape.slice(1).reduce((p, d) => p * d, 1);
      const shape = [numSegments, ...x.shape.slice(1)];
      const values = backend.readSync(x.dataId);
      const segments = backend.readSync(segmentIds.dataId);
      let out;
      let target;
      if (backendName === 'wasm') {
        out = backend.makeOutput(shape, x.dtype);
        target = backend.typedArrayFromHeap(out);
        target.fill(0);
      } else {
        target = new Float32Array(numSegments * rowSize);
      }
      for (let i = 0; i < segments.length; i++) {
        const s = segments[i];
        if (s < 0 || s >= numSegments) continue;
        for (let k = 0; k < rowSize; k++) target[s * rowSize + k] += values[i * rowSize + k];
      }
      return backendName === 'wasm' ? out : backend.makeTensorInfo(shape, x.dtype, target);
    },
  });
}

async function runTfjs(backendName, file, reps, seconds) {
  const tf = await importPackage('@tensorflow/tfjs');
  if (backendName === 'wasm') await importPackage('@tensorflow/tfjs-backend-wasm');
  await tf.setBackend(backendName);
  await tf.ready();
  registerUnsortedSegmentSum(tf, backendName);
  const fedleaf = await fedleafModule(false);
  const data = readWorkload(fedleaf, file);
  const plan = JSON.parse(data.plan);
  const initial = fedleaf.decode(fedleaf.module.initializeModel(data.plan, 1)).tensors;
  const [embSpec, denseSpec] = plan.model.layers;
  const variable = (name) => tf.variable(tf.tensor(initial[name].data, initial[name].shape));
  const table = variable(`${embSpec.name}/weight`);
  const outW = denseSpec ? variable(`${denseSpec.name}/weight`) : null;
  const outB = denseSpec ? variable(`${denseSpec.name}/bias`) : null;
  const o = plan.train.optimizer;
  const optimizer = o.type === 'adam'
    ? tf.train.adam(o.learning_rate, o.beta1 ?? 0.9, o.beta2 ?? 0.999, o.epsilon ?? 1e-7)
    : tf.train.sgd(o.learning_rate);
  const sigmoid = plan.model.loss === 'sigmoid_cross_entropy';
  const classes = denseSpec ? denseSpec.units : 1;
  const batchSize = plan.train.batch_size;
  const n = data.labels.length;

  // One batch as a TF.js user would feed a bag of ids: flat ids, their example (segment) ids
  // and a per-id factor folding in the weight and the combiner (sum, mean, sqrtn).
  function batchTensors(start) {
    const count = Math.min(batchSize, n - start);
    const begin = data.offsets[start];
    const end = data.offsets[start + count];
    const segment = new Int32Array(end - begin);
    const factor = new Float32Array(end - begin);
    for (let b = 0; b < count; b++) {
      const lo = data.offsets[start + b];
      const hi = data.offsets[start + b + 1];
      let abs = 0;
      let sq = 0;
      for (let j = lo; j < hi; j++) {
        const w = data.weights.length ? data.weights[j] : 1;
        abs += Math.abs(w);
        sq += w * w;
      }
      let c = 1;
      if (embSpec.combiner === 'mean') c = abs > 0 ? 1 / abs : 0;
      if (embSpec.combiner === 'sqrtn') c = sq > 0 ? 1 / Math.sqrt(sq) : 0;
      for (let j = lo; j < hi; j++) {
        segment[j - begin] = b;
        factor[j - begin] = (data.weights.length ? data.weights[j] : 1) * c;
      }
    }
    const labels = data.labels.subarray(start, start + count);
    return {
      count,
      ids: tf.tensor1d(data.ids.subarray(begin, end), 'int32'),
      segment: tf.tensor1d(segment, 'int32'),
      factor: tf.tensor2d(factor, [end - begin, 1]),
      labels: sigmoid
        ? tf.tensor2d(Float32Array.from(labels), [count, 1])
        : tf.tidy(() => tf.oneHot(tf.tensor1d(labels, 'int32'), classes)),
    };
  }

  function trainBatch(start) {
    const t = batchTensors(start);
    const loss = optimizer.minimize(() => {
      const bag = tf.unsortedSegmentSum(tf.gather(table, t.ids).mul(t.factor), t.segment, t.count);
      const logits = outW ? bag.matMul(outW).add(outB) : bag;
      return sigmoid
        ? tf.losses.sigmoidCrossEntropy(t.labels, logits)
        : tf.losses.softmaxCrossEntropy(t.labels, logits);
    }, true);
    const value = loss.dataSync()[0];
    tf.dispose([loss, t.ids, t.segment, t.factor, t.labels]);
    return { count: t.count, loss: value };
  }

  let next = 0;
  const nextStart = () => {
    const s = next;
    next = next + batchSize >= n ? 0 : next + batchSize;
    return s;
  };
  for (let i = 0; i < 3; i++) trainBatch(nextStart()); // warm-up
  const rates = [];
  const batches = [];
  let lossSum = 0;
  let lossCount = 0;
  for (let rep = 0; rep < reps; rep++) {
    let examples = 0;
    let count = 0;
    const t0 = performance.now();
    while (count < 2 || performance.now() - t0 < seconds * 1000) {
      const r = trainBatch(nextStart());
      examples += r.count;
      lossSum += r.loss;
      lossCount++;
      count++;
    }
    rates.push(examples / ((performance.now() - t0) / 1000));
    batches.push(count);
  }
  return {
    engine: `tfjs_${backendName}`,
    examples_per_second: median(rates),
    repetitions: rates,
    batches_per_repetition: batches,
    mean_batch_loss: lossSum / lossCount,
    peak_rss_bytes: peakRss(),
    tensors_in_memory: tf.memory().numTensors,
    note: 'time-boxed and extrapolated; JS UnsortedSegmentSum kernel registered by the benchmark ' +
      (backendName === 'wasm' ? '(missing in tfjs-backend-wasm)' : '(the shipped one is O(vocab x ids))'),
  };
}

// ---------------------------------------------------------------------------------------------
// Driver

function parseArgs(argv) {
  const options = { reps: 5, workloads: 'a,b,c', tfjsSeconds: 1, stepsPerCall: 8 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    options[key] = argv[i + 1];
  }
  for (const key of ['native', 'fixture', 'out', 'file']) {
    if (options[key] !== undefined) options[key] = path.resolve(options[key]);
  }
  options.reps = Number(options.reps);
  options.tfjsSeconds = Number(options.tfjsSeconds);
  options.stepsPerCall = Number(options.stepsPerCall);
  return options;
}

function runChild(command, args) {
  const r = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 1 << 24, cwd: bindings });
  if (r.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (${r.status}):\n${r.stderr}`);
  }
  const line = r.stdout.trim().split('\n').filter((l) => l.startsWith('{')).pop();
  return JSON.parse(line);
}

function csrFile(executor, dir, workload, data) {
  const file = path.join(dir, `${workload.name}.safetensors`);
  const bytes = executor.encodeSafetensors({
    offsets: { dtype: 'I32', shape: [data.offsets.length], data: data.offsets },
    ids: { dtype: 'I32', shape: [data.ids.length], data: data.ids },
    labels: { dtype: 'I32', shape: [data.labels.length], data: data.labels },
  }, { plan: JSON.stringify(workload.plan), num_features: String(data.numFeatures), workload: workload.name });
  writeFileSync(file, bytes);
  return file;
}

function bytesText(b) {
  if (b === undefined || b === null) return '-';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let u = 0;
  while (b >= 1024 && u < units.length - 1) { b /= 1024; u++; }
  return `${b.toFixed(b >= 100 ? 0 : 1)} ${units[u]}`;
}

function rateText(r) {
  if (r >= 1e6) return `${(r / 1e6).toFixed(2)} M`;
  if (r >= 1e3) return `${(r / 1e3).toFixed(1)} k`;
  return r.toFixed(1);
}

async function main(options) {
  const workDir = path.join(path.dirname(options.out), 'train');
  mkdirSync(workDir, { recursive: true });
  const fedleaf = await fedleafModule(false);
  const { createExecutor } = await import(path.join(bindings, 'src/index.js'));
  const executor = await createExecutor({ simd: false });

  const results = [];
  const ratios = {};
  const self = fileURLToPath(import.meta.url);
  for (const key of options.workloads.split(',')) {
    const workload = WORKLOADS[key];
    let file;
    if (key === 'c') {
      file = path.join(workDir, `${workload.name}.safetensors`);
      runChild(options.native, ['featurize', options.fixture, JSON.stringify(workload.plan), file]);
    } else {
      file = csrFile(executor, workDir, workload, workload.generate());
    }
    const data = readWorkload(fedleaf, file);
    const examples = data.labels.length;
    const plan = workload.plan;
    const parameters = plan.model.layers.reduce((sum, l) => {
      if (l.type === 'embedding_bag') return sum + l.vocab * l.dim;
      return sum;
    }, 0) + (plan.model.layers[1] ? (plan.model.layers[0].dim + 1) * plan.model.layers[1].units : 0);
    const dataBytes = 4 * (data.offsets.length + data.ids.length + data.labels.length + data.weights.length);
    const densified = 4 * (examples * data.numFeatures + parameters);
    console.error(`workload ${workload.name}: ${examples} examples, ${data.ids.length} ids — ${workload.describe}`);

    const engines = [
      ['native', () => runChild(options.native, ['run', file, String(options.reps)])],
      ['wasm_simd', () => runChild(process.execPath, [self, '--child', 'wasm_simd', '--file', file, '--reps', String(options.reps), '--steps-per-call', String(options.stepsPerCall)])],
      ['wasm_baseline', () => runChild(process.execPath, [self, '--child', 'wasm_baseline', '--file', file, '--reps', String(options.reps), '--steps-per-call', String(options.stepsPerCall)])],
      ['tfjs_wasm', () => runChild(process.execPath, [self, '--child', 'tfjs_wasm', '--file', file, '--reps', String(options.reps), '--tfjs-seconds', String(options.tfjsSeconds)])],
      ['tfjs_cpu', () => runChild(process.execPath, [self, '--child', 'tfjs_cpu', '--file', file, '--reps', String(options.reps), '--tfjs-seconds', String(options.tfjsSeconds)])],
    ];
    const byEngine = {};
    for (const [name, run] of engines) {
      console.error(`  ${name} ...`);
      const r = run();
      byEngine[name] = r;
      results.push({
        workload: workload.name, ...r,
        examples, parameters, parameter_bytes: 4 * parameters, data_bytes: dataBytes, densified_bytes: densified,
      });
    }
    const native = byEngine.native.examples_per_second;
    const tfjsBest = Math.max(byEngine.tfjs_wasm.examples_per_second, byEngine.tfjs_cpu.examples_per_second);
    for (const r of results.filter((x) => x.workload === workload.name)) {
      r.vs_native = r.examples_per_second / native;
      r.vs_tfjs_best = r.examples_per_second / tfjsBest;
    }
    ratios[`${workload.name}.wasm_simd_vs_native`] = byEngine.wasm_simd.examples_per_second / native;
    ratios[`${workload.name}.wasm_simd_vs_tfjs_best`] = byEngine.wasm_simd.examples_per_second / tfjsBest;
    ratios[`${workload.name}.wasm_baseline_vs_native`] = byEngine.wasm_baseline.examples_per_second / native;
  }

  const header = ['workload', 'engine', 'examples/s', 'x native', 'x best TF.js', 'peak RSS',
    'wasm memory', 'params+data', 'densified', 'mean loss'];
  const rows = results.map((r) => [
    r.workload, r.engine, rateText(r.examples_per_second), r.vs_native.toFixed(3),
    r.vs_tfjs_best.toFixed(1), bytesText(r.peak_rss_bytes), bytesText(r.wasm_memory_bytes),
    bytesText(r.parameter_bytes + r.data_bytes), bytesText(r.densified_bytes),
    (r.mean_loss ?? r.mean_batch_loss).toPrecision(6),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  console.log('');
  for (const [k, v] of Object.entries(ratios)) console.log(`${k.padEnd(44)} ${v.toFixed(3)}`);
  console.log(`
Timed: the per-batch training loop (fedleaf: TrainingSession steps of a whole run, ${options.stepsPerCall} batches per wasm
call; TF.js: optimizer.minimize per batch incl. building the batch tensors), after a warm-up; median of ${options.reps}
repetitions. Not timed: model decode / update encode, dataset construction. TF.js is time-boxed (~${options.tfjsSeconds} s
of consecutive batches per repetition) and its examples/s extrapolated from those batches; its wasm backend
(SIMD, single thread) has no UnsortedSegmentSum kernel (gradient of tf.gather) and the cpu backend's is O(vocab x ids)
per batch, so the benchmark registers one plain JS kernel for both backends (said again in each result's "note").
TF.js's optimizers update the whole embedding table every batch (dense gradients of tf.gather), as its users get.
Same model and data in every engine: fedleaf's initial model (seed 1) and fedleaf's hashed ids. Mean loss: fedleaf
engines over the whole run (equal across them when the builds agree bit for bit); TF.js over the batches it ran.
peak RSS is per process (Node's own ~40-50 MB included for wasm/TF.js); "wasm memory" is the fedleaf module's linear
memory; "densified" = examples x features x 4 B (dense inputs) + parameters x 4 B (dense gradients).`);
  writeFileSync(options.out, `${JSON.stringify({ results, ratios }, null, 2)}\n`);
  console.log(`wrote ${options.out}`);
}

const argv = process.argv.slice(2);
if (argv[0] === '--child') {
  const engine = argv[1];
  const options = parseArgs(argv.slice(2));
  let result;
  if (engine === 'wasm_simd' || engine === 'wasm_baseline') {
    result = await runFedleafWasm(engine === 'wasm_simd', options.file, options.reps, options.stepsPerCall);
  } else {
    result = await runTfjs(engine.replace('tfjs_', ''), options.file, options.reps, options.tfjsSeconds);
  }
  console.log(JSON.stringify(result));
} else {
  await main(parseArgs(argv));
}
