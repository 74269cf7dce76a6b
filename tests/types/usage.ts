// Every export of the fedleaf package, called the way the repository and its README call them:
// `tsc -p tests/types` (scripts/test.sh) fails when js_bindings/index.d.ts lacks or mistypes one.
// Checked only, never run.
import {
  createExecutor, Dataset, exportTfjsLayersModel, formatBytes, importTfjsLayersModel, indexedDbDeviceStore,
  LeafData, LeafStoppedError, memoryDeviceStore, networkErrorMessage, parsePlan, planPrivacy, planTakesRecords, PROTOCOL_VERSION, ProtocolClient, ProtocolError, RecordLeafData,
  PlanHandle, RequestTimeoutError, runLeaf, TextLeafData, VERSION, wasmSimdSupported,
} from 'fedleaf';
import type {
  ClaimOutcome, DecodedTensor, DeviceEntry, DeviceStore, EvaluateResult, Executor, ExportedTfjsModel, FedleafError, LeafEvent, Plan,
  PopulationStatus, PrivacyPlan, PrivacySettings, RecordInputColumns, RoundAggregator, RunLeafSummary, ServerOptimizerSpec, Task, TfjsModelJson,
  PlanTable, SelectTable, TaskData, TfjsWeightSpec,
  TrainResult,
} from 'fedleaf';

const plan: Plan = {
  model: {
    inputs: { tokens: 'sparse_ids' },
    layers: [
      { type: 'embedding_bag', name: 'emb', input: 'tokens', vocab: 4096, dim: 4, combiner: 'mean' },
      { type: 'dense', name: 'out', units: 2 },
    ],
    loss: 'softmax_cross_entropy',
  },
  train: { optimizer: { type: 'adam', learning_rate: 0.05, epsilon_form: 'tfjs' }, epochs: 1, batch_size: 4 },
  updates: {
    'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors', select_padding: { multiple: 64 },
                    compression: { values: 'int8', ids: 'delta_varint' }, download_values: 'f16' },
    'out/weight': { encoding: 'dense', aggregator: 'weighted_mean', clip: { rms: 0.01, quantile: 0.9 } },
  },
  features: { hash: 'murmur3_32', num_buckets: 4096, ngrams: 1, binary: true },
};

