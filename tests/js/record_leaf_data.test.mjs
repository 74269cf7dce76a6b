// Records as a leaf's data: executor.datasetFromRecords (one call into wasm: the dataset of
// featurizeRecords then datasetFromInputs), LeafData (the one leaf-data type: records for a
// records plan, their text for a text plan) and its wrappers RecordLeafData, TextLeafData and
// EmailLeafData (raw emails as records carrying their text, trained as text or as records as the
// plan says), planTakesRecords, and two leaves training the demo's wide & deep model (tables cut
// down) for two rounds against a real fedleaf-server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createExecutor, LeafData, planTakesRecords, RecordLeafData, runLeaf, TextLeafData } from '../../js_bindings/src/index.js';
import { EmailLeafData, emailRecord } from '../../js_bindings/src/datasets/email_leaf_data.js';
import { loadSpamAssassin, spamAssassinEmailRecord } from '../../js_bindings/src/datasets/spamassassin.js';
import { spamAssassinClientData } from '../../js_bindings/src/node/simulate.js';
import { adminClient, withServer } from '../server/server_harness.mjs';
import { smallWideDeepPlan, WIDE_DEEP_PLAN } from './small_wide_deep_plan.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const readPlan = (name) => JSON.parse(readFileSync(path.join(root, 'scripts/demo', name), 'utf8'));
const TEXT_PLAN = readPlan('spam_plan.json');
const PLAN = smallWideDeepPlan();

const executor = await createExecutor();
const corpus = (await loadSpamAssassin()).filter((_, i) => i % 20 === 0);  // ~300 emails
const emails = corpus.slice(0, 120);
const records = emails.map((r) => spamAssassinEmailRecord(r.text));
const labels = emails.map((r) => r.label);

test('planTakesRecords: a model input with features means records; top-level text features mean texts', () => {
  assert.equal(planTakesRecords(WIDE_DEEP_PLAN), true);
  assert.equal(planTakesRecords(PLAN), true);
  assert.equal(planTakesRecords(TEXT_PLAN), false);
  assert.equal(planTakesRecords({ model: { inputs: { x: { type: 'sparse_ids' } } } }), false);
  assert.equal(planTakesRecords({ model: { inputs: { x: 'sparse_ids', n: { type: 'dense', dim: 1, features: { numeric: [{ field: 'a' }] } } } } }), true);
  assert.equal(planTakesRecords(undefined), false);
  assert.equal(planTakesRecords({}), false);
});

// The path before records crossed into wasm once: the columns into JS, then back as inputs.
function twoStepDataset(plan, labelsOrTargets, recordsOf = records) {
  const inputs = {};
  for (const c of executor.featurizeRecords(recordsOf, plan)) {
    inputs[c.name] = c.kind === 'dense' ? { dense: c.dense, width: c.width }
      : { ids: c.ids, offsets: c.offsets, weights: c.weights, numFeatures: c.numFeatures };
  }
  return executor.datasetFromInputs(inputs, labelsOrTargets);
}

test('datasetFromRecords (one call into wasm) gives the dataset of featurizeRecords then datasetFromInputs', () => {
  const model = executor.initializeModel(PLAN, 3);
  const handle = executor.loadPlan(PLAN);
  const direct = executor.datasetFromRecords(records, labels, PLAN);
  const viaHandle = executor.datasetFromRecords(records, labels, handle);
  const composed = twoStepDataset(PLAN, labels);
  try {
    for (const data of [direct, viaHandle]) {
      assert.equal(data.size, records.length);
      assert.equal(data.numInputs, composed.numInputs);
      assert.deepEqual(data.labels, composed.labels);
      for (const { name } of handle.tables) assert.deepEqual(data.distinctIdsFor(PLAN, name), composed.distinctIdsFor(PLAN, name));
      assert.deepEqual(executor.execute(PLAN, model, data, { taskId: 't' }), executor.execute(PLAN, model, composed, { taskId: 't' }));
      assert.deepEqual(executor.evaluate(PLAN, model, data), executor.evaluate(PLAN, model, composed));
      assert.deepEqual(executor.predict(PLAN, model, data), executor.predict(PLAN, model, composed));
    }
  } finally {
    handle.delete();
    direct.delete();
    viaHandle.delete();
    composed.delete();
  }
});

