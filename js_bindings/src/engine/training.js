// Training, evaluation and aggregation on top of the wasm module: the parts of the executor that
// run models. Datasets cross the boundary as whole buffers; training runs one slice of batches per
// wasm call and yields to the event loop between slices, so downloads and uploads (runLeaf's
// prefetch) and a page's UI keep going while a model trains.

import { bytesOf } from './bytes.js';
import {
  UINT32_LIMIT, float32Array, integerArg, integerArray, labelArray, stringArray, uint32Array, zeroOrOneArg,
} from './dataset_inputs.js';
import { PlanHandle, selectRequestOf, withPlan } from './plan_handle.js';
import { planJson } from './plan_json.js';
import { csrOfSparseTensor, isSparseTensorInput } from './sparse_tensor_input.js';

const inference = { inference: true };

// `text` with each lone surrogate made U+FFFD, as UTF-8 encoding makes it (where the engine lacks
// String.prototype.toWellFormed: a round trip through UTF-8).
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const wellFormed = typeof String.prototype.toWellFormed === 'function'
  ? (text) => text.toWellFormed()
  : (text) => decoder.decode(encoder.encode(text));

const yieldToEventLoop = typeof setImmediate === 'function'
  ? () => new Promise((resolve) => setImmediate(resolve))
  : () => new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });

/** A dataset living in wasm memory. Call delete() when done with it. */
export class Dataset {
  constructor(handle) {
    this.handle = handle;
  }
  get size() { return this.handle.size(); }
  get numFeatures() { return this.handle.numFeatures(); }
  get numNonzeros() { return this.handle.numNonzeros(); }
  /** Distinct feature ids: the embedding rows a leaf trains and uploads. */
  get numDistinctIds() { return this.handle.numDistinctIds(); }
  /** The same ids, sorted ascending: the rows a leaf asks model:select for. */
  distinctIds() {
    const bytes = this.handle.distinctIds();
    return new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  }
  /**
   * The sorted distinct ids of the plan's embedding table `tensor` ("<layer>/weight"): the union
   * over every input feeding it (a shared table), what model:select is asked for that table. The
   * plan: a PlanHandle (executor.loadPlan), or a plan object or its JSON text.
   */
  distinctIdsFor(plan, tensor) {
    if (plan instanceof PlanHandle) return plan.tableRows(this, tensor);
    const bytes = this.handle.distinctIdsFor(planJson(plan), String(tensor));
    return new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  }
  /** Named inputs (datasetFromInputs); 1 for the other datasets. */
  get numInputs() { return this.handle.numInputs(); }
  get isSparse() { return this.handle.isSparse(); }
  get labels() {
    const bytes = this.handle.labels();
    return new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  }
  /** The examples at `indices` (integers in [0, size), repeats allowed), as a new dataset. */
  subset(indices) {
    const size = this.size;
    return new Dataset(this.handle.subset(integerArray('indices', indices, Uint32Array, size, String(size))));
  }
  delete() {
    if (this.handle) this.handle.delete();
    this.handle = null;
  }
}

/**
 * The wasm module's round aggregator behind the same methods, taking every BytesLike in
 * addResult (the module takes views only). delete() frees it.
 */
class RoundAggregator {
  constructor(handle) {
    this.handle = handle;
  }
  /** Folds one result (safetensors); all-or-nothing, throws on bad input. */
  addResult(bytes) { this.handle.addResult(bytesOf('bytes', bytes)); }
  /** Folds another aggregator of the same plan and model in. */
  merge(other) { this.handle.merge(other instanceof RoundAggregator ? other.handle : other); }
  numReports() { return this.handle.numReports(); }
  totalWeight() { return this.handle.totalWeight(); }
  nextModel() { return this.handle.nextModel(); }
  checkpoint() { return this.handle.checkpoint(); }
  delete() { this.handle.delete(); }
}

