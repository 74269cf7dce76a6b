// Training, evaluation and aggregation on top of the wasm module: the parts of the executor that
// run models. Datasets cross the boundary as whole buffers; training runs one slice of batches per
// wasm call and yields to the event loop between slices, so downloads and uploads (runLeaf's
// prefetch) and a page's UI keep going while a model trains.

const encoder = new TextEncoder();

export function planJson(plan) {
  if (typeof plan === 'string') return plan;
  if (plan === null || typeof plan !== 'object') throw new TypeError('plan must be an object or JSON text');
  return JSON.stringify(plan);
}

function withKind(plan, kind) {
  const object = typeof plan === 'string' ? JSON.parse(plan) : plan;
  return JSON.stringify({ ...object, kind });
}

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

function int32Labels(labels, count) {
  const out = labels instanceof Int32Array ? labels : Int32Array.from(labels);
  if (out.length !== count) throw new TypeError(`labels: expected ${count} entries, got ${out.length}`);
  return out;
}

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
  get isSparse() { return this.handle.isSparse(); }
  get labels() {
    const bytes = this.handle.labels();
    return new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  }
  /** The examples at `indices`, as a new dataset. */
  subset(indices) { return new Dataset(this.handle.subset(Uint32Array.from(indices))); }
  delete() {
    if (this.handle) this.handle.delete();
    this.handle = null;
  }
}

export function datasetApi(module) {
  return {
    /**
     * Hashed bag-of-words from raw texts, featurized as the plan's "features" section says
     * (src/core/train/text_features.h documents the tokenizer and the hash exactly).
     */
    datasetFromTexts(texts, labels, plan = {}) {
      if (!Array.isArray(texts)) throw new TypeError('texts must be an array of strings');
      const encoded = texts.map((t) => encoder.encode(t));
      const offsets = new Uint32Array(texts.length + 1);
      for (let i = 0; i < encoded.length; i++) offsets[i + 1] = offsets[i] + encoded[i].length;
      const bytes = new Uint8Array(offsets[texts.length]);
      for (let i = 0; i < encoded.length; i++) bytes.set(encoded[i], offsets[i]);
      return new Dataset(module.Dataset.fromTexts(bytes, offsets, int32Labels(labels, texts.length), planJson(plan)));
    },
    /** svmlight/libsvm text ("label idx:val ..."); indexBase 1 (default) or 0. */
    datasetFromSvmlight(text, { indexBase = 1, numFeatures = 0 } = {}) {
      return new Dataset(module.Dataset.fromSvmlight(String(text), indexBase, numFeatures));
    },
    /** Dense float rows: values is [labels.length, numColumns] row-major. */
    datasetFromDense(values, numColumns, labels) {
      const rows = Float32Array.from(values);
      return new Dataset(module.Dataset.fromDense(rows, numColumns, int32Labels(labels, labels.length)));
    },
    /** CSR: example i has ids[offsets[i] .. offsets[i+1]) with weights (empty: all 1). */
    datasetFromCsr({ offsets, ids, weights = new Float32Array(0), labels, numFeatures = 0 }) {
      return new Dataset(module.Dataset.fromCsr(Uint32Array.from(offsets), Uint32Array.from(ids),
        Float32Array.from(weights), int32Labels(labels, labels.length), numFeatures));
    },
  };
}

function metadataOf(module, bytes) {
  return module.decodeSafetensors(bytes).metadata;
}

export function trainingApi(module) {
  const api = {
    /** A fresh model for the plan, as safetensors bytes; same seed → same bytes. */
    initializeModel(plan, seed = 0) {
      return module.initializeModel(planJson(plan), seed);
    },

    /** Throws an Error naming the JSON path when the plan is invalid. */
    validatePlan(plan) {
      module.validatePlan(planJson(plan));
    },

    /** One synchronous call of the stateless executor: result safetensors bytes. */
    execute(plan, modelBytes, dataset, { taskId = '' } = {}) {
      return module.execute(planJson(plan), modelBytes, dataset.handle, taskId);
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
      const session = module.TrainingSession.create(planJson(plan), modelBytes, dataset.handle);
      const setupMs = performance.now() - t0;
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
          numExamples: dataset.size,
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
     * datasetFor(task)): what runLeaf asks model:select for.
     */
    distinctIds(source, task) {
      const dataset = typeof source?.datasetFor === 'function' ? source.datasetFor(task) : source;
      return dataset.distinctIds();
    },

    /** Evaluates the model on the dataset: {numExamples, loss, accuracy, auc?}. */
    evaluate(plan, modelBytes, dataset) {
      const bytes = module.execute(withKind(plan, 'evaluate'), modelBytes, dataset.handle, '');
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
     * row-major — softmax over the output width, or [1 - p, p] for the sigmoid loss. Labels of
     * the dataset must be valid for the loss but do not change the result.
     */
    predict(plan, modelBytes, dataset) {
      return module.predict(planJson(plan), modelBytes, dataset.handle).probabilities;
    },

    /**
     * What runLeaf calls for each task: train or evaluate the task's plan on the local data
     * (a Dataset, or an object with datasetFor(task) such as TextLeafData).
     * Resolves to {bytes, numExamples, loss}.
     */
    async runTask(task, modelBytes, source, { signal, onProgress } = {}) {
      // `source` is a Dataset, or an object that picks one per task (see TextLeafData).
      const dataset = typeof source?.datasetFor === 'function' ? source.datasetFor(task) : source;
      if ((task.kind ?? 'train') === 'evaluate') {
        const bytes = module.execute(withKind(task.plan, 'evaluate'), modelBytes, dataset.handle,
          String(task.task_id ?? ''));
        const metadata = metadataOf(module, bytes);
        return { bytes, numExamples: Number(metadata.num_examples), loss: Number(metadata.loss) };
      }
      return api.train(task.plan, modelBytes, dataset, {
        taskId: String(task.task_id ?? ''), signal, onProgress,
      });
    },

    /**
     * A round aggregator for hierarchical aggregation: addResult(bytes), merge(other),
     * numReports, totalWeight, nextModel() → safetensors bytes, checkpoint(), delete().
     */
    createRoundAggregator(plan, modelBytes) {
      return module.RoundAggregator.create(planJson(plan), modelBytes);
    },
    restoreRoundAggregator(plan, modelBytes, checkpoint) {
      return module.RoundAggregator.restore(planJson(plan), modelBytes, checkpoint);
    },
  };
  return api;
}
