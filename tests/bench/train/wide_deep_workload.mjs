// Workload (d) of scripts/bench.sh train: a wide & deep model over several sparse inputs, one of
// its tables shared by two inputs, and dense numeric features — the model shape issue 29 is for.
//
//   const plan = wideDeepPlan();
//   const data = generateWideDeep({ seed: 4, examples: 50000 });   // {inputs, labels}
//   writeMultiInputFile(executor, file, plan, data, 'd_wide_deep');
//   const { inputs, labels } = readMultiInputFile(file);           // (in any engine process)
//   const model = tfjsGraphModel(tf, plan, initialTensors);        // the same model in TF.js
//   model.trainBatch(inputs, labels, start, count);
//
// The model (MLP 64-32, sigmoid loss, Adam):
//   history_ids (bag of ~8)  → embedding_bag "history" 2^20 x 16, mean ─┐
//   query    (bag of ~4 ids)  → embedding_bag "terms"   2^18 x 16, mean ─┤
//   title    (bag of ~6 ids)  → embedding_bag on the same table "terms" ─┤ concatenate (64)
//   context_id (one id)      → embedding_bag "context" 2^12 x 8, sum   ─┤   → dense 64 relu
//   numeric  (8 floats)       ───────────────────────────────────────────┘   → dense 32 relu
//   cross    (context x query, ~4 ids) → embedding_bag "wide" 2^22 x 1, sum ─ add ← dense 1
//
// The generator (documented so a run can be reproduced anywhere): mulberry32 seeded with `seed`.
// Categories are Zipf-distributed: a rank r in [0, N) is drawn log-uniformly
// (r = floor((N + 1)^u) - 1, u uniform: Zipf with exponent 1) and mapped to an id by
// (r * 0x9E3779B1) mod N (N a power of two: a permutation), so a few ids are frequent and most are
// rare, as in click and spam data. The label follows a planted model: every (table, id) has a
// score in [-1, 1] from a hash of both (no table of scores is stored); an example's logit is the
// mean score of each input's ids, plus a fixed linear function of the numeric features (standard
// normal), plus the crossed ids' scores; the label is 1 with probability sigmoid(2 * logit).
// Bags have a uniform length in [mean/2, 3 mean/2].
import { seededRandom } from '../../../js_bindings/src/node/seeded_random.js';

const TABLES = {
  history: { vocab: 1 << 20, dim: 16 },
  terms: { vocab: 1 << 18, dim: 16 },
  context: { vocab: 1 << 12, dim: 8 },
  wide: { vocab: 1 << 22, dim: 1 },
};
const NUMERIC = 8;

export function wideDeepPlan() {
  const table = (name, input, combiner, extra = {}) => ({
    type: 'embedding_bag', name, input, vocab: TABLES[name].vocab, dim: TABLES[name].dim, combiner, ...extra,
  });
  const rowSparse = { encoding: 'row_sparse', aggregator: 'mean_over_contributors' };
  const dense = { encoding: 'dense', aggregator: 'weighted_mean' };
  return {
    model: {
      inputs: {
        history_ids: { type: 'sparse_ids' },
        query: { type: 'sparse_ids' },
        title: { type: 'sparse_ids' },
        context_id: { type: 'sparse_ids' },
        numeric: { type: 'dense', dim: NUMERIC },
        cross: { type: 'sparse_ids' },
      },
      layers: [
        table('history', 'history_ids', 'mean'),
        table('terms', 'query', 'mean'),
        { type: 'embedding_bag', name: 'title_terms', input: 'title', table: 'terms', combiner: 'mean' },
        table('context', 'context_id', 'sum'),
        { type: 'concatenate', name: 'deep_in', inputs: ['history', 'terms', 'title_terms', 'context', 'numeric'] },
        { type: 'dense', name: 'h1', input: 'deep_in', units: 64, activation: 'relu' },
        { type: 'dense', name: 'h2', input: 'h1', units: 32, activation: 'relu' },
        { type: 'dense', name: 'deep_logit', input: 'h2', units: 1 },
        table('wide', 'cross', 'sum', { initializer: 'zeros' }),
        { type: 'add', name: 'logit', inputs: ['deep_logit', 'wide'] },
      ],
      output: 'logit',
      loss: 'sigmoid_cross_entropy',
    },
    train: { optimizer: { type: 'adam', learning_rate: 0.005 }, epochs: 1, batch_size: 32, shuffle: true, shuffle_seed: 7 },
    updates: {
      'history/weight': rowSparse,
      'terms/weight': rowSparse,
      'context/weight': rowSparse,
      'wide/weight': rowSparse,
      'h1/weight': dense, 'h1/bias': dense,
      'h2/weight': dense, 'h2/bias': dense,
      'deep_logit/weight': dense, 'deep_logit/bias': dense,
    },
  };
}

