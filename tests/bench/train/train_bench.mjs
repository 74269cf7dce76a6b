// scripts/bench.sh train — local training throughput of every engine on the same data:
// native C++ (fedleaf_train_bench), fedleaf wasm SIMD and baseline under Node, and TensorFlow.js
// in Node (@tensorflow/tfjs with its wasm and cpu backends), written as a TF.js user would; for
// the sparse logistic regression also a minimal reference loop in plain C++ (train_bench.cc).
//
//   node tests/bench/train/train_bench.mjs --native BIN --fixture FILE --out FILE.json
//        [--rounds 11] [--warmup 1] [--warmup-seconds 0.5] [--workloads a,b,c,d] [--min-seconds 1]
//        [--slices 5] [--steps-per-call 8] [--tfjs-rounds 3] [--tfjs-seconds 1]
//
// The driver generates each workload's data deterministically, writes it as a safetensors file
// (CSR offsets / ids / labels, the plan in the metadata) and runs every engine as its own process
// on that file (so peak RSS is per engine). Every engine starts from the same
// model: fedleaf's initialize_model(plan, 1); TF.js gets those weights and the same hashed ids
// (SpamAssassin is featurized once, by fedleaf's featurizer, for all engines).
//
// Method (ratios you can trust on a shared machine): engines are interleaved, never timed one
// after another. The driver runs --rounds rounds. A round starts a fresh process for every engine
// (starting with a different engine each round: round r starts with engine r mod E), each makes
// --warmup untimed runs of --warmup-seconds (V8 tiers the code up; caches and page tables
// settle), and then the engines take turns in --slices slices of --min-seconds / --slices each
// (A B C A B C ..., the order rotating by one each slice); an engine's run of the round is the
// sum of its slices. Two things move an engine's speed on this machine, and the method answers
// each: (1) the whole machine flips between speed levels ~1.5x apart every few seconds, both
// engines alike (on workload (c), native read ~110 k and ~165 k examples/s and wasm ~61 k and
// ~105 k, switching together), so runs a whole second or more apart compare different levels;
// slices a fraction of a second apart share the level (one round's five slice ratios agree within
// a few %). (2) A process draws a speed of its own: one wasm process ran 0.45x native in all five
// slices of its round while the rounds around it ran 0.64-0.66x; fresh processes per round make
// that draw part of the rounds' spread, and the median over rounds drops it (a long-lived process
// per engine made a whole bench one draw: two benches read 1.27 and 0.88 for the same ratio).
// Each ratio (e.g. wasm SIMD / native) is computed per round from that round's two runs, and the
// report gives the median over rounds with its spread (min–max and the interquartile range); an
// engine's examples/s is the median of its rounds. TF.js, 100x slower and needed only roughly (the
// x300 target), runs in --tfjs-rounds of the rounds, spread evenly, one time-boxed run after the
// slices; its ratios are the median over those rounds. Runs are timed with the
// engine process's CPU time (user + system; native: CLOCK_PROCESS_CPUTIME_ID, Node:
// process.cpuUsage), not wall time: on a shared machine a run of a few ms is preempted for whole
// scheduler slices, which CPU time leaves out (each run's wall time is in the JSON). In Node the
// count includes V8's helper threads (GC, compiler), which wall time would hide.
// A slice: fedleaf engines and the reference loop train whole runs (all epochs), repeated until
// they used --min-seconds / --slices of CPU, at least one run (one run of workload (a) takes
// ~15 ms, of (c) ~0.25 s); TF.js is time-boxed, training consecutive batches for about
// --tfjs-seconds, examples/s extrapolated.
// Timed: the per-batch training loop only (no model decode / update encode, no dataset build).
// The three fedleaf engines must train bit for bit alike: after the rounds each engine's last
// process trains once more and the benchmark fails unless the three updates (safetensors bytes)
// have the same digest.
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  generateWideDeep, multiInputData, tfjsGraphModel, wideDeepPlan, writeMultiInputFile,
} from './wide_deep_workload.mjs';
import { seededRandom } from '../../../js_bindings/src/node/seeded_random.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const bindings = path.join(root, 'js_bindings');
// npm packages (TF.js) are the repository's tools (package.json at the root, node_modules/).
const requireFromRoot = createRequire(path.join(root, 'package.json'));
const importPackage = (name) => import(pathToFileURL(requireFromRoot.resolve(name)).href);

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