export function datasetApi(module) {
  return {
    /**
     * Hashed bag-of-words from raw texts, featurized as the plan's "features" section says
     * (src/core/features/text_features.h documents the tokenizer and the hash exactly): the texts
     * are records [{text}] on the records path (one call into wasm), their dataset's one input
     * unnamed, so it feeds any text plan of the same "features".
     */
    datasetFromTexts(texts, labels, plan = {}) {
      stringArray('texts', texts);
      const checkedLabels = labelArray('labels', labels, texts.length);
      // A lone surrogate becomes U+FFFD, as UTF-8 encoding has always made it (JSON would carry
      // it as an escape the core's parser refuses).
      const records = JSON.stringify(texts.map((text) => ({ text: wellFormed(text) })));
      return new Dataset(module.Dataset.fromTexts(planJson(plan), records, checkedLabels));
    },
    /**
     * svmlight/libsvm text ("label idx:val ..."); indexBase 1 (default) or 0; numFeatures an
     * integer in [0, 2^32) bounding the ids, 0 (default) for max id + 1.
     */
    datasetFromSvmlight(text, { indexBase = 1, numFeatures = 0 } = {}) {
      zeroOrOneArg('indexBase', indexBase);
      integerArg('numFeatures', numFeatures, 0, UINT32_LIMIT, '2^32');
      return new Dataset(module.Dataset.fromSvmlight(String(text), indexBase, numFeatures));
    },
    /**
     * Dense float rows: values is [labels.length, numColumns] row-major, finite float32 numbers;
     * numColumns an integer in [1, 2^32); labels integers in [0, 2^31).
     */
    datasetFromDense(values, numColumns, labels) {
      const rows = float32Array('values', values);
      integerArg('numColumns', numColumns, 1, UINT32_LIMIT, '2^32');
      return new Dataset(module.Dataset.fromDense(rows, numColumns, labelArray('labels', labels)));
    },
    /**
     * CSR: example i has ids[offsets[i] .. offsets[i+1]) with weights (empty: all 1). ids and
     * offsets integers in [0, 2^32), labels in [0, 2^31), weights finite float32 numbers;
     * numFeatures an integer in [0, 2^32) above every id, 0 (default) for max id + 1.
     */
    datasetFromCsr(csr) {
      if (csr === null || typeof csr !== 'object') {
        throw new TypeError('datasetFromCsr: expected {offsets, ids, weights?, labels, numFeatures?}');
      }
      const { offsets, ids, weights = new Float32Array(0), labels, numFeatures = 0 } = csr;
      integerArg('numFeatures', numFeatures, 0, UINT32_LIMIT, '2^32');
      return new Dataset(module.Dataset.fromCsr(uint32Array('offsets', offsets), uint32Array('ids', ids),
        float32Array('weights', weights), labelArray('labels', labels), numFeatures));
    },
    /**
     * Several named inputs, for a plan whose model reads them by name: `inputs` is
     * {name: {ids, offsets, weights?, numFeatures?} (sparse ids, as datasetFromCsr) |
     *  {indices, values, denseShape} (a SparseTensor in COO form: sparse_tensor_input.js) |
     *  {dense, width} (float rows)}, every input with the same number of examples; `labels` the
     * class labels (integers in [0, 2^31)), or {targets, width} for mean_squared_error (finite
     * float32 numbers, [examples, width] row-major).
     */
    datasetFromInputs(inputs, labels) {
      if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) {
        throw new TypeError('datasetFromInputs: expected {name: {ids, offsets, weights?, numFeatures?} | {indices, values, denseShape} | ' +
          '{dense, width}}');
      }
      const columns = Object.entries(inputs).map(([name, input]) => {
        if (input === null || typeof input !== 'object') {
          throw new TypeError(`inputs.${name}: expected {ids, offsets, weights?, numFeatures?}, {indices, values, denseShape} or {dense, width}`);
        }
        if (input.dense !== undefined) {
          integerArg(`inputs.${name}.width`, input.width, 1, UINT32_LIMIT, '2^32');
          return { name, sparse: false, dense: float32Array(`inputs.${name}.dense`, input.dense), width: input.width };
        }
        // A SparseTensor in COO form (indices, values, denseShape) becomes the same CSR rows.
        const csr = isSparseTensorInput(input) ? csrOfSparseTensor(`inputs.${name}`, input) : input;
        const { offsets, ids, weights = new Float32Array(0), numFeatures = 0 } = csr;
        integerArg(`inputs.${name}.numFeatures`, numFeatures, 0, UINT32_LIMIT, '2^32');
        return {
          name,
          sparse: true,
          offsets: uint32Array(`inputs.${name}.offsets`, offsets),
          ids: uint32Array(`inputs.${name}.ids`, ids),
          weights: float32Array(`inputs.${name}.weights`, weights),
          numFeatures,
        };
      });
      if (labels !== null && typeof labels === 'object' && labels.targets !== undefined) {
        const { targets, width = 1 } = labels;
        integerArg('labels.width', width, 1, UINT32_LIMIT, '2^32');
        return new Dataset(module.Dataset.fromInputsWithTargets(columns, float32Array('labels.targets', targets), width));
      }
      return new Dataset(module.Dataset.fromInputs(columns, labelArray('labels', labels)));
    },
  };
}