// The planted score of (table, id) in [-1, 1]: a murmur-style finalizer of both.
function score(tableSalt, id) {
  let h = Math.imul(id ^ tableSalt, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return ((h >>> 0) / 4294967296) * 2 - 1;
}

function zipfId(random, vocab) {
  const rank = Math.min(vocab - 1, Math.floor((vocab + 1) ** random()) - 1);
  return Math.imul(rank, 0x9e3779b1) & (vocab - 1);
}

const SALT = { history: 0x1234567, terms: 0x2345678, context: 0x3456789, wide: 0x456789a };
const NUMERIC_WEIGHTS = [0.8, -0.6, 0.5, -0.4, 0.3, -0.2, 0.1, 0.05];

class Bags {
  constructor(examples) {
    this.offsets = new Int32Array(examples + 1);
    this.ids = [];
  }

  push(i, ids) {
    for (const id of ids) this.ids.push(id);
    this.offsets[i + 1] = this.ids.length;
  }

  done() {
    return { offsets: this.offsets, ids: Int32Array.from(this.ids) };
  }
}

export function generateWideDeep({ seed = 4, examples = 50000 } = {}) {
  const random = seededRandom(seed);
  const bagLength = (mean) => Math.floor(mean / 2) + Math.floor(random() * (mean + 1));
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const bags = Object.fromEntries(['history_ids', 'query', 'title', 'context_id', 'cross'].map((n) => [n, new Bags(examples)]));
  const numeric = new Float32Array(examples * NUMERIC);
  const labels = new Int32Array(examples);
  const meanScore = (salt, ids) => (ids.length ? ids.reduce((s, id) => s + score(salt, id), 0) / ids.length : 0);
  for (let i = 0; i < examples; i++) {
    const draw = (table, mean) => Array.from({ length: bagLength(mean) }, () => zipfId(random, TABLES[table].vocab));
    const history = draw('history', 8);
    const query = draw('terms', 4);
    const title = draw('terms', 6);
    const context = [zipfId(random, TABLES.context.vocab)];
    const cross = query.map((q) => (Math.imul(context[0] + 1, 0x27d4eb2f) ^ q) & (TABLES.wide.vocab - 1));
    let logit = meanScore(SALT.history, history) + meanScore(SALT.terms, query) + meanScore(SALT.terms, title) +
      meanScore(SALT.context, context) + meanScore(SALT.wide, cross);
    for (let k = 0; k < NUMERIC; k++) {
      const x = normal();
      numeric[i * NUMERIC + k] = x;
      logit += NUMERIC_WEIGHTS[k] * x;
    }
    labels[i] = random() < 1 / (1 + Math.exp(-2 * logit)) ? 1 : 0;
    bags.history_ids.push(i, history);
    bags.query.push(i, query);
    bags.title.push(i, title);
    bags.context_id.push(i, context);
    bags.cross.push(i, cross);
  }
  const inputs = Object.fromEntries(Object.entries(bags).map(([n, b]) => [n, b.done()]));
  inputs.numeric = { dense: numeric, width: NUMERIC };
  return { inputs, labels };
}

// A multi-input workload file: per input "inputs/<name>/offsets" and "inputs/<name>/ids" (I32) or
// "inputs/<name>/dense" (F32 [n, width]), "labels" (I32); metadata "plan", "workload" and
// "inputs" (a JSON list of {name, kind, num_features | width}).
export function writeMultiInputFile(executor, file, plan, data, workload, writeFileSync) {
  const tensors = { labels: { dtype: 'I32', shape: [data.labels.length], data: data.labels } };
  const inputs = [];
  for (const [name, input] of Object.entries(data.inputs)) {
    if (input.dense) {
      tensors[`inputs/${name}/dense`] = { dtype: 'F32', shape: [data.labels.length, input.width], data: input.dense };
      inputs.push({ name, kind: 'dense', width: input.width });
    } else {
      tensors[`inputs/${name}/offsets`] = { dtype: 'I32', shape: [input.offsets.length], data: input.offsets };
      tensors[`inputs/${name}/ids`] = { dtype: 'I32', shape: [input.ids.length], data: input.ids };
      const layer = plan.model.layers.find((l) => l.input === name && l.type === 'embedding_bag');
      const owner = layer.table ? plan.model.layers.find((l) => l.name === layer.table) : layer;
      inputs.push({ name, kind: 'sparse_ids', num_features: owner.vocab });
    }
  }
  writeFileSync(file, executor.encodeSafetensors(tensors, {
    plan: JSON.stringify(plan), workload, inputs: JSON.stringify(inputs),
  }));
}

// `tensors` as readSafetensors returns them → {inputs, labels, inputList}.
export function multiInputData(tensors, metadata) {
  const inputList = JSON.parse(metadata.inputs);
  const inputs = {};
  for (const i of inputList) {
    inputs[i.name] = i.kind === 'dense'
      ? { dense: tensors[`inputs/${i.name}/dense`].data, width: i.width }
      : { offsets: tensors[`inputs/${i.name}/offsets`].data, ids: tensors[`inputs/${i.name}/ids`].data,
        numFeatures: i.num_features };
  }
  return { inputs, inputList, labels: tensors.labels.data };
}

// The plan's graph in TF.js ops, as a TF.js user would write it for bags of ids: per bag layer,
// tf.gather of the table rows scaled by the combiner and tf.unsortedSegmentSum into examples.
// Variables start from `initial` (fedleaf's initialize_model(plan, 1), so every engine starts
// from the same model). Dropout is not in this workload.
export function tfjsGraphModel(tf, plan, initial) {
  const variables = {};
  const variable = (name) => {
    variables[name] ??= tf.variable(tf.tensor(initial[name].data, initial[name].shape));
    return variables[name];
  };
  const o = plan.train.optimizer;
  const optimizer = tf.train.adam(o.learning_rate, o.beta1 ?? 0.9, o.beta2 ?? 0.999, o.epsilon ?? 1e-7);
  const layers = plan.model.layers.map((l) => ({
    ...l,
    weight: l.type === 'embedding_bag' ? variable(`${l.table ?? l.name}/weight`)
      : l.type === 'dense' ? variable(`${l.name}/weight`) : null,
    bias: l.type === 'dense' ? variable(`${l.name}/bias`) : null,
  }));

  // One batch's tensors per input: bags as flat ids, example (segment) ids and combiner factors.
  function batchTensors(inputs, labels, start, count, combinerOf) {
    const out = {};
    for (const [name, input] of Object.entries(inputs)) {
      if (input.dense) {
        out[name] = tf.tensor2d(input.dense.subarray(start * input.width, (start + count) * input.width), [count, input.width]);
        continue;
      }
      const begin = input.offsets[start];
      const end = input.offsets[start + count];
      const segment = new Int32Array(end - begin);
      const factor = new Float32Array(end - begin);
      for (let b = 0; b < count; b++) {
        const lo = input.offsets[start + b];
        const hi = input.offsets[start + b + 1];
        const c = combinerOf(name) === 'mean' && hi > lo ? 1 / (hi - lo) : 1;
        for (let j = lo; j < hi; j++) {
          segment[j - begin] = b;
          factor[j - begin] = c;
        }
      }
      out[name] = {
        ids: tf.tensor1d(input.ids.subarray(begin, end), 'int32'),
        segment: tf.tensor1d(segment, 'int32'),
        factor: tf.tensor2d(factor, [end - begin, 1]),
      };
    }
    out.labels = tf.tensor2d(Float32Array.from(labels.subarray(start, start + count)), [count, 1]);
    return out;
  }

  function forward(t, count) {
    const values = {};
    for (const [name, v] of Object.entries(t)) if (name !== 'labels') values[name] = v;
    let last;
    for (const l of layers) {
      const x = l.input !== undefined ? values[l.input] : last;
      let y;
      if (l.type === 'embedding_bag') {
        y = tf.unsortedSegmentSum(tf.gather(l.weight, x.ids).mul(x.factor), x.segment, count);
      } else if (l.type === 'concatenate') {
        y = tf.concat(l.inputs.map((n) => values[n]), 1);
      } else if (l.type === 'add') {
        y = l.inputs.map((n) => values[n]).reduce((a, b) => a.add(b));
      } else if (l.type === 'dense') {
        y = x.matMul(l.weight).add(l.bias);
        if (l.activation === 'relu') y = tf.relu(y);
      } else {
        throw new Error(`tfjsGraphModel: layer type ${l.type} is not in this workload`);
      }
      values[l.name] = y;
      last = y;
    }
    return values[plan.model.output ?? layers.at(-1).name];
  }

  const combiners = {};
  for (const l of plan.model.layers) if (l.type === 'embedding_bag') combiners[l.input] = l.combiner ?? 'mean';
  return {
    trainBatch(inputs, labels, start, count) {
      const t = batchTensors(inputs, labels, start, count, (name) => combiners[name]);
      const loss = optimizer.minimize(() => tf.losses.sigmoidCrossEntropy(t.labels, forward(t, count)), true);
      const value = loss.dataSync()[0];
      tf.dispose([loss, ...Object.values(t).flatMap((v) => (v instanceof tf.Tensor ? [v] : Object.values(v)))]);
      return { count, loss: value };
    },
  };
}