// An embedding bag into a dense softmax layer of `classes` units, every update as a leaf sends it.
function bagClassifierPlan({ vocab, dim, combiner, classes, ...train }) {
  return planOf({
    layers: [
      { type: 'embedding_bag', name: 'emb', vocab, dim, combiner },
      { type: 'dense', name: 'out', units: classes },
    ],
    loss: 'softmax_cross_entropy',
    updates: {
      'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors' },
      'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
      'out/bias': { encoding: 'dense', aggregator: 'weighted_mean' },
    },
    ...train,
  });
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
    plan: bagClassifierPlan({ vocab: 100000, dim: 32, combiner: 'mean', classes: 10, epochs: 1 }),
    generate: () => synthetic({ seed: 2, examples: 10000, vocab: 100000, meanIds: 20, classes: 10 }),
  },
  c: {
    name: 'c_spamassassin',
    describe: 'SpamAssassin train split, murmur3 hashed bag of words (2^18 buckets, binary), ' +
      'embedding_bag 262144 x 16 (sqrtn) + dense 2, batch 32, 5 epochs, adam',
    plan: bagClassifierPlan({
      vocab: 262144, dim: 16, combiner: 'sqrtn', classes: 2, epochs: 5,
      optimizer: { type: 'adam', learning_rate: 0.01 },
      features: { hash: 'murmur3_32', num_buckets: 262144, binary: true },
    }),
  },
  d: {
    name: 'd_wide_deep',
    describe: 'wide & deep: sparse inputs history (2^20 x 16), query and title sharing one table ' +
      '(2^18 x 16), context (2^12 x 8), a crossed wide part (2^22 x 1), 8 numeric features, MLP 64-32, ' +
      'sigmoid, 50k records (Zipf categories, planted model: wide_deep_workload.mjs), batch 32, 1 epoch, adam',
    plan: wideDeepPlan(),
    generate: () => generateWideDeep({ seed: 4, examples: 50000 }),
    multiInput: true,
  },
};

// Uniform ids, meanIds/2 .. 3 meanIds/2 per example. Labels follow a planted rule so the data is
// learnable: each id votes for class hash(id) % classes; the label is the most voted class.
function synthetic({ seed, examples, vocab, meanIds, classes }) {
  const random = seededRandom(seed);
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
  const { loadModule } = await import(path.join(bindings, 'src/engine/load_module.js'));
  const { module } = await loadModule({ simd });
  return { module };
}

// A workload file read in plain JS (dtypes I32 / F32 only), never through a fedleaf module: a
// wasm engine's linear memory then holds what training needs, not the decoding of the
// benchmark's own input file.
function readSafetensors(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerSize = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerSize)));
  const tensors = {};
  for (const [name, spec] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [begin, end] = spec.data_offsets;
    const data = bytes.slice(8 + headerSize + begin, 8 + headerSize + end);
    const Type = { I32: Int32Array, F32: Float32Array }[spec.dtype];
    if (!Type) throw new Error(`workload file: tensor ${name} has dtype ${spec.dtype}`);
    tensors[name] = { data: new Type(data.buffer, 0, (end - begin) / Type.BYTES_PER_ELEMENT), shape: spec.shape };
  }
  return { tensors, metadata: header.__metadata__ ?? {} };
}