export async function executorCalls(): Promise<void> {
  const simd: boolean = wasmSimdSupported();
  const executor: Executor = await createExecutor({ simd: simd ? 'auto' : false, distUrl: new URL('https://cdn.example/fedleaf/') });
  const version: string = executor.version;
  const memory: number = executor.wasmMemoryBytes;
  console.log(version === VERSION, PROTOCOL_VERSION, formatBytes(memory), executor.simd);

  const bytes: Uint8Array = executor.encodeSafetensors({
    w: { dtype: 'F32', shape: [2], data: new Float32Array([1, 2]) },
    e: { encoding: 'row_sparse', indices: new BigInt64Array([0n, 3n]), values: [0.5, 0.25], dtype: 'F32', dense_shape: [4, 1] },
  }, { task_id: '7' });
  const decoded: { tensors: Record<string, DecodedTensor>; metadata: Record<string, string> } =
    executor.decodeSafetensors(bytes);
  const fromNetwork: ArrayBuffer = await (await fetch('model.safetensors')).arrayBuffer();
  console.log(decoded.metadata.task_id, Object.keys(executor.decodeSafetensors(fromNetwork).tensors));
  const coalesced = executor.coalesce({ encoding: 'coo', indices: [1, 1], values: [1, 2], dtype: 'F32', dense_shape: [3] });
  console.log(coalesced.indices.length);

  const texts = ['win a prize', 'meeting at noon'];
  const labels = [1, 0];
  const dataset: Dataset = executor.datasetFromTexts(texts, labels, plan);
  const fromFeatures: Dataset = executor.datasetFromTexts(texts, Int32Array.from(labels), { features: plan.features });
  const svm: Dataset = executor.datasetFromSvmlight('1 3:1 7:0.5\n0 2:1\n', { indexBase: 1, numFeatures: 16 });
  const dense: Dataset = executor.datasetFromDense([0.1, 0.2, 0.3, 0.4], 2, [0, 1]);
  const csr: Dataset = executor.datasetFromCsr({ offsets: [0, 2, 3], ids: [1, 5, 2], labels: [1, 0], numFeatures: 8 });
  const columns: RecordInputColumns[] = executor.featurizeRecords(
    [{ sender_domain: 'example.com', subject_tokens: ['win', 'cash'], length: 1200, html: null }],
    { model: { inputs: {
      sender: { type: 'sparse_ids', features: { column: 'sender_domain', hash_buckets: 64 } },
      numeric: { type: 'dense', dim: 1, features: { numeric: [{ field: 'length', transform: 'log1p', clip: [0, 20] }] } },
    }, layers: [], loss: 'sigmoid_cross_entropy' } });
  for (const c of columns) console.log(c.name, c.kind === 'dense' ? c.width : c.numFeatures);
  const ids: Uint32Array = dataset.distinctIds();
  const multi: Dataset = executor.datasetFromInputs(
    { body: { ids: [1, 5, 2], offsets: [0, 2, 3] }, numeric: { dense: [0.5, 1], width: 1 } }, [1, 0]);
  const sparse: Dataset = executor.datasetFromInputs({
    tfidf: { indices: [[0, 3], [1, 7]], values: Float32Array.of(0.5, 2), denseShape: [2, 10] },
    flat: { indices: Int32Array.of(0, 1, 1, 4), values: [1, 1], dense_shape: BigInt64Array.of(2n, 5n) },
  }, [1, 0]);
  console.log(sparse.numInputs);
  const tableIds: Uint32Array = multi.distinctIdsFor(plan, 'emb/weight');
  console.log(multi.numInputs, tableIds.length);
  const parsed: PlanHandle = executor.loadPlan(plan);
  const tables: PlanTable[] = parsed.tables;
  const request: SelectTable[] = parsed.selectRequest(multi);
  console.log(parsed.kind, tables[0]?.owner, tables[0]?.download, request[0]?.ids.length, parsed.touchedRows(multi),
    parsed.tableRows(multi, 'emb/weight').length, multi.distinctIdsFor(parsed, 'emb/weight').length,
    executor.selectRequest(multi, { kind: 'train', plan }, parsed).length, executor.predict(parsed, new Uint8Array(0), multi).length);
  parsed.delete();
  const part: Dataset = dataset.subset([0]);
  console.log(dataset.size, dataset.numFeatures, dataset.numNonzeros, dataset.numDistinctIds, dataset.isSparse,
    dataset.labels[0], ids.length, part.size, svm.size, dense.size, csr.size, fromFeatures.size);

  executor.validatePlan(JSON.stringify(plan));
  const model: Uint8Array = executor.initializeModel(plan, 1);
  const result: Uint8Array = executor.execute(plan, model, dataset, { taskId: '1' });
  const controller = new AbortController();
  const trained: TrainResult = await executor.train(plan, model, dataset, {
    taskId: '2', signal: controller.signal, sliceMs: 10,
    onProgress: (step, loss, total) => console.log(step, loss, total),
  });
  console.log(result.length, trained.bytes.length, trained.loss, trained.accuracy, trained.steps, trained.setupMs,
    trained.numExamples);
  const evaluated: EvaluateResult = executor.evaluate(plan, model, dataset);
  console.log(evaluated.accuracy, evaluated.loss, evaluated.numExamples, evaluated.auc ?? 'no auc');
  const probabilities: Float32Array = executor.predict(plan, model, dataset);
  console.log(probabilities[1]);

  const data = new TextLeafData(executor, { train: { texts, labels }, eval: { texts, labels } });
  console.log(data.numTrainExamples, data.touchedRows(plan), executor.distinctIds(data, { kind: 'train', plan }).length,
    executor.distinctIds(dataset).length, data.datasetFor({ kind: 'evaluate', plan }).size);
  const records = [{ body: 'Win cash now', sender_domain: 'example.com', subject_tokens: ['win'], length: 12 }];
  const fromRecords: Dataset = executor.datasetFromRecords(records, [1], plan);
  const recordData = new RecordLeafData(executor, { train: { records, labels: [1] }, eval: { records, labels: [1] } });
  if (planTakesRecords(plan)) {
    console.log(recordData.numTrainExamples, recordData.touchedRows(plan),
      recordData.datasetFor({ kind: 'evaluate', plan }).size, fromRecords.size);
  }
  recordData.delete();
  fromRecords.delete();
  // One record serves a text plan (its "text") and a records plan (its fields).
  const leafData = new LeafData(executor, { train: { records: [{ ...records[0], text: 'Win cash now' }], labels: [1] } });
  const source: TaskData = leafData;
  console.log(leafData.numTrainExamples, leafData.touchedRows(plan), executor.distinctIds(source, { kind: 'train', plan }).length);
  leafData.delete();
  const taskResult = await executor.runTask({ kind: 'train', plan, task_id: 3 }, model, data,
    { signal: controller.signal, onProgress: (step, loss) => console.log(step, loss) });
  console.log(taskResult.bytes.length, taskResult.numExamples, taskResult.loss);

  const fineTuned: Uint8Array = executor.applyUpdate(plan, model, trained.bytes);
  console.log(executor.evaluate(plan, fineTuned, dataset).loss);

  const aggregator: RoundAggregator = executor.createRoundAggregator(plan, model);
  aggregator.addResult(trained.bytes);
  const other: RoundAggregator = executor.restoreRoundAggregator(plan, model, aggregator.checkpoint());
  other.merge(aggregator);
  const next: Uint8Array = other.nextModel();
  console.log(other.numReports(), other.totalWeight(), next.length);
  for (const owned of [aggregator, other, dataset, fromFeatures, svm, dense, csr, part, data]) owned.delete();
}