function metadataOf(module, bytes) {
  return module.decodeSafetensors(bytes).metadata;
}

// The dataset a task runs on: `source` itself, or the one source.datasetFor(task, plan) picks.
const datasetOf = (source, task, plan) =>
  (typeof source?.datasetFor === 'function' ? source.datasetFor(task, plan) : source);

export function trainingApi(module) {
  const api = {
    /**
     * The plan parsed once (a PlanHandle, plan_handle.js): what every call below takes in place of
     * the plan object, without parsing it again; delete() it when done. inference: a plan that
     * needs only its model (predict, evaluate: "train" and "updates" may be absent).
     */
    loadPlan(plan, { inference = false } = {}) {
      return new PlanHandle(module.Plan.parse(planJson(plan), Boolean(inference)));
    },

    /** A fresh model for the plan, as safetensors bytes; same seed (an integer in [0, 2^53)) → same bytes. */
    initializeModel(plan, seed = 0) {
      integerArg('seed', seed, 0, 2 ** 53, '2^53');
      return withPlan(module, plan, (handle) => module.initializeModel(handle, seed));
    },

    /** Throws an Error naming the JSON path when the plan is invalid. */
    validatePlan(plan) {
      module.validatePlan(planJson(plan));
    },

    /** One synchronous call of the stateless executor: result safetensors bytes. */
    execute(plan, modelBytes, dataset, { taskId = '' } = {}) {
      const bytes = bytesOf('modelBytes', modelBytes);
      return withPlan(module, plan, (handle) => module.execute(handle, bytes, dataset.handle, taskId));
    },

    /**
     * Trains locally; resolves to {bytes (the update, safetensors), numExamples, loss, accuracy,
     * steps, setupMs (reading the model: header, dense parameters, the rows trained)}. Byte-identical to execute() of the same inputs. Yields to the event loop every
     * sliceMs; onProgress(step, meanLoss, totalSteps) after every slice; signal aborts between
     * slices. modelBytes stay in JS and are read again for the update: they must not change
     * until the promise settles.
     */
    async train(plan, modelBytes, dataset, { taskId = '', signal, onProgress, sliceMs = 25 } = {}) {
      const t0 = performance.now();
      const bytes = bytesOf('modelBytes', modelBytes);
      // The session holds the plan as long as it lives: a handle parsed for it alone goes at once.
      const session = withPlan(module, plan, (handle) => module.TrainingSession.create(handle, bytes, dataset.handle));
      const setupMs = performance.now() - t0;
      // The session keeps the dataset's memory alive: the caller may delete() it while this trains.
      const numExamples = dataset.size;
      try {
        let stepsPerSlice = 1;
        for (;;) {
          signal?.throwIfAborted();
          const t0 = performance.now();
          const more = session.step(stepsPerSlice);
          const elapsed = performance.now() - t0;
          onProgress?.(session.completedSteps(), session.meanLoss(), session.totalSteps());
          if (!more) break;
          // Aim each slice at sliceMs of compute.
          stepsPerSlice = Math.max(1, Math.min(4096,
            Math.round(stepsPerSlice * Math.min(4, sliceMs / Math.max(elapsed, 0.01)))));
          await yieldToEventLoop();
        }
        return {
          bytes: session.result(taskId),
          numExamples,
          loss: session.meanLoss(),
          accuracy: session.accuracy(),
          steps: session.completedSteps(),
          setupMs,
        };
      } finally {
        session.delete();
      }
    },

    /**
     * The sorted distinct ids of the data a task trains on (a Dataset, or an object with
     * datasetFor(task)): what runLeaf asks model:select for. With `tensor` (an embedding table of
     * the task's plan), the ids of that table: the union over the inputs feeding it.
     */
    distinctIds(source, task, tensor) {
      const dataset = datasetOf(source, task);
      if (tensor !== undefined && task?.plan) return dataset.distinctIdsFor(task.plan, tensor);
      return dataset.distinctIds();
    },

    /**
     * What a train task asks model:select for: the tables its plan (a PlanHandle, else task.plan)
     * downloads by select, each with the rows the task's data touch (PlanHandle.selectRequest).
     */
    selectRequest(source, task, plan = task.plan) {
      const dataset = datasetOf(source, task, plan instanceof PlanHandle ? plan : undefined);
      return withPlan(module, plan, (handle) => selectRequestOf(handle, dataset));
    },

    /** Evaluates the model on the dataset: {numExamples, loss, accuracy, auc?}. */
    evaluate(plan, modelBytes, dataset) {
      const model = bytesOf('modelBytes', modelBytes);
      const bytes = withPlan(module, plan, (handle) => module.evaluate(handle, model, dataset.handle, ''), inference);
      const metadata = metadataOf(module, bytes);
      const out = {
        numExamples: Number(metadata.num_examples),
        loss: Number(metadata.loss),
        accuracy: Number(metadata.accuracy),
      };
      if (metadata.auc !== undefined) out.auc = Number(metadata.auc);
      return out;
    },

    /**
     * Class probabilities of the model on the dataset: a Float32Array [dataset.size, classes]
     * row-major — softmax over the output width, or [1 - p, p] for the sigmoid loss; for
     * mean_squared_error the model's outputs [dataset.size, output width] (the dataset then
     * carries float targets, any values). The plan
     * needs only its model ({model}). Labels of the dataset must be valid for the loss but do not
     * change the result.
     */
    predict(plan, modelBytes, dataset) {
      const bytes = bytesOf('modelBytes', modelBytes);
      return withPlan(module, plan, (handle) => module.predict(handle, bytes, dataset.handle), inference).probabilities;
    },

    /**
     * What runLeaf calls for each task: train or evaluate the task's plan (`plan`: its PlanHandle
     * when the caller holds one, else task.plan) on the local data (a Dataset, or an object with
     * datasetFor(task, plan) such as a LeafData). Resolves to {bytes, numExamples, loss}.
     */
    async runTask(task, modelBytes, source, { signal, onProgress, plan = task.plan } = {}) {
      // `source` is a Dataset, or an object that picks one per task (see LeafData).
      const dataset = datasetOf(source, task, plan instanceof PlanHandle ? plan : undefined);
      if ((task.kind ?? 'train') === 'evaluate') {
        const model = bytesOf('modelBytes', modelBytes);
        const taskId = String(task.task_id ?? '');
        const bytes = withPlan(module, plan, (handle) => module.evaluate(handle, model, dataset.handle, taskId), inference);
        const metadata = metadataOf(module, bytes);
        return { bytes, numExamples: Number(metadata.num_examples), loss: Number(metadata.loss) };
      }
      return api.train(plan, modelBytes, dataset, {
        taskId: String(task.task_id ?? ''), signal, onProgress,
      });
    },

    /**
     * Local training: the model with one update (a train() or execute() result) applied, as
     * safetensors — model + update for every tensor of the plan's updates. None of the robust
     * rules a federated round applies to an untrusted report (clip, row_clip, min_contributors,
     * max_examples_per_report; clipped_weighted_mean folds as weighted_mean): a round of one report
     * (createRoundAggregator) would leave most of it out.
     */
    applyUpdate(plan, modelBytes, update) {
      return module.applyUpdate(planJson(plan), bytesOf('modelBytes', modelBytes), bytesOf('update', update));
    },

    /**
     * A round aggregator for hierarchical aggregation: addResult(bytes), merge(other),
     * numReports, totalWeight, nextModel() → safetensors bytes, checkpoint(), delete(). It folds
     * as the server does, with the plan's robust rules (for local training: applyUpdate).
     */
    createRoundAggregator(plan, modelBytes) {
      return new RoundAggregator(
        module.RoundAggregator.create(planJson(plan), bytesOf('modelBytes', modelBytes)));
    },
    restoreRoundAggregator(plan, modelBytes, checkpoint) {
      return new RoundAggregator(module.RoundAggregator.restore(planJson(plan),
        bytesOf('modelBytes', modelBytes), bytesOf('checkpoint', checkpoint)));
    },
  };
  return api;
}