function readWorkload(file) {
  const { tensors, metadata } = readSafetensors(new Uint8Array(readFileSync(file)));
  if (metadata.inputs) return { plan: metadata.plan, ...multiInputData(tensors, metadata) };
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

// FNV-1a, 64 bits, as hex (train_bench.cc computes the same over the native result).
function fnv1a(bytes) {
  let h = 0xcbf29ce484222325n;
  const mask = (1n << 64n) - 1n;
  for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & mask;
  return h.toString(16).padStart(16, '0');
}

// CPU time (user + system) of this process since `start` (a process.cpuUsage() value), in s.
function cpuSecondsSince(start) {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1e6;
}

function peakRss() {
  return process.resourceUsage().maxRSS * 1024;
}

// A multi-input workload's input as the wasm module takes it: ids and offsets as Uint32Array views.
function asUint32(input) {
  if (input.dense) return { sparse: false, dense: input.dense, width: input.width };
  return {
    sparse: true, offsets: new Uint32Array(input.offsets.buffer), ids: new Uint32Array(input.ids.buffer),
    weights: new Float32Array(0), numFeatures: input.numFeatures,
  };
}

// ---------------------------------------------------------------------------------------------
// Child engines: each prepares once, then serves "run" and "stats" commands (one JSON line
// each), see serveChild.

async function fedleafWasmEngine(simd, file, stepsPerCall) {
  const { module } = await fedleafModule(simd);
  const wasmMemory = () => module.HEAP8.buffer.byteLength;
  // Linear memory as the engine goes (it only grows): the breakdown of "wasm memory".
  const memory = { at_start: wasmMemory() };
  const data = readWorkload(file);
  const plan = JSON.parse(data.plan);
  const dataset = data.inputs
    ? module.Dataset.fromInputs(data.inputList.map(({ name }) => ({ name, ...asUint32(data.inputs[name]) })), data.labels)
    : module.Dataset.fromCsr(new Uint32Array(data.offsets.buffer), new Uint32Array(data.ids.buffer),
      data.weights, data.labels, data.numFeatures);
  memory.after_dataset = wasmMemory();
  // The model is read from the driver's file, as a leaf holds its download: in JS, outside the
  // module's linear memory, which then holds only what training needs (its "wasm memory" column).
  const model = new Uint8Array(readFileSync(modelFileOf(file)));
  const examples = data.labels.length * plan.train.epochs;
  return {
    run(minSeconds) {
      let seconds = 0;
      let wall = 0;
      let runs = 0;
      let setup = 0;
      let loss = 0;
      do {
        const t0 = performance.now();
        const session = module.TrainingSession.create(data.plan, model, dataset);
        memory.after_session_setup ??= wasmMemory();
        const t1 = performance.now();
        const cpu = process.cpuUsage();
        while (session.step(stepsPerCall)) { /* one wasm call per stepsPerCall batches */ }
        seconds += cpuSecondsSince(cpu);
        wall += (performance.now() - t1) / 1000;
        memory.after_training ??= wasmMemory();
        setup = (t1 - t0) / 1000;
        loss = session.meanLoss();
        session.delete();
        runs++;
      } while (seconds < minSeconds);
      return {
        seconds, wall_seconds: wall, runs, examples_per_second: (examples * runs) / seconds,
        setup_seconds: setup, mean_loss: loss,
      };
    },
    digest() {
      const session = module.TrainingSession.create(data.plan, model, dataset);
      while (session.step(stepsPerCall)) { /* to the end */ }
      const result = { result_digest: fnv1a(session.result('')), mean_loss: session.meanLoss() };
      memory.after_result ??= wasmMemory();
      session.delete();
      return result;
    },
    stats: () => ({
      engine: simd ? 'wasm_simd' : 'wasm_baseline',
      peak_rss_bytes: peakRss(),
      wasm_memory_bytes: wasmMemory(),
      wasm_memory_breakdown: memory,
      steps_per_call: stepsPerCall,
    }),
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

async function tfjsEngine(backendName, file, seconds) {
  const tf = await importPackage('@tensorflow/tfjs');
  if (backendName === 'wasm') await importPackage('@tensorflow/tfjs-backend-wasm');
  await tf.setBackend(backendName);
  await tf.ready();
  registerUnsortedSegmentSum(tf, backendName);
  const data = readWorkload(file);
  const plan = JSON.parse(data.plan);
  // The model file the driver wrote (initialize_model(plan, 1)), as every engine starts from.
  const initial = readSafetensors(new Uint8Array(readFileSync(modelFileOf(file)))).tensors;
  // A chain workload (a-c): one bag layer and an optional dense output, in TF.js ops.
  function chainModel() {
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

    return trainBatch;
  }

  const batchSize = plan.train.batch_size;
  const n = data.labels.length;
  let trainBatch;
  if (data.inputs) {
    const graph = tfjsGraphModel(tf, plan, initial);
    trainBatch = (start) => graph.trainBatch(data.inputs, data.labels, start, Math.min(batchSize, n - start));
  } else {
    trainBatch = chainModel();
  }

  let next = 0;
  const nextStart = () => {
    const s = next;
    next = next + batchSize >= n ? 0 : next + batchSize;
    return s;
  };
  for (let i = 0; i < 3; i++) trainBatch(nextStart()); // first batches build the graph
  return {
    run() {
      let examples = 0;
      let count = 0;
      let lossSum = 0;
      const t0 = performance.now();
      const cpu = process.cpuUsage();
      while (count < 2 || performance.now() - t0 < seconds * 1000) {
        const r = trainBatch(nextStart());
        examples += r.count;
        lossSum += r.loss;
        count++;
      }
      const used = cpuSecondsSince(cpu);
      return {
        seconds: used, wall_seconds: (performance.now() - t0) / 1000, examples_per_second: examples / used,
        batches: count, mean_batch_loss: lossSum / count,
      };
    },
    stats: () => ({
      engine: `tfjs_${backendName}`,
      peak_rss_bytes: peakRss(),
      tensors_in_memory: tf.memory().numTensors,
      note: 'time-boxed and extrapolated; JS UnsortedSegmentSum kernel registered by the benchmark ' +
        (backendName === 'wasm' ? '(missing in tfjs-backend-wasm)' : '(the shipped one is O(vocab x ids))'),
    }),
  };
}

async function serveChild(engineName, options) {
  const engine = engineName.startsWith('wasm_')
    ? await fedleafWasmEngine(engineName === 'wasm_simd', options.file, options.stepsPerCall)
    : await tfjsEngine(engineName.replace('tfjs_', ''), options.file, options.tfjsSeconds);
  for await (const command of createInterface({ input: process.stdin })) {
    if (command.startsWith('run')) console.log(JSON.stringify(engine.run(Number(command.slice(4)) || 0)));
    else if (command === 'digest' && engine.digest) console.log(JSON.stringify(engine.digest()));
    else if (command === 'stats') console.log(JSON.stringify(engine.stats()));
    else throw new Error(`unknown command '${command}'`);
  }
}

// ---------------------------------------------------------------------------------------------
// Driver

function parseArgs(argv) {
  const options = {
    rounds: 11, warmup: 1, warmupSeconds: 0.5, workloads: 'a,b,c,d', tfjsRounds: 3, tfjsSeconds: 1, stepsPerCall: 8,
    minSeconds: 1, slices: 5,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    options[key] = argv[i + 1];
  }
  for (const key of ['native', 'fixture', 'out', 'file']) {
    if (options[key] !== undefined) options[key] = path.resolve(options[key]);
  }
  for (const key of ['rounds', 'warmup', 'warmupSeconds', 'tfjsRounds', 'tfjsSeconds', 'stepsPerCall', 'minSeconds', 'slices']) {
    options[key] = Number(options[key]);
  }
  options.tfjsRounds = Math.max(1, Math.min(options.tfjsRounds, options.rounds));
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

// An engine process: one command line in, one JSON line out.
class Engine {
  constructor(name, command, args) {
    this.name = name;
    this.child = spawn(command, args, { cwd: bindings, stdio: ['pipe', 'pipe', 'pipe'] });
    this.stderr = '';
    this.child.stderr.on('data', (d) => { this.stderr += d; });
    this.lines = createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
    this.exited = new Promise((resolve) => this.child.on('exit', resolve));
  }

  async request(command) {
    this.child.stdin.write(`${command}\n`);
    for (;;) {
      const { value, done } = await this.lines.next();
      if (done) throw new Error(`engine ${this.name} exited (${await this.exited}):\n${this.stderr}`);
      if (value.startsWith('{')) return JSON.parse(value);
    }
  }

  async close() {
    this.child.stdin.end();
    await this.exited;
  }
}

// Every engine's initial model: initialize_model(plan, 1), written next to the workload's data.
function modelFileOf(file) {
  return file.replace(/\.safetensors$/, '.model.safetensors');
}

// A workload's inputs by plan input name: {offsets, ids} or {dense, width} (a chain workload's
// one CSR input under the plan's only input name).
function inputsOf(plan, data) {
  if (data.inputs) return data.inputs;
  return { [Object.keys(plan.model.inputs)[0]]: { offsets: data.offsets, ids: data.ids, numFeatures: data.numFeatures } };
}

// The graph's layers with their tables and widths: each embedding_bag's owning table layer,
// each layer's input width (dense layers' fan-in) and output width.
function layerShapes(plan) {
  const width = {};
  for (const [name, spec] of Object.entries(plan.model.inputs)) width[name] = spec.dim ?? 0;
  const byName = {};
  let last = null;
  return plan.model.layers.map((l, i) => {
    const reads = l.inputs ?? [l.input ?? (i === 0 ? Object.keys(plan.model.inputs)[0] : last)];
    const owner = l.type === 'embedding_bag' ? (l.table ? byName[l.table] : l) : null;
    const inWidth = width[reads[0]];
    let out = inWidth;
    if (owner) out = owner.dim;
    else if (l.type === 'concatenate') out = reads.reduce((sum, r) => sum + width[r], 0);
    else if (l.type === 'dense') out = l.units;
    const name = l.name ?? `#${i}`;
    byName[name] = l;
    width[name] = out;
    last = name;
    return { layer: l, owner, reads, inWidth, out };
  });
}

// Every parameter of the model (whole tables).
function parameterCount(plan) {
  return layerShapes(plan).reduce((sum, { layer, owner, inWidth }) => {
    if (owner === layer) return sum + layer.vocab * layer.dim;
    if (layer.type === 'dense') return sum + (inWidth + (layer.use_bias === false ? 0 : 1)) * layer.units;
    return sum;
  }, 0);
}

// Bytes a leaf must hold to train: the embedding rows its data touch (per table, the union over
// the inputs that share it) and every dense parameter, the optimizer's state for them (momentum
// 1, Adam 2 values per parameter) and the data.
function trainedBytes(plan, data, dataBytes) {
  const inputs = inputsOf(plan, data);
  const touched = new Map();
  let parameters = 0;
  for (const { layer, owner, reads, inWidth } of layerShapes(plan)) {
    if (owner) {
      if (!touched.has(owner)) touched.set(owner, new Set());
      for (const id of inputs[reads[0]].ids) touched.get(owner).add(id);
    } else if (layer.type === 'dense') {
      parameters += (inWidth + (layer.use_bias === false ? 0 : 1)) * layer.units;
    }
  }
  let distinct = 0;
  for (const [owner, ids] of touched) {
    distinct += ids.size;
    parameters += ids.size * owner.dim;
  }
  const slots = { sgd: 0, momentum: 1, adam: 2 }[plan.train.optimizer.type ?? 'sgd'];
  return { distinct_ids: distinct, trained_parameters: parameters, optimizer_values: slots * parameters,
    trained_bytes: 4 * (parameters + slots * parameters) + dataBytes };
}

// The data's bytes (4 per id, offset, weight, value and label) and its bytes densified (every
// sparse input as a row of its id range, every dense input as is, per example).
function dataSizes(plan, data) {
  let bytes = 4 * (data.labels.length + (data.weights?.length ?? 0));
  let densifiedWidth = 0;
  for (const input of Object.values(inputsOf(plan, data))) {
    bytes += 4 * (input.dense ? input.dense.length : input.offsets.length + input.ids.length);
    densifiedWidth += input.dense ? input.width : input.numFeatures;
  }
  return { dataBytes: bytes, densifiedBytes: 4 * data.labels.length * densifiedWidth };
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

// Linear-interpolated quantile q of values.
function quantile(values, q) {
  const v = [...values].sort((x, y) => x - y);
  const at = q * (v.length - 1);
  const lo = Math.floor(at);
  return lo + 1 < v.length ? v[lo] + (at - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

function spread(values) {
  return {
    median: median(values), min: Math.min(...values), max: Math.max(...values),
    q1: quantile(values, 0.25), q3: quantile(values, 0.75), rounds: values,
  };
}

// The rounds TF.js runs in: `count` of `rounds`, spread evenly (first and last included).
function tfjsRoundSet(rounds, count) {
  if (count === 1) return new Set([Math.floor(rounds / 2)]);
  return new Set(Array.from({ length: count }, (_, k) => Math.round((k * (rounds - 1)) / (count - 1))));
}

const isTfjs = (name) => name.startsWith('tfjs_');

// The reference loop is written for one model: a sparse logistic regression trained with SGD.
function referenceApplies(plan) {
  const [layer] = plan.model.layers;
  return plan.model.layers.length === 1 && layer.type === 'embedding_bag' && layer.dim === 1 &&
    layer.combiner === 'sum' && plan.model.loss === 'sigmoid_cross_entropy' &&
    plan.train.optimizer.type === 'sgd' && !plan.train.clip_norm;
}

// A round's run of an engine from its slices: their CPU time and examples summed.
function combineSlices(parts) {
  const seconds = parts.reduce((s, p) => s + p.seconds, 0);
  const examples = parts.reduce((s, p) => s + p.examples_per_second * p.seconds, 0);
  return {
    ...parts.at(-1),
    seconds,
    wall_seconds: parts.reduce((s, p) => s + p.wall_seconds, 0),
    runs: parts.reduce((s, p) => s + p.runs, 0),
    examples_per_second: examples / seconds,
    slices: parts.map((p) => p.examples_per_second),
  };
}

// `rounds` interleaved rounds, fresh warmed-up processes per round, the timed runs in slices
// (method: header). `start` maps each engine name to a function starting its process. Returns
// each engine's runs, one per round (undefined in the rounds TF.js skips), and each engine's last
// process, still running, for the digest and the stats.
async function interleave(start, options) {
  const names = Object.keys(start);
  const runs = Object.fromEntries(names.map((name) => [name, []]));
  const last = {};
  const tfjsRounds = tfjsRoundSet(options.rounds, options.tfjsRounds);
  const rotate = (list, k) => list.map((_, i) => list[(i + k) % list.length]);
  for (let r = 0; r < options.rounds; r++) {
    const active = rotate(names.filter((name) => !isTfjs(name) || tfjsRounds.has(r)), r);
    for (const name of active) {
      await last[name]?.close();
      const e = start[name]();
      last[name] = e;
      for (let w = 0; w < options.warmup; w++) await e.request(`run ${options.warmupSeconds}`);
    }
    const sliced = active.filter((name) => !isTfjs(name));
    const parts = Object.fromEntries(sliced.map((name) => [name, []]));
    for (let k = 0; k < options.slices; k++) {
      for (const name of rotate(sliced, k)) {
        parts[name].push(await last[name].request(`run ${options.minSeconds / options.slices}`));
      }
    }
    for (const name of sliced) runs[name][r] = combineSlices(parts[name]);
    for (const name of active.filter(isTfjs)) runs[name][r] = await last[name].request('run');
    process.stderr.write('.');
  }
  process.stderr.write('\n');
  return { runs, engines: names.map((name) => last[name]) };
}

async function main(options) {
  const workDir = path.join(path.dirname(options.out), 'train');
  mkdirSync(workDir, { recursive: true });
  const { createExecutor } = await import(path.join(bindings, 'src/index.js'));
  const executor = await createExecutor({ simd: false });

  const results = [];
  const ratios = {};
  const spreads = {};
  const self = fileURLToPath(import.meta.url);
  for (const key of options.workloads.split(',')) {
    const workload = WORKLOADS[key];
    let file;
    if (key === 'c') {
      file = path.join(workDir, `${workload.name}.safetensors`);
      runChild(options.native, ['featurize', options.fixture, JSON.stringify(workload.plan), file]);
    } else if (workload.multiInput) {
      file = path.join(workDir, `${workload.name}.safetensors`);
      writeMultiInputFile(executor, file, workload.plan, workload.generate(), workload.name, writeFileSync);
    } else {
      file = csrFile(executor, workDir, workload, workload.generate());
    }
    writeFileSync(modelFileOf(file), executor.initializeModel(workload.plan, 1));
    const data = readWorkload(file);
    const examples = data.labels.length;
    const plan = workload.plan;
    const parameters = parameterCount(plan);
    const { dataBytes, densifiedBytes } = dataSizes(plan, data);
    const densified = densifiedBytes + 4 * parameters;
    const trained = trainedBytes(plan, data, dataBytes);
    const ids = Object.values(inputsOf(plan, data)).reduce((sum, i) => sum + (i.ids?.length ?? 0), 0);
    console.error(`workload ${workload.name}: ${examples} examples, ${ids} ids — ${workload.describe}`);

    const node = (name, extra) => () => new Engine(name, process.execPath, [self, '--child', name, '--file', file, ...extra]);
    const start = { native: () => new Engine('native', options.native, ['serve', 'native', file]) };
    if (referenceApplies(plan)) start.reference_loop = () => new Engine('reference_loop', options.native, ['serve', 'reference', file]);
    for (const name of ['wasm_simd', 'wasm_baseline']) start[name] = node(name, ['--steps-per-call', String(options.stepsPerCall)]);
    for (const name of ['tfjs_wasm', 'tfjs_cpu']) start[name] = node(name, ['--tfjs-seconds', String(options.tfjsSeconds)]);
    const { runs, engines } = await interleave(start, options);
    const rate = (name, r) => runs[name][r].examples_per_second;
    const allRounds = runs.native.map((_, r) => r);
    const withTfjs = allRounds.filter((r) => runs.tfjs_wasm[r] !== undefined);
    const perRound = (f, rounds = allRounds) => spread(rounds.map(f));
    const tfjsBest = (r) => Math.max(rate('tfjs_wasm', r), rate('tfjs_cpu', r));
    const workloadRatios = {
      wasm_simd_vs_native: perRound((r) => rate('wasm_simd', r) / rate('native', r)),
      wasm_simd_vs_tfjs_best: perRound((r) => rate('wasm_simd', r) / tfjsBest(r), withTfjs),
      wasm_baseline_vs_native: perRound((r) => rate('wasm_baseline', r) / rate('native', r)),
    };
    if (runs.reference_loop) {
      workloadRatios.native_vs_reference_loop = perRound((r) => rate('native', r) / rate('reference_loop', r));
    }
    for (const [k, v] of Object.entries(workloadRatios)) {
      ratios[`${workload.name}.${k}`] = v.median;
      spreads[`${workload.name}.${k}`] = v;
    }
    const digests = [];
    for (const name of ['native', 'wasm_simd', 'wasm_baseline']) {
      digests.push(await engines.find((e) => e.name === name).request('digest'));
    }
    // The trained update must be the same bytes. The reported mean loss sums log1pf values, and
    // glibc's and Emscripten's libm may differ in its last bit: equal to 1e-9, not bit for bit.
    const lossAgrees = (d) => Math.abs(d.mean_loss - digests[0].mean_loss) <= 1e-9 * Math.abs(digests[0].mean_loss);
    if (!digests.every((d) => d.result_digest === digests[0].result_digest && lossAgrees(d))) {
      throw new Error(`${workload.name}: fedleaf engines disagree (native, wasm SIMD, baseline): ${JSON.stringify(digests)}`);
    }
    const perEngineRatio = (name) => {
      const own = allRounds.filter((r) => runs[name][r] !== undefined);
      return {
        vs_native: median(own.map((r) => rate(name, r) / rate('native', r))),
        vs_tfjs_best: median(withTfjs.map((r) => rate(name, r) / tfjsBest(r))),
      };
    };
    for (const e of engines) {
      const stats = await e.request('stats');
      const own = runs[e.name].filter((x) => x !== undefined);
      const last = own.at(-1);
      results.push({
        workload: workload.name,
        ...stats,
        engine: e.name,
        examples_per_second: median(own.map((x) => x.examples_per_second)),
        rounds: runs[e.name].map((x) => (x === undefined ? null : x.examples_per_second)),
        cpu_seconds_per_round: median(own.map((x) => x.seconds)),
        setup_seconds: last.setup_seconds,
        mean_loss: last.mean_loss ?? median(own.map((x) => x.mean_batch_loss)),
        ...perEngineRatio(e.name),
        examples, parameters, parameter_bytes: 4 * parameters, data_bytes: dataBytes, densified_bytes: densified,
        ...trained,
      });
      if (e.name === 'wasm_simd') {
        ratios[`${workload.name}.params_data_over_wasm_memory`] = trained.trained_bytes / stats.wasm_memory_bytes;
      }
      await e.close();
    }
  }

  const header = ['workload', 'engine', 'examples/s', 'x native', 'x best TF.js', 'peak RSS',
    'wasm memory', 'trained+opt+data', 'params+data', 'densified', 'mean loss'];
  const rows = results.map((r) => [
    r.workload, r.engine, rateText(r.examples_per_second), r.vs_native.toFixed(3),
    r.vs_tfjs_best.toFixed(1), bytesText(r.peak_rss_bytes), bytesText(r.wasm_memory_bytes),
    bytesText(r.trained_bytes), bytesText(r.parameter_bytes + r.data_bytes), bytesText(r.densified_bytes),
    r.mean_loss.toPrecision(6),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  console.log('');
  console.log('wasm SIMD linear memory as the engine goes (it only grows; Emscripten start 1 MB incl. 512 kB stack):');
  for (const r of results.filter((x) => x.engine === 'wasm_simd')) {
    const m = r.wasm_memory_breakdown;
    console.log(`  ${r.workload}: start ${bytesText(m.at_start)}, dataset built ${bytesText(m.after_dataset)}, ` +
      `session set up ${bytesText(m.after_session_setup)}, trained ${bytesText(m.after_training)}, ` +
      `result written ${bytesText(m.after_result)}; trained+opt+data ${bytesText(r.trained_bytes)} ` +
      `(data ${bytesText(r.data_bytes)}, ${r.distinct_ids} rows touched)`);
  }
  console.log('');
  console.log(`${'ratio (median of per-round ratios)'.padEnd(44)} ${'median'.padStart(8)}  ${'min–max'.padEnd(15)}  ` +
    `${'IQR'.padEnd(15)}  rounds`);
  const digits = (v) => (v.median >= 10 ? 1 : 3);
  for (const [k, v] of Object.entries(spreads)) {
    const d = digits(v);
    console.log(`${k.padEnd(44)} ${v.median.toFixed(d).padStart(8)}  ${`${v.min.toFixed(d)}–${v.max.toFixed(d)}`.padEnd(15)}  ` +
      `${`${v.q1.toFixed(d)}–${v.q3.toFixed(d)}`.padEnd(15)}  ${v.rounds.length}`);
  }
  console.log(`
Method: each of ${options.rounds} rounds starts a fresh process per engine (each round starting with the next engine), warms each
up (${options.warmup} run(s) of ${options.warmupSeconds} s), then times the engines in turn in ${options.slices} slices of ${options.minSeconds / options.slices} s (A B A B ..., order rotating),
so compared runs are a fraction of a second apart and each round draws its processes anew; a ratio is computed per round from
that round's runs (the sums of their slices) and reported as the median over rounds with its min–max and interquartile range; "x native" / "x best TF.js" are such medians, examples/s the median of an
engine's rounds, by the engine process's CPU time (wall time of each run in the JSON). TF.js runs in only
${options.tfjsRounds} of the ${options.rounds} rounds (spread evenly): its ratios (x best TF.js) are the median of those rounds, a rough figure.
Timed: the per-batch training loop (fedleaf: TrainingSession steps of whole runs, repeated to ${options.minSeconds} s of CPU,
${options.stepsPerCall} batches per wasm call; reference_loop: the same SGD logistic regression in ~30 lines of plain C++, train_bench.cc; TF.js:
optimizer.minimize per batch incl. building the batch tensors). Not timed: model decode / update encode, dataset
construction. TF.js is time-boxed (~${options.tfjsSeconds} s of consecutive batches per run) and its examples/s extrapolated;
its wasm backend (SIMD, single thread) has no UnsortedSegmentSum kernel (gradient of tf.gather) and the cpu
backend's is O(vocab x ids) per batch, so the benchmark registers one plain JS kernel for both backends (said
again in each result's "note"). TF.js's optimizers update the whole embedding table every batch (dense gradients
of tf.gather), as its users get. Same model and data in every engine: fedleaf's initial model (seed 1) and
fedleaf's hashed ids. Mean loss: fedleaf engines over the whole run (their trained updates are checked byte-equal
across builds); TF.js over the batches of its runs (median). peak RSS is per engine process (Node's own ~40-50 MB
included for wasm/TF.js); "wasm memory" is the fedleaf module's linear memory (its high-water mark: the model
stays in JS, as a leaf's download does); "trained+opt+data" = the embedding rows the data touch and the dense
parameters, the optimizer's state for them and the CSR data, x 4 B (ratio params_data_over_wasm_memory = that /
wasm SIMD's memory, target >= 0.67); "params+data" counts the whole model; "densified" = examples x features
x 4 B (dense inputs) + parameters x 4 B (dense gradients).`);
  const method = {
    method: 'interleaved rounds, fresh processes per round, runs interleaved in slices, median of per-round ratios',
    rounds: options.rounds, slices: options.slices,
    warmup: options.warmup, warmup_seconds: options.warmupSeconds,
    min_seconds_per_run: options.minSeconds, tfjs_rounds: options.tfjsRounds, tfjs_seconds_per_run: options.tfjsSeconds,
  };
  writeFileSync(options.out, `${JSON.stringify({ ...method, results, ratios, ratio_spreads: spreads }, null, 2)}\n`);
  console.log(`wrote ${options.out}`);
}

const argv = process.argv.slice(2);
if (argv[0] === '--child') {
  await serveChild(argv[1], parseArgs(argv.slice(2)));
} else {
  await main(parseArgs(argv));
}