export async function coreErrors(executor: Executor): Promise<string | undefined> {
  try {
    executor.validatePlan('{}');
  } catch (error) {
    return (error as FedleafError).code;
  }
  return undefined;
}

export async function leafLoop(executor: Executor, clientToken: string): Promise<RunLeafSummary> {
  const data = new TextLeafData(executor, { train: { texts: ['a', 'b'], labels: [0, 1] } });
  const controller = new AbortController();
  const onEvent = (event: LeafEvent): void => {
    switch (event.type) {
      case 'enrolled': console.log(event.deviceId); break;
      case 'claimed': console.log(event.task.round, event.task.plan.model.layers.length); break;
      case 'downloaded': console.log(event.bytes, event.cached, event.select, event.ms); break;
      case 'trained': console.log(event.numExamples, event.loss, event.setupMs); break;
      case 'uploaded': console.log(formatBytes(event.bytes), event.status); break;
      case 'dropped': console.log(event.status, event.reason); break;
      case 'idle': console.log(event.ms, event.reason); break;
      case 'error': console.log(event.fatal, event.error); break;
      default: break;
    }
  };
  try {
    return await runLeaf({
      server: 'http://127.0.0.1:8080', population: 'spam', token: clientToken, executor, dataset: data,
      prefetch: 1, waitS: 20, signal: controller.signal, maxTasks: 3, onEvent, backoff: { baseMs: 20, maxMs: 200 },
      deviceStore: typeof indexedDB === 'undefined' ? memoryDeviceStore() : indexedDbDeviceStore({ database: 'fedleaf' }),
      client: new ProtocolClient({ server: 'http://127.0.0.1:8080', version: PROTOCOL_VERSION }),
    });
  } catch (error) {
    if (error instanceof LeafStoppedError) console.log(error.status, error.message);
    throw error;
  } finally {
    data.delete();
  }
}

export async function customExecutorLeaf(): Promise<RunLeafSummary> {
  // runLeaf takes any executor with runTask: here one that trains on a number.
  return runLeaf<number>({
    server: new URL('http://127.0.0.1:8080'), population: 'p', token: 't', dataset: 42, fetch,
    executor: {
      runTask: async (task: Task, modelBytes: Uint8Array, dataset: number) =>
        ({ bytes: modelBytes, numExamples: dataset, loss: Number(task.round) }),
    },
  });
}