test('datasetFromRecords takes float targets for mean_squared_error, as datasetFromInputs does', () => {
  const plan = {
    model: {
      inputs: { n: { type: 'dense', dim: 2, features: { numeric: [{ field: 'length', transform: 'log1p' }, { field: 'links' }] } } },
      layers: [{ type: 'dense', name: 'out', units: 1 }],
      loss: 'mean_squared_error',
    },
    train: { optimizer: { type: 'sgd', learning_rate: 0.1 } },
    updates: { 'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' }, 'out/bias': { encoding: 'dense', aggregator: 'weighted_mean' } },
  };
  const targets = { targets: records.map((r) => r.caps_share), width: 1 };
  const model = executor.initializeModel(plan, 2);
  const direct = executor.datasetFromRecords(records, targets, plan);
  const composed = twoStepDataset(plan, targets);
  try {
    assert.deepEqual(executor.evaluate(plan, model, direct), executor.evaluate(plan, model, composed));
    assert.deepEqual(executor.predict(plan, model, direct), executor.predict(plan, model, composed));
  } finally {
    direct.delete();
    composed.delete();
  }
  assert.throws(() => executor.datasetFromRecords(records.slice(0, 3), { targets: [1, 2], width: 1 }, plan),
    /labels: 2 rows of targets for 3 records/);
});

test('datasetFromRecords refuses a broken record or a label count that differs, naming it', () => {
  const broken = records.slice(0, 3).map((r) => ({ ...r }));
  broken[2].length = Number.NaN;
  assert.throws(() => executor.datasetFromRecords(broken, [0, 1, 0], PLAN), /records\[2\]\.length: NaN is not a finite number/);
  broken[2].length = { nested: true };
  assert.throws(() => executor.datasetFromRecords(broken, [0, 1, 0], PLAN), /records\[2\]\.length/);
  assert.throws(() => executor.datasetFromRecords(records.slice(0, 3), [0, 1], PLAN), /labels/);
});

test('RecordLeafData builds a dataset per kind and per input features, and a text plan reads each record\'s text', () => {
  const half = records.length / 2;
  const data = new RecordLeafData(executor, {
    train: { records: records.slice(0, half), labels: labels.slice(0, half) },
    eval: { records: records.slice(half), labels: labels.slice(half) },
  });
  try {
    assert.equal(data.numTrainExamples, half);
    const train = data.datasetFor({ kind: 'train', plan: PLAN });
    assert.equal(train.size, half);
    assert.equal(data.datasetFor({ plan: PLAN }), train, 'the default kind is train, and cached');
    // Another learning rate featurizes alike: the same dataset.
    const retuned = { ...PLAN, train: { ...PLAN.train, optimizer: { type: 'adam', learning_rate: 0.5 } } };
    assert.equal(data.datasetFor({ kind: 'train', plan: retuned }), train);
    const evaluation = data.datasetFor({ kind: 'evaluate', plan: PLAN });
    assert.notEqual(evaluation, train);
    assert.equal(evaluation.size, records.length - half);
    // Other input features: a new dataset.
    const refeatured = structuredClone(PLAN);
    refeatured.model.inputs.sender.features.seed = 9;
    assert.notEqual(data.datasetFor({ kind: 'train', plan: refeatured }), train);
    assert.ok(data.touchedRows(PLAN) > 0);
    assert.throws(() => data.datasetFor({ kind: 'train', plan: TEXT_PLAN }), /records\[0\]\.text: expected a string/);
  } finally {
    data.delete();
  }
  assert.throws(() => new RecordLeafData(executor, { train: { texts: [], labels: [] } }), /parts\.train\.records is required/);
  assert.throws(() => new RecordLeafData(executor, { train: { records, labels: [1] } }), /same length/);
});

test('EmailLeafData trains raw emails as text for a text plan and as records for a records plan', () => {
  const texts = emails.map((r) => r.text);
  const data = new EmailLeafData(executor, { train: { texts, labels } });
  const textData = new TextLeafData(executor, { train: { texts, labels } });
  const model = executor.initializeModel(PLAN, 5);
  const textModel = executor.initializeModel(TEXT_PLAN, 5);
  const fromRecords = executor.datasetFromRecords(records, labels, PLAN);
  try {
    assert.equal(data.numTrainExamples, texts.length);
    assert.deepEqual(executor.evaluate(TEXT_PLAN, textModel, data.datasetFor({ plan: TEXT_PLAN })),
      executor.evaluate(TEXT_PLAN, textModel, textData.datasetFor({ plan: TEXT_PLAN })));
    assert.deepEqual(executor.evaluate(PLAN, model, data.datasetFor({ plan: PLAN })),
      executor.evaluate(PLAN, model, fromRecords));
    assert.equal(data.touchedRows(TEXT_PLAN), textData.touchedRows(TEXT_PLAN));
  } finally {
    data.delete();
    textData.delete();
    fromRecords.delete();
  }
});

