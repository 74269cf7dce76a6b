// The train bench's workloads (a)-(d) (train_bench.mjs's header): each one's plan and its data,
// generated deterministically.
import { generateWideDeep, wideDeepPlan } from './wide_deep_workload.mjs';
import { seededRandom } from '../../../js_bindings/src/node/seeded_random.js';

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

export const WORKLOADS = {
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