export async function operator(adminToken: string): Promise<PopulationStatus> {
  const admin = new ProtocolClient({ server: 'http://127.0.0.1:8080', token: adminToken, fetch });
  const created = await admin.createPopulation({
    plan, seed: 1, rounds: 2, clients_per_round: 3, lease_s: 60,
    server_optimizer: { type: 'adam', learning_rate: 0.01, beta2: 0.999 },
  });
  const momentum: ServerOptimizerSpec = { type: 'sgd', learning_rate: 1, momentum: 0.9 };
  console.log(momentum, (await admin.status(created.id)).server_optimizer.type);
  const buffered = await admin.createPopulation({
    plan, seed: 1, rounds: 40, mode: 'buffered', buffer_size: 8, concurrency: 16, max_staleness: 4,
    staleness_weight: { weight: 'polynomial', exponent: 0.5 },
  });
  const bufferedStatus = await admin.status(buffered.id);
  console.log(bufferedStatus.mode, bufferedStatus.buffered?.staleness_weight.weight, bufferedStatus.tasks_out,
    bufferedStatus.history.map((v) => `${v.round}: ${v.staleness?.mean ?? '-'} / ${v.staleness?.max ?? '-'}`));
  const { populations } = await admin.listPopulations();
  console.log(populations.map((p) => `${p.id} ${p.state} ${p.round}/${p.rounds}`), await admin.metrics());
  const leaf = new ProtocolClient({
    server: admin.server, token: created.client_token, timeoutMs: 60_000, claimMarginMs: 10_000, stallTimeoutMs: 20_000,
  });
  const claim: ClaimOutcome = await leaf.claim(created.id, { minRound: 0, waitS: 20 });
  if (claim.kind === 'task') {
    const { task } = claim;
    const model = await leaf.downloadModel(task.model_url, { etag: task.model_etag });
    if (model.kind === 'model') console.log(model.bytes.length, model.etag);
    const rows = await leaf.selectModel(created.id, task.round, [{ name: 'emb/weight', ids: Uint32Array.from([1, 5]) }]);
    const answer = await leaf.upload(task, rows);
    console.log(answer.status, answer.result?.status);
  } else if (!claim.finished) {
    console.log(claim.paused ? 'paused' : 'running', claim.retryAfterMs ?? 'no hint');
  }
  const paused = await admin.controlPopulation(created.id, 'pause');
  const finished = await admin.controlPopulation(created.id, 'finish', { reason: 'done' });
  console.log(paused.state === 'paused', finished.finish_reason);
  const issued = await admin.issueClientToken(created.id);
  const revoked = await admin.revokeClientToken(created.id, issued.id);
  const { tokens } = await admin.listClientTokens(created.id);
  console.log(issued.client_token.length, revoked.revoked_at ?? 'live', tokens.map((t) => t.id));
  // A private population's devices: a leaf enrolls and claims with its credential; the admin
  // lists (never a credential) and revokes.
  const enrolled = await leaf.enrollDevice(created.id);
  const device = new ProtocolClient({ server: 'http://127.0.0.1:8080', token: created.client_token,
    device: enrolled.credential });
  await device.claim(created.id, { device: enrolled.credential });
  const page: { devices: DeviceEntry[]; next_after: string | null } = await admin.listDevices(created.id);
  const more = page.next_after === null ? [] : (await admin.listDevices(created.id, { after: page.next_after })).devices;
  await admin.revokeDevice(created.id, enrolled.device_id);
  const store: DeviceStore = memoryDeviceStore();
  await store.save('k', { deviceId: enrolled.device_id, credential: enrolled.credential });
  console.log(page.devices.map((d) => [d.id, d.participations, d.last_round, d.revoked]), more.length,
    (await store.load('k'))?.deviceId);
  try {
    await leaf.downloadModel(leaf.modelUrl(created.id, 0), { token: false });
  } catch (error) {
    if (error instanceof ProtocolError) {
      console.log(error.status, error.code, error.retryable, error.retryAfterMs, error.retryRound, error.url);
    }
    else if (error instanceof RequestTimeoutError) console.log(error.origin, error.timeoutMs, error.phase);
    else console.log(networkErrorMessage(error));
  }
  return admin.status(created.id);
}

export async function kerasRoundTrip(modelJson: object, shards: ArrayBuffer[]): Promise<string> {
  // A Keras model (tensorflowjs_converter output) in, trained locally, and back out.
  const executor = await createExecutor();
  const { plan: imported, model, tokenOffset } = importTfjsLayersModel(executor, modelJson, shards,
    { features: { hash: 'murmur3_32', ngrams: 1, binary: true }, onWarning: (message) => console.log(message) });
  const data = executor.datasetFromTexts(['win a prize', 'meeting notes'], [1, 0], imported);
  const { bytes } = await executor.train(imported, model, data);
  data.delete();
  // ModelArtifacts for tf.io.fromMemory(exported), and the model.json + shard for files.
  const exported: ExportedTfjsModel = exportTfjsLayersModel(executor, imported, model, { weightsPath: 'w.bin' });
  const form: 'keras' | 'tfjs' | undefined = imported.train?.optimizer.epsilon_form;
  const rowZero: number[] | undefined = imported.tfjs?.mask_zero?.emb;
  const weightSpecs: TfjsWeightSpec[] = exported.weightSpecs;
  const { modelJson: out, weightData }: { modelJson: TfjsModelJson; weightData: ArrayBuffer } = exported;
  return `${tokenOffset} ${bytes.length} ${JSON.stringify(out).length} ${weightData.byteLength} ${weightSpecs.length} ` +
    `${form ?? 'keras'} ${rowZero?.length ?? 0} ${exported.format} ${exported.trainingConfig?.loss ?? 'uncompiled'} ${out.weightsManifest[0].paths[0]}`;
}