test('LeafData: one record per email serves a text plan (its text) and a records plan (its fields)', () => {
  const texts = emails.map((r) => r.text);
  const both = emails.map((r) => emailRecord(r.text));
  assert.deepEqual(Object.keys(both[0]).sort(), [...Object.keys(records[0]), 'text'].sort());
  const data = new LeafData(executor, { train: { records: both, labels } });
  const textData = new TextLeafData(executor, { train: { texts, labels } });
  const recordData = new RecordLeafData(executor, { train: { records, labels } });
  const handle = executor.loadPlan(PLAN);
  const model = executor.initializeModel(PLAN, 5);
  const textModel = executor.initializeModel(TEXT_PLAN, 5);
  try {
    for (const wrapper of [textData, recordData, new EmailLeafData(executor, { train: { texts: [], labels: [] } })]) {
      assert.ok(wrapper instanceof LeafData);
    }
    const forText = data.datasetFor({ plan: TEXT_PLAN });
    assert.equal(forText.numInputs, 1);
    assert.deepEqual(forText.distinctIds(), textData.datasetFor({ plan: TEXT_PLAN }).distinctIds());
    assert.deepEqual(executor.execute(TEXT_PLAN, textModel, forText, { taskId: 'x' }),
      executor.execute(TEXT_PLAN, textModel, textData.datasetFor({ plan: TEXT_PLAN }), { taskId: 'x' }));
    const forRecords = data.datasetFor({ plan: PLAN }, handle);
    assert.deepEqual(executor.execute(PLAN, model, forRecords, { taskId: 'x' }),
      executor.execute(PLAN, model, recordData.datasetFor({ plan: PLAN }), { taskId: 'x' }));
    assert.equal(data.touchedRows(PLAN), recordData.touchedRows(PLAN));
    assert.equal(data.touchedRows(TEXT_PLAN), textData.touchedRows(TEXT_PLAN));
    assert.equal(data.datasetFor({ plan: TEXT_PLAN }), forText, 'cached per plan featurization');
  } finally {
    handle.delete();
    for (const owned of [data, textData, recordData]) owned.delete();
  }
  assert.throws(() => new LeafData(executor, { train: { texts, labels } }), /parts\.train\.records is required/);
  assert.throws(() => new TextLeafData(executor, { train: { records, labels } }), /parts\.train\.texts is required/);
});

test('two leaves train the wide & deep plan on records for two rounds against a real server', () => withServer(async (server) => {
  const admin = adminClient(server.url);
  const pop = await admin.createPopulation({ plan: PLAN, seed: 1, rounds: 2, clients_per_round: 2 });
  const leaves = [0, 1].map((i) => {
    const { train, eval: evalPart } = spamAssassinClientData(corpus, i, 2, { nonIid: true });
    const toRecords = (part) => ({ records: part.texts.map((t) => spamAssassinEmailRecord(t)), labels: part.labels });
    return new RecordLeafData(executor, { train: toRecords(train), eval: toRecords(evalPart) });
  });
  const selects = [];
  try {
    const summaries = await Promise.all(leaves.map((dataset) => runLeaf({
      server: server.url, population: pop.id, token: pop.client_token, executor, dataset,
      backoff: { baseMs: 20, maxMs: 200 },
      onEvent: (e) => { if (e.type === 'downloaded') selects.push(e.select); },
    })));
    assert.deepEqual(summaries.map((s) => s.uploaded), [2, 2]);
    const status = await admin.status(pop.id);
    assert.equal(status.state, 'finished');
    assert.deepEqual(status.history.filter((h) => h.round < 2).map((h) => h.reports), [2, 2]);
    assert.ok(selects.some(Boolean), 'the embedding tables came by model:select');
    const model = (await admin.downloadModel(admin.modelUrl(pop.id, 2), { token: false })).bytes;
    const heldOut = executor.datasetFromRecords(records, labels, PLAN);
    const initial = executor.evaluate(PLAN, executor.initializeModel(PLAN, 1), heldOut);
    const trained = executor.evaluate(PLAN, model, heldOut);
    heldOut.delete();
    assert.ok(trained.loss < initial.loss, `eval loss ${trained.loss} after two rounds, ${initial.loss} before`);
  } finally {
    leaves.forEach((d) => d.delete());
  }
}));