export async function functionalKeras(modelJson: object, shards: ArrayBuffer[]): Promise<string> {
  // A functional Keras model (several inputs) in, its graph plan, and back out.
  const executor = await createExecutor();
  const { plan, model, tokenOffset, tokenOffsets, sparseInputs } = importTfjsLayersModel(executor, modelJson, shards,
    { inputFeatures: { body: { text: 'body', num_buckets: 4096 } } });
  const graph: Plan = {
    model: {
      inputs: { body: { type: 'sparse_ids' }, subject: 'sparse_ids', numeric: { type: 'dense', dim: 3 } },
      layers: [{ type: 'embedding_bag', name: 'tokens', input: 'body', vocab: 4096, dim: 8 },
        { type: 'embedding_bag', name: 'subject_emb', input: 'subject', table: 'tokens', combiner: 'mean' },
        { type: 'concatenate', name: 'deep_in', inputs: ['tokens', 'subject_emb', 'numeric'] },
        { type: 'dense', name: 'h1', input: 'deep_in', units: 16, activation: 'relu' },
        { type: 'dropout', name: 'drop', input: 'h1', rate: 0.2, seed: 7 },
        { type: 'dense', name: 'out', units: 1 },
        { type: 'embedding_bag', name: 'wide', input: 'subject', vocab: 4096, dim: 1, combiner: 'sum', use_bias: true }],
      output: 'out',
      loss: 'mean_squared_error',
    },
  };
  const exported: ExportedTfjsModel = exportTfjsLayersModel(executor, plan, model, { sparseInputs });
  return `${tokenOffset ?? 'mixed'} ${Object.keys(tokenOffsets).length} ${graph.model.layers.length} ` +
    `${exported.modelTopology.class_name}`;
}

export async function readmePlanLiteral(): Promise<number> {
  // js_bindings/README.md, "TypeScript": a plan literal keeps its literal types with `satisfies Plan`.
  const literal = {
    model: { inputs: { tokens: 'sparse_ids' },
             layers: [{ type: 'embedding_bag', name: 'emb', vocab: 4096, dim: 8 }, { type: 'dense', name: 'out', units: 2 }],
             loss: 'softmax_cross_entropy' },
    train: { optimizer: { type: 'sgd', learning_rate: 0.1 } },
    updates: { 'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors' } },
  } satisfies Plan;
  const widened = { model: literal.model, train: { optimizer: { type: 'sgd', learning_rate: 0.1 } } };
  const executor = await createExecutor();
  // @ts-expect-error without `satisfies Plan` the optimizer's type widens to string
  executor.validatePlan(widened);
  // A plan kept in a .json file: parsePlan checks it with the C++ parser and types it as a Plan.
  const fromFile: unknown = JSON.parse('{"model": {}}');
  const checked: Plan = parsePlan(executor, fromFile);
  executor.validatePlan(parsePlan(executor, JSON.stringify(widened)));
  return executor.initializeModel(checked, 1).length;
}

export async function privacyCalculator(): Promise<string> {
  // js_bindings/README.md, "Privacy": both ways, the epsilon of a setting and the noise for a target.
  const settings: PrivacySettings = { devices: 3_000_000, perRound: 6500, rounds: 2000, maxParticipations: 6,
    minSeparation: 313, delta: 1e-10, noiseMultiplier: 7 };
  const plan: PrivacyPlan = await planPrivacy(settings);
  const needed: PrivacyPlan = await planPrivacy({ ...settings, noiseMultiplier: undefined, targetEpsilon: 4 },
    { simd: 'auto' });
  const feasible: boolean = plan.feasible && needed.devicesNeeded <= settings.devices;
  return `${plan.epsilon.toFixed(2)} ${plan.rho} ${needed.noiseMultiplier} ${feasible}`;
}
