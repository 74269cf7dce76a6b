// Types of the fedleaf JS API: every export of src/index.js. Checked by `tsc --noEmit` over
// tests/types/usage.ts (scripts/test.sh), which calls each of them the way the repository does.

// ---- versions

/** The release: CMake's project version, the same as package.json and Executor.version. */
export const VERSION: string;
/** Fedleaf-Version sent with every request: MAJOR.MINOR of VERSION. */
export const PROTOCOL_VERSION: string;

// ---- tensors

export type DType = 'F32' | 'F64' | 'I32' | 'I64' | 'U8';
export type TypedArray = Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;
/**
 * Bytes in: a Uint8Array, another view of bytes (any TypedArray, a DataView), or an ArrayBuffer;
 * anything else throws a TypeError naming the argument.
 */
export type BytesLike = Uint8Array | ArrayBufferView | ArrayBuffer;

/** A dense tensor: row-major data of `shape`. `dtype` is inferred from `data` when omitted. */
export interface DenseTensor {
  dtype?: DType;
  shape: number[];
  data: TypedArray | number[];
}

/**
 * A sparse component tuple. `coo`: indices flat row-major [nnz, rank], values [nnz].
 * `row_sparse`: indices [nrows], values flat [nrows, ...dense_shape.slice(1)].
 * BigInt64Array indices travel as I64, Int32Array as I32.
 */
export interface SparseTensor {
  encoding: 'coo' | 'row_sparse';
  dtype?: DType;
  indices: BigInt64Array | Int32Array | number[];
  values: TypedArray | number[];
  dense_shape: number[];
}

export type Tensor = DenseTensor | SparseTensor;
export type Metadata = Record<string, string>;

/** What decodeSafetensors returns: typed arrays of the stored dtypes. */
export interface DecodedDenseTensor {
  dtype: DType;
  shape: number[];
  data: TypedArray;
}
export interface DecodedSparseTensor {
  encoding: 'coo' | 'row_sparse';
  dtype: DType;
  indices: BigInt64Array | Int32Array;
  values: TypedArray;
  dense_shape: number[];
}
export type DecodedTensor = DecodedDenseTensor | DecodedSparseTensor;

/** Errors from the C++ core: the core's message, and its error class in `code`. */
export interface FedleafError extends Error {
  code: 'InvalidInput' | 'NotFound' | 'Conflict' | 'Error' | 'InternalError';
}

// ---- the plan (every field, its default and range: PLAN.md in this package; the C++ parsers
// agree with these types field by field: tests/js/plan_types.test.mjs)

export type Aggregator = 'sum' | 'weighted_mean' | 'mean_over_contributors' | 'count' | 'clipped_weighted_mean';

/**
 * A layer of the plan's model graph. `input` names what it reads (a model input or an earlier
 * layer; default the previous layer, or the only input), `inputs` the several tensors
 * concatenate, add and multiply read.
 */
export type Layer =
  /** use_bias: a dense "<name>/bias" [dim] added to every example (sum + use_bias: Keras's Dense on a sparse input). */
  | { type: 'embedding_bag'; name: string; vocab: number; dim: number; combiner?: 'sum' | 'mean' | 'sqrtn';
      input?: string; initializer?: 'uniform' | 'zeros'; init_scale?: number; use_bias?: boolean }
  /** A second lookup of an earlier embedding_bag's table (one parameter, both lookups train it). */
  | { type: 'embedding_bag'; name: string; table: string; vocab?: number; dim?: number;
      combiner?: 'sum' | 'mean' | 'sqrtn'; input?: string }
  | { type: 'dense'; name: string; units: number; activation?: 'relu' | 'sigmoid' | 'tanh'; use_bias?: boolean;
      initializer?: 'glorot_uniform' | 'zeros'; input?: string }
  | { type: 'relu' | 'sigmoid' | 'tanh'; name?: string; input?: string }
  /** Inverted dropout while training (seeded, identical native and wasm); the identity otherwise. */
  | { type: 'dropout'; name?: string; rate: number; seed?: number; input?: string }
  /** `input` is refused (concatenate, add and multiply read `inputs`, at least two names). */
  | { type: 'concatenate' | 'add' | 'multiply'; name?: string; inputs: string[]; input?: never };

/** A model input: ids (CSR, optional weights) or dense float rows of width `dim`; `features` says how records fill it. */
export type ModelInput =
  | 'sparse_ids'
  | { type: 'sparse_ids'; features?: RecordFeatures }
  | { type: 'dense'; dim: number; features?: RecordFeatures };

export interface UpdateSpec {
  encoding: 'dense' | 'row_sparse' | 'coo';
  aggregator: Aggregator;
  clip_norm?: number;
  /** Fixed bound, or adaptive with `quantile` (the bound follows that quantile of the reports' sizes; the number is the first round's bound). */
  clip?: 'off' | ({ rms: number } | { norm: number }) & { quantile?: number; learning_rate?: number };
  download?: 'full' | 'select';
  max_select_rows?: number;
  select_padding?: { multiple: number } | { count: number };
  /**
   * row_sparse tensors with an rms clip: a report's rows whose rms exceeds this multiple (in
   * [1, 1e6]) of the round's rms bound are scaled down to it; default 10 for them, 'off' otherwise.
   */
  row_clip?: 'off' | number;
  /**
   * mean_over_contributors only: a row changes only when at least this many reports (an integer in
   * [1, 2^31]; 1 is off) sent it in the round; default 2; other aggregators take only 'off'.
   */
  min_contributors?: 'off' | number;
  /**
   * How the leaf writes this tensor's upload (default f32 values, i64 ids; `u32` needs a sparse
   * encoding, `delta_varint` needs `row_sparse`).
   */
  compression?: { values?: 'f32' | 'f16' | 'int8'; ids?: 'i64' | 'u32' | 'delta_varint' };
  /** The dtype of this tensor's values in a model:select answer (default f32). */
  download_values?: 'f32' | 'f16';
}

/** How featurizeRecords computes one input from records (src/core/features/input_features.h). */
export type RecordFeatures =
  | ({ text: string } & TextFeatures)
  | { column: string; hash_buckets: number; seed?: number }
  | { cross: string[]; hash_buckets: number; seed?: number }
  | { numeric: Array<{ field: string; transform?: 'none' | 'log1p' | { standardize: { mean: number; std: number } };
                       clip?: [number, number]; default?: number }> };

/** A task's plan: the model, how to train it, and how each tensor's update travels and folds. */
export interface Plan {
  /** The plan format it is written in (default: the leaf's own); a newer one is refused. */
  format_version?: number;
  kind?: 'train' | 'evaluate';
  model: {
    inputs: Record<string, ModelInput>;
    layers: Layer[];
    /** The output layer's name; default the last layer. */
    output?: string;
    loss: 'softmax_cross_entropy' | 'sigmoid_cross_entropy' | 'mean_squared_error';
  };
  train?: {
    optimizer: { type: 'sgd' | 'momentum' | 'adam'; learning_rate: number; momentum?: number;
                 beta1?: number; beta2?: number; epsilon?: number;
                 /**
                  * Adam's ε (src/core/train/optimizer.h): 'keras' (default) lr·sqrt(1-β2^t)/(1-β1^t)·m/(sqrt(v)+ε),
                  * ε inside the bias correction as in Keras (Python); 'tfjs' lr·m̂/(sqrt(v̂)+ε), outside it as in
                  * TF.js (what importTfjsLayersModel sets for a model TF.js saved).
                  */
                 epsilon_form?: 'keras' | 'tfjs' };
    epochs?: number;
    batch_size?: number;
    shuffle?: boolean;
    shuffle_seed?: number;
    clip_norm?: number;
  };
  updates?: Record<string, UpdateSpec>;
  /** A fixed cap, 'off', or adaptive: the first round's cap, then a multiple of the median claim (default {initial: 10000, median_multiple: 2}). */
  max_examples_per_report?: number | 'off' | { initial: number; median_multiple: number };
  features?: TextFeatures;
  eval?: { batch_size?: number };
  /** What importTfjsLayersModel keeps of the Keras model for exportTfjsLayersModel; the core does not read it. */
  tfjs?: TfjsPlanOrigin;
}

/**
 * A plan's "tfjs" section (js_bindings/src/interop/tfjs_plan_origin.js): what its model does not
 * say of the Keras model it was imported from, so the export gives that model back.
 */
export interface TfjsPlanOrigin {
  name?: string;
  /** Exported as a functional model even when the plan is a chain. */
  functional?: boolean;
  /** The training config's loss as written. */
  loss?: string;
  /** By plan input: its InputLayer's name and dtype where they differ from the export's own. */
  inputs?: Record<string, { name?: string; dtype?: 'float32' | 'int32' }>;
  /** By embedding_bag owning a table: its pooling layer's name. */
  poolings?: Record<string, string>;
  /** By embedding_bag: row 0 of an Embedding(vocab + 1, mask_zero), exported in front of the table. */
  mask_zero?: Record<string, number[]>;
  /** The Activation layer the output's sigmoid or softmax was. */
  output_activation?: string;
}

/** How raw text becomes hashed ids (src/core/train/text_features.h has meaning and defaults). */
export interface TextFeatures {
  hash?: 'murmur3_32';
  num_buckets?: number;
  ngrams?: number;
  signed?: boolean;
  lowercase?: boolean;
  binary?: boolean;
  skip_headers?: boolean;
  min_token_length?: number;
  max_token_length?: number;
  seed?: number;
}

/** A plan as an object or as JSON text. */
export type PlanInput = Plan | string;

/**
 * A plan kept as JSON (a .json file's text, or what JSON.parse or a JSON import gave) checked by
 * the C++ parser every leaf and the server run, as a task would run it: returns it as a Plan (the
 * object, or the one parsed from the text), or throws an Error with code 'InvalidInput' naming the
 * field and the rule, e.g. "plan.train.optimizer.learning_rate: expected a number > 0". Anything
 * but an object or a string throws a TypeError.
 */
export function parsePlan(executor: Pick<Executor, 'validatePlan'>, json: unknown): Plan;

/** An embedding table of a plan's model, as the C++ parse found it (core/train/plan_tables.h). */
export interface PlanTable {
  /** "<owner>/weight" */
  name: string;
  /** The embedding_bag layer owning it. */
  owner: string;
  /** The embedding_bag layers reading it, the owner first. */
  lookups: string[];
  /** The model inputs feeding it, in the order the layers first read them. */
  inputs: string[];
  vocab: number;
  dim: number;
  /** How a leaf downloads it: "select" (model:select) or "full" (with the model). */
  download: 'select' | 'full';
  /** select: the most rows a request may ask (0: no cap). */
  maxSelectRows: number;
  /** select: the random ids a request adds. */
  padding: { multiple: number } | { count: number } | null;
}

/** One table of a model:select request, before padding: the rows the data touch, and its rules. */
export interface SelectTable {
  name: string;
  /** Sorted, unique: the union over the inputs feeding the table. */
  ids: Uint32Array;
  vocab: number;
  maxSelectRows: number;
  padding: { multiple: number } | { count: number } | null;
}

/**
 * A plan parsed once by the C++ core and held in wasm memory (executor.loadPlan): every call
 * taking a plan takes it without parsing the plan again. delete() it when done (a training
 * session started with it keeps what it needs).
 */
export class PlanHandle {
  private constructor(handle: unknown);
  readonly kind: 'train' | 'evaluate';
  /** The model's embedding tables, by owner layer. */
  readonly tables: PlanTable[];
  /** The sorted distinct ids the dataset holds for table `tensor`: the union over its inputs. */
  tableRows(dataset: Dataset, tensor: string): Uint32Array;
  /** The tables downloading by select, with the rows the dataset touches in each. */
  selectRequest(dataset: Dataset): SelectTable[];
  /** The rows the dataset touches, summed over the tables. */
  touchedRows(dataset: Dataset): number;
  delete(): void;
}

/** A plan: its object, its JSON text, or the handle of its parse. */
export type AnyPlan = PlanInput | PlanHandle;

// ---- datasets

/** A dataset living in wasm memory. Call delete() when done with it. */
export class Dataset {
  private constructor(handle: unknown);
  readonly size: number;
  readonly numFeatures: number;
  readonly numNonzeros: number;
  /** Distinct feature ids: the embedding rows a leaf trains and uploads. */
  readonly numDistinctIds: number;
  readonly isSparse: boolean;
  readonly labels: Int32Array;
  /** The distinct ids, sorted ascending: the rows a leaf asks model:select for. */
  distinctIds(): Uint32Array;
  /** The sorted distinct ids of the plan's embedding table `tensor`: the union over its inputs. */
  distinctIdsFor(plan: AnyPlan, tensor: string): Uint32Array;
  /** Named inputs (datasetFromInputs); 1 for the other datasets. */
  readonly numInputs: number;
  /** The examples at `indices` (integers in [0, size), repeats allowed), as a new dataset. */
  subset(indices: ArrayLike<number>): Dataset;
  delete(): void;
}

/** Texts and labels of one part of a leaf's data (TextLeafData). */
export interface TextPart {
  texts: string[];
  labels: ArrayLike<number>;
}

/**
 * Something that picks the dataset of each task (LeafData does); `plan` is the task's plan
 * parsed once when the caller holds it.
 */
export interface DatasetSource {
  datasetFor(task: TaskLike, plan?: PlanHandle): Dataset;
}

/** What runTask, distinctIds and runLeaf train on: a Dataset, or a source picking one per task. */
export type TaskData = Dataset | DatasetSource;

/** Records (flat plain objects) and labels of one part of a leaf's data. */
export interface RecordPart {
  records: RecordValues[];
  labels: ArrayLike<number>;
}

/** True when the plan's model takes records: some model input has a "features" section. */
export function planTakesRecords(plan: PlanInput | undefined): boolean;

/**
 * A leaf's local data, the one type runLeaf takes for every plan: records and labels per part,
 * featurized with each task's plan on first use, and again only when a plan featurizes
 * differently. A records plan reads the records' fields (executor.datasetFromRecords); a text
 * plan reads each record's `text` (a string: a TypeError naming the record otherwise) with its
 * top-level "features". Evaluate tasks use `eval` when given, else `train`.
 */
export class LeafData implements DatasetSource {
  constructor(executor: Executor, parts: { train: RecordPart; eval?: RecordPart });
  readonly numTrainExamples: number;
  /**
   * The embedding rows the training part touches under the plan: a records plan's distinct ids
   * over its tables, a text plan's distinct ids.
   */
  touchedRows(plan: Plan): number;
  datasetFor(task: TaskLike, plan?: PlanHandle): Dataset;
  delete(): void;
}

/** A LeafData of texts: each text is the record {text}. */
export class TextLeafData extends LeafData {
  constructor(executor: Executor, parts: { train: TextPart; eval?: TextPart });
}

/** A LeafData of records (the same constructor). */
export class RecordLeafData extends LeafData {}

// ---- training, evaluation, aggregation

export interface TrainOptions {
  taskId?: string;
  signal?: AbortSignal;
  /** After every slice of batches: steps done, mean loss so far, total steps. */
  onProgress?: (step: number, meanLoss: number, totalSteps: number) => void;
  /** Milliseconds of compute between yields to the event loop (default 25). */
  sliceMs?: number;
}

export interface TrainResult {
  /** The update, as safetensors. */
  bytes: Uint8Array;
  numExamples: number;
  loss: number;
  accuracy: number;
  steps: number;
  /** Milliseconds spent reading the model (header, dense parameters, the rows trained). */
  setupMs: number;
}

export interface EvaluateResult {
  numExamples: number;
  loss: number;
  accuracy: number;
  auc?: number;
}

/** What runTask resolves to: the result to upload and what runLeaf reports of it. */
export interface TaskResult {
  bytes: Uint8Array;
  numExamples: number;
  loss: number;
  setupMs?: number;
}

/** Aggregation of one round in this process (hierarchical aggregation). Free with delete(). */
export interface RoundAggregator {
  /** Folds one result (safetensors); all-or-nothing, throws on bad input. */
  addResult(bytes: BytesLike): void;
  /** Folds another aggregator of the same plan and model in. */
  merge(other: RoundAggregator): void;
  numReports(): number;
  totalWeight(): number;
  /** The model plus the aggregated update, as safetensors. */
  nextModel(): Uint8Array;
  /** The accumulator's state, for restoreRoundAggregator. */
  checkpoint(): Uint8Array;
  delete(): void;
}

/** A record for featurizeRecords: a flat plain object. */
export type RecordScalar = string | number | boolean;
export type RecordValues = Record<string, RecordScalar | RecordScalar[] | null | undefined>;
/** One plan input's columns from featurizeRecords. */
export type RecordInputColumns =
  | { name: string; kind: 'sparse_ids'; offsets: Uint32Array; ids: Uint32Array; weights: Float32Array; numFeatures: number }
  | { name: string; kind: 'dense'; dense: Float32Array; width: number };

export interface ExecutorOptions {
  /** 'auto' (default): the SIMD build when WebAssembly.validate accepts SIMD. */
  simd?: 'auto' | boolean;
  /**
   * A folder serving fedleaf_core*.{js,wasm} to load from; default the package's dist/. A
   * relative one is resolved when createExecutor runs: against the page's base URL, in a worker
   * against the worker's URL, in Node against the current directory.
   */
  distUrl?: string | URL;
}

export interface Executor {
  /** The fedleaf version, the same as VERSION, package.json and CMake's project version. */
  readonly version: string;
  /** Whether the SIMD build was loaded. */
  readonly simd: boolean;
  /** Bytes of the wasm module's linear memory now: its high-water mark (it never shrinks). */
  readonly wasmMemoryBytes: number;

  encodeSafetensors(tensors: Record<string, Tensor>, metadata?: Metadata): Uint8Array;
  decodeSafetensors(bytes: BytesLike): { tensors: Record<string, DecodedTensor>; metadata: Metadata };
  /** Sorts indices and sums duplicates. */
  coalesce(tensor: SparseTensor): DecodedSparseTensor;

  /*
   * Dataset inputs are checked before they reach wasm: ids and offsets must be integers in
   * [0, 2^32), labels integers in [0, 2^31), weights and dense values numbers finite in float32;
   * anything else throws (a TypeError for a non-number, a RangeError for a number out of its rule)
   * naming the argument and the index, e.g. "ids[1]: 4294967301 is not an integer in [0, 2^32)".
   */

  /** Hashed bag-of-words from raw texts (strings), featurized as the plan's "features" say. */
  datasetFromTexts(texts: string[], labels: ArrayLike<number>, plan?: PlanInput | { features?: TextFeatures }): Dataset;
  /**
   * svmlight/libsvm text ("label idx:val ..."); indexBase 1 (default) or 0; numFeatures an
   * integer in [0, 2^32) above every id, 0 (default) for max id + 1.
   */
  datasetFromSvmlight(text: string, options?: { indexBase?: 0 | 1; numFeatures?: number }): Dataset;
  /** Dense float rows: values is [labels.length, numColumns] row-major; numColumns in [1, 2^32). */
  datasetFromDense(values: ArrayLike<number>, numColumns: number, labels: ArrayLike<number>): Dataset;
  /**
   * CSR: example i has ids[offsets[i] .. offsets[i+1]) with weights (empty: all 1); numFeatures an
   * integer in [0, 2^32) above every id, 0 (default) for max id + 1.
   */
  datasetFromCsr(csr: { offsets: ArrayLike<number>; ids: ArrayLike<number>; weights?: ArrayLike<number>;
                        labels: ArrayLike<number>; numFeatures?: number }): Dataset;
  /**
   * Several named inputs for a plan whose model reads them by name: sparse ids (as datasetFromCsr),
   * a SparseTensor in COO form (SparseTensorInput: nonzero columns as ids, values as weights), or
   * dense float rows; class labels, or {targets, width} for mean_squared_error.
   */
  datasetFromInputs(inputs: Record<string, { ids: ArrayLike<number>; offsets: ArrayLike<number>;
                                             weights?: ArrayLike<number>; numFeatures?: number }
                                           | SparseTensorInput
                                           | { dense: ArrayLike<number>; width: number }>,
                    labels: ArrayLike<number> | { targets: ArrayLike<number>; width?: number }): Dataset;

  /**
   * The columns of every input of the plan that has "features" (text, column, cross, numeric),
   * featurized from plain records by the C++ core, in the order of the inputs' names. A record is
   * a flat plain object (strings, finite numbers, booleans, null, arrays of those); a broken one
   * throws an Error naming it: "records[17].length: NaN is not a finite number ...".
   */
  featurizeRecords(records: RecordValues[], plan: AnyPlan): RecordInputColumns[];
  /**
   * A dataset of several named inputs from plain records, featurized and built in wasm by one
   * call (the dataset of featurizeRecords then datasetFromInputs); labels one per record, or
   * {targets, width} for mean_squared_error. Errors as featurizeRecords'.
   */
  datasetFromRecords(records: RecordValues[], labels: ArrayLike<number> | { targets: ArrayLike<number>; width?: number },
                     plan: AnyPlan): Dataset;
  /**
   * The plan parsed once (an Error naming the JSON path when invalid), for the calls below in
   * place of the plan; inference: a plan needing only its model (predict, evaluate).
   */
  loadPlan(plan: PlanInput, options?: { inference?: boolean }): PlanHandle;
  /** A fresh model for the plan, as safetensors; same seed, same bytes. */
  initializeModel(plan: AnyPlan, seed?: number): Uint8Array;
  /** Throws an Error naming the JSON path when the plan is invalid. */
  validatePlan(plan: PlanInput): void;
  /** One synchronous call of the stateless executor: the result as safetensors. */
  execute(plan: AnyPlan, modelBytes: BytesLike, dataset: Dataset, options?: { taskId?: string }): Uint8Array;
  /** Trains locally in slices that yield to the event loop; byte-identical to execute(). */
  train(plan: AnyPlan, modelBytes: BytesLike, dataset: Dataset, options?: TrainOptions): Promise<TrainResult>;
  evaluate(plan: AnyPlan, modelBytes: BytesLike, dataset: Dataset): EvaluateResult;
  /**
   * Class probabilities of the model on the dataset: [dataset.size, classes] row-major; classes is
   * the output width for softmax losses, 2 ([1 - p, p]) for the sigmoid loss; for
   * mean_squared_error the outputs themselves [dataset.size, output width]. The plan needs only
   * its model (`{model}`: inference). The dataset's labels must be valid for the loss but do not
   * change the result.
   */
  predict(plan: AnyPlan, modelBytes: BytesLike, dataset: Dataset): Float32Array;
  /**
   * The sorted distinct ids of the data a task trains on: the rows runLeaf asks model:select for;
   * with `tensor`, those of that embedding table of the task's plan (the union over its inputs).
   */
  distinctIds(source: TaskData, task?: TaskLike, tensor?: string): Uint32Array;
  /** What runLeaf asks model:select for: the select tables of `plan` (default task.plan), each with its rows. */
  selectRequest(source: TaskData, task: TaskLike, plan?: AnyPlan): SelectTable[];
  /** What runLeaf calls per task: train or evaluate the task's plan (`plan`: its handle, else task.plan). */
  runTask(task: TaskLike, modelBytes: BytesLike, source: TaskData,
          options?: { signal?: AbortSignal; onProgress?: (step: number, loss: number) => void; plan?: AnyPlan }): Promise<TaskResult>;
  /**
   * Local training: the model with one update (a train() result) applied, as safetensors — model +
   * update for every tensor of the plan's updates, without the robust rules of a federated round
   * (clip, row_clip, min_contributors, max_examples_per_report; clipped_weighted_mean folds as
   * weighted_mean).
   */
  applyUpdate(plan: PlanInput, modelBytes: BytesLike, update: BytesLike): Uint8Array;
  /** Aggregates reports as a round on the server does, the plan's robust rules included. */
  createRoundAggregator(plan: PlanInput, modelBytes: BytesLike): RoundAggregator;
  restoreRoundAggregator(plan: PlanInput, modelBytes: BytesLike, checkpoint: BytesLike): RoundAggregator;
}

/** Loads the wasm module (SIMD or baseline build) and returns an executor. */
export function createExecutor(options?: ExecutorOptions): Promise<Executor>;
/** True when this engine validates wasm SIMD (v128) instructions. */
export function wasmSimdSupported(): boolean;
/** A byte count for people: "512 B", "1.5 kB", "18.2 MB", "1.07 GB"; "–" when not finite. */
export function formatBytes(bytes: number): string;

// ---- the protocol (src/server/README.md has every field and status)

/** A task as the server hands it out (claim). URLs are relative to the server. */
export interface Task {
  task_id: number | string;
  population: string;
  round: number;
  kind: 'train' | 'evaluate';
  lease_token: string;
  /** Unix seconds. */
  lease_expires_at: number;
  plan: Plan;
  model_url: string;
  model_etag: string;
  upload_url: string;
}

/** What the executor's task methods read of a task. */
export interface TaskLike {
  kind?: 'train' | 'evaluate';
  plan?: Plan;
  task_id?: number | string;
}

export type ClaimOutcome =
  | { kind: 'task'; task: Task }
  | { kind: 'no_task'; finished: boolean; paused: boolean; retryAfterMs: number | undefined };

export type ModelOutcome =
  | { kind: 'model'; bytes: Uint8Array; etag: string | null }
  | { kind: 'not_modified'; etag: string };

/** The server's error codes (src/server/README.md), or 'http' for a status it does not use. */
export type ProtocolErrorCode =
  | 'invalid_input' | 'unauthorized' | 'forbidden' | 'not_found' | 'method_not_allowed'
  | 'request_timeout' | 'conflict' | 'gone' | 'payload_too_large' | 'upgrade_required'
  | 'too_many_requests' | 'internal' | 'unavailable' | 'http'
  | 'device_required' | 'max_participations' | 'min_separation';

/** An answer a call does not expect: its status, the server's code and message, its retry hint. */
export class ProtocolError extends Error {
  constructor(fields: { status: number; code: string; message: string; retryAfterMs?: number; retryRound?: number;
                        url: string });
  readonly status: number;
  readonly code: ProtocolErrorCode | string;
  readonly retryAfterMs: number | undefined;
  /** A device refused by min_separation (429 'min_separation'): the first round it may take. */
  readonly retryRound: number | undefined;
  readonly url: string;
  /** 429 and 5xx: the same request may succeed later. */
  readonly retryable: boolean;
}

/**
 * A request past its deadline (ProtocolClientOptions timeoutMs, claimMarginMs, stallTimeoutMs):
 * "no answer from <origin> within N s". A network failure: runLeaf retries it.
 */
export class RequestTimeoutError extends Error {
  constructor(url: URL, timeoutMs: number, phase?: 'headers' | 'body');
  readonly url: string;
  readonly origin: string;
  readonly timeoutMs: number;
  /** 'headers': no answer at all; 'body': the answer's body stalled. */
  readonly phase: 'headers' | 'body';
}

/**
 * A network error's message with the causes fetch keeps in error.cause: "fetch failed (connect
 * ECONNREFUSED …)"; when a page's request to another origin failed, it adds that this may be CORS
 * and the server flag that allows the page's origin (`--cors-origin`).
 */
export function networkErrorMessage(error: unknown): string;

/**
 * A call's bearer token: a string, undefined (the client's token) or false (none: public calls).
 */
export type TokenOption = string | false | undefined;

export interface PopulationSpec {
  plan: Plan;
  /** Base64 safetensors; exactly one of initial_model_b64 and seed. */
  initial_model_b64?: string;
  seed?: number;
  id?: string;
  rounds?: number;
  clients_per_round?: number;
  min_reports?: number;
  round_deadline_s?: number;
  lease_s?: number;
  over_selection?: number;
  eval_tasks_per_round?: number;
  /** How a round's aggregate becomes the next model; absent: FedAvg (src/server/README.md). */
  server_optimizer?: ServerOptimizerSpec;
  /**
   * "buffered": no barrier (FedBuff) — a version every buffer_size reports, with concurrency,
   * max_staleness and staleness_weight below; clients_per_round, min_reports and over_selection
   * are then refused. Default "synchronous".
   */
  mode?: 'synchronous' | 'buffered';
  /** Buffered: reports per published version (required). */
  buffer_size?: number;
  /** Buffered: train tasks out at once (default buffer_size). */
  concurrency?: number;
  /** Buffered: versions a report may be behind before it is refused with 409 (default 10). */
  max_staleness?: number;
  /** Buffered: a report's weight factor; default polynomial, 1/(1+s)^0.5. */
  staleness_weight?: { weight: 'polynomial'; exponent?: number } | { weight: 'constant' };
  /**
   * Buffered: "normalized" (default) steps by the weighted mean of the buffer; "unnormalized" by
   * Σ nᵢ·w(sᵢ)·Δᵢ / Σ nᵢ (FedBuff's Σ w(sᵢ)·Δᵢ / K), so staleness shrinks the step.
   */
  staleness_normalization?: 'normalized' | 'unnormalized';
  /** Tasks one client (its client token) may hold at once, of every kind; past it a claim is 429. Default: no bound. */
  max_tasks_per_client?: number;
}

/** A population's server optimizer (Reddi et al. 2021); absent fields take the defaults. */
export type ServerOptimizerSpec =
  | { type: 'sgd'; learning_rate?: number; momentum?: number }
  | {
      type: 'adam';
      learning_rate?: number;
      beta1?: number;
      beta2?: number;
      epsilon?: number;
      bias_correction?: boolean;
    }
  | { type: 'adagrad'; learning_rate?: number; beta1?: number; epsilon?: number };

export interface CreatedPopulation {
  id: string;
  client_token: string;
  round: number;
  model_etag: string;
  model_url: string;
  status_url: string;
}

export interface RoundHistory {
  round: number;
  status: 'open' | 'closed';
  reports: number;
  examples: number;
  mean_train_loss: number | null;
  mean_train_accuracy: number | null;
  upload_bytes: number;
  started_at: number;
  deadline: number;
  closed_at: number | null;
  duration_s: number | null;
  eval?: { reports: number; examples: number; loss: number; accuracy: number; auc?: number };
  robust?: {
    clipped?: Record<string, number>;
    /** The bound each clipped tensor used this round (an open round: its adaptive bounds). */
    clip_bound?: Record<string, number>;
    /** The bound each adaptive clip uses next round. */
    next_clip_bound?: Record<string, number>;
    /** Rows the row clip scaled down, per row_sparse tensor with one. */
    clipped_rows?: Record<string, number>;
    capped?: number;
    /** The cap reports were weighed with this round (null: off; an open round: its adaptive cap). */
    example_cap?: number | null;
    /** The adaptive example cap the next round uses. */
    next_example_cap?: number;
    withheld_rows?: Record<string, number>;
    withheld_nonfinite?: number;
  };
  /**
   * A closed version of a buffered population: the staleness of the reports folded into it, as
   * the server recorded it (versions published since each report's task was handed out); counts
   * by staleness ("0", "1", …).
   */
  staleness?: { mean: number; max: number; counts: Record<string, number> };
}

/** GET /v1/populations/{p}. */
export interface PopulationStatus {
  id: string;
  /** 'paused': an operator paused it (claims get no task until it is resumed). */
  state: 'running' | 'paused' | 'finished' | 'failed';
  /** Why an operator finished it (POST …:finish); absent when it ran its rounds to the end. */
  finish_reason?: string;
  round: number;
  rounds: number;
  reports: number;
  /** Buffered: buffer_size (reports that publish a version), as is min_reports. */
  clients_per_round: number;
  min_reports: number;
  /** Buffered: times only the final model's evaluation round; a training version closes at buffer_size reports. */
  round_deadline_s: number;
  lease_s: number;
  /** Buffered: concurrency. */
  train_tasks_per_round: number;
  eval_tasks_per_round: number;
  /** The population's server optimizer, every field written out (FedAvg: sgd, 1, 0). */
  server_optimizer: ServerOptimizerSpec;
  /** Only a buffered population's status has them (its round is its model version). */
  mode?: 'buffered';
  buffered?: {
    buffer_size: number;
    concurrency: number;
    max_staleness: number;
    staleness_weight: { weight: 'polynomial'; exponent: number } | { weight: 'constant' };
    /** Present only when "unnormalized" (absent: the default, "normalized"). */
    staleness_normalization?: 'unnormalized';
  };
  /** The population's max_tasks_per_client, when it has one. */
  max_tasks_per_client?: number;
  /** A buffered population's train tasks out now (leased, lease valid): what concurrency bounds. */
  tasks_out?: number;
  model_etag: string;
  model_url: string;
  created_at: number;
  plan: Plan;
  rejections: Record<string, number>;
  history: RoundHistory[];
  [field: string]: unknown;
}

export interface ProtocolClientOptions {
  /** Base URL of the task repository; default in a page or worker: the folder of its location. */
  server?: string | URL;
  /** The bearer token of calls that are not given their own. */
  token?: string;
  fetch?: typeof fetch;
  /** Fedleaf-Version to send (default PROTOCOL_VERSION). */
  version?: string;
  /**
   * Deadline (ms) for the answer's headers of every call but claim, from when the request is sent
   * (so it covers an upload's body); default 90000. Infinity: none.
   */
  timeoutMs?: number;
  /** A claim's deadline is its waitS plus this many ms (default 15000). */
  claimMarginMs?: number;
  /** Longest wait (ms) for the next chunk of an answer's body (default 30000). */
  stallTimeoutMs?: number;
  /** A private population's device credential, sent as Fedleaf-Device on every claim. */
  device?: string;
}

interface CallOptions {
  token?: TokenOption;
  signal?: AbortSignal;
}

/** A population's client token as the admin API lists it: id 0 is the one made with the population. */
export interface ClientTokenEntry {
  id: number;
  created_at: number;
  /** null while the token is live. */
  revoked_at: number | null;
}

/** A private population's device as the admin API lists it (never its credential). */
export interface DeviceEntry {
  id: string;
  enrolled_at: number;
  /** Rounds it took part in (train tasks leased to it). */
  participations: number;
  /** null before its first round. */
  last_round: number | null;
  revoked: boolean;
  revoked_at: number | null;
}

/** What enrollDevice answers: the credential is shown once (the server keeps only its hash). */
export interface EnrolledDevice {
  device_id: string;
  credential: string;
}

/** The task repository's v1 protocol: typed outcomes, ProtocolError for unexpected answers. */
export class ProtocolClient {
  constructor(options?: ProtocolClientOptions);
  readonly server: URL;
  readonly version: string;
  readonly timeoutMs: number;
  readonly claimMarginMs: number;
  readonly stallTimeoutMs: number;
  /** The device credential claims send unless given their own. */
  device: string | undefined;
  /** An API path ('v1/…', relative to the server) or a server-relative URL ('/v1/…'). */
  url(path: string): URL;
  claim(population: string, options?: CallOptions & { minRound?: number; waitS?: number; device?: string }):
    Promise<ClaimOutcome>;
  modelUrl(population: string, round: number): URL;
  downloadModel(modelUrl: string | URL, options?: CallOptions & { etag?: string }): Promise<ModelOutcome>;
  selectModel(population: string, round: number, entries: Array<{ name: string; ids: ArrayLike<number> }>,
              options?: CallOptions): Promise<Uint8Array>;
  upload(task: Pick<Task, 'upload_url' | 'lease_token'>, bytes: BytesLike,
         options?: { signal?: AbortSignal }): Promise<{ status: 200 | 201; result: Record<string, unknown> | null }>;
  status(population: string, options?: { signal?: AbortSignal }): Promise<PopulationStatus>;
  listPopulations(options?: CallOptions): Promise<{ populations: Array<{ id: string; state: string; round: number;
                                                                          rounds: number; clients_per_round: number;
                                                                          mode?: 'buffered' }> }>;
  createPopulation(spec: PopulationSpec, options?: CallOptions): Promise<CreatedPopulation>;
  /** POST /v1/populations/{p}:pause, :resume or :finish (admin token): the status after it. */
  controlPopulation(population: string, action: 'pause' | 'resume' | 'finish',
                    options?: CallOptions & { reason?: string }): Promise<PopulationStatus>;
  /** POST /v1/populations/{p}/tokens (admin token): a new client token, shown once. */
  issueClientToken(population: string, options?: CallOptions):
    Promise<{ population: string; id: number; client_token: string }>;
  /** POST /v1/populations/{p}/tokens/{id}:revoke (admin token): the token's entry after it. */
  revokeClientToken(population: string, id: number, options?: CallOptions): Promise<ClientTokenEntry>;
  /** GET /v1/populations/{p}/tokens (admin token): every token's entry (never a token or its hash). */
  listClientTokens(population: string, options?: CallOptions): Promise<{ tokens: ClientTokenEntry[] }>;
  /** POST /v1/populations/{p}/devices (client token): enrolls a device of a private population. */
  enrollDevice(population: string, options?: CallOptions): Promise<EnrolledDevice>;
  /** GET /v1/populations/{p}/devices (admin token): a page of devices; next_after: null on the last. */
  listDevices(population: string, options?: CallOptions & { after?: string }):
    Promise<{ devices: DeviceEntry[]; next_after: string | null }>;
  /** POST /v1/populations/{p}/devices/{id}:revoke (admin token). */
  revokeDevice(population: string, deviceId: string, options?: CallOptions):
    Promise<{ device_id: string; revoked: true }>;
  /** GET /metrics: the Prometheus text. */
  metrics(options?: { signal?: AbortSignal }): Promise<string>;
}

/** Where runLeaf keeps a private population's device credential, by server and population. */
export interface DeviceStore {
  load(key: string): Promise<{ deviceId: string; credential: string } | undefined>;
  save(key: string, device: { deviceId: string; credential: string }): Promise<void>;
}

/** A DeviceStore in memory: a restarted leaf enrolls again (a new device). */
export function memoryDeviceStore(): DeviceStore;
/** A DeviceStore in IndexedDB (a browser): a reloaded tab stays the same device. */
export function indexedDbDeviceStore(options?: { database?: string; indexedDB?: IDBFactory }): DeviceStore;

// ---- the leaf loop

/** What runLeaf reports (onEvent). */
export type LeafEvent =
  | { type: 'claimed'; task: Task }
  | { type: 'enrolled'; deviceId: string }
  | { type: 'downloaded'; taskId: Task['task_id']; bytes: number; cached: boolean; select: boolean; ms: number }
  | { type: 'progress'; taskId: Task['task_id']; step: number; loss: number }
  | { type: 'trained'; taskId: Task['task_id']; numExamples: number; loss: number; ms: number; setupMs?: number }
  | { type: 'uploaded'; taskId: Task['task_id']; bytes: number; status: number }
  | { type: 'dropped'; taskId: Task['task_id']; status: number; reason: string }
  | { type: 'idle'; ms: number; reason: string }
  | { type: 'error'; error: unknown; fatal: boolean }
  | { type: 'finished' };

/** A task's plan parsed once by an executor: runLeaf deletes it when the task ends. */
export interface LeafPlan {
  delete(): void;
}

/** What runLeaf needs of an executor (createExecutor's has all three). */
export interface LeafExecutor<D = TaskData, P extends LeafPlan = PlanHandle> {
  /** `plan`: the task's plan from loadPlan when present (parse failed: absent). */
  runTask(task: Task, modelBytes: Uint8Array, dataset: D,
          options: { signal?: AbortSignal; onProgress: (step: number, loss: number) => void; plan?: P }): Promise<TaskResult>;
  /** When present, each task's plan is parsed once, for selectRequest and runTask. */
  loadPlan?(plan: Plan, options: { inference: boolean }): P;
  /** When present, train tasks of select plans download only these rows (model:select). */
  selectRequest?(dataset: D, task: Task, plan: P | Plan): { name: string; ids: ArrayLike<number>; vocab: number;
    maxSelectRows: number; padding: { multiple: number } | { count: number } | null }[];
}

export interface RunLeafOptions<D = TaskData> {
  /** Base URL of the task repository. */
  server: string | URL;
  population: string;
  /** The population's client token. */
  token: string;
  executor: LeafExecutor<D>;
  dataset: D;
  /** Tasks claimed and downloaded ahead of the one training (default 1). */
  prefetch?: number;
  /** Long poll: seconds the server may hold a claim (default 20; 0 polls). */
  waitS?: number;
  signal?: AbortSignal;
  onEvent?: (event: LeafEvent) => void;
  /** Stop after this many tasks, failed ones included (default: until the population finishes). */
  maxTasks?: number;
  fetch?: typeof fetch;
  /** The client to talk through (default: one for server, fetch and the deadlines below). */
  client?: ProtocolClient;
  /** ProtocolClientOptions.timeoutMs of the leaf's client (default 90000). */
  timeoutMs?: number;
  /** ProtocolClientOptions.claimMarginMs of the leaf's client (default 15000). */
  claimMarginMs?: number;
  /** ProtocolClientOptions.stallTimeoutMs of the leaf's client (default 30000). */
  stallTimeoutMs?: number;
  backoff?: { baseMs?: number; maxMs?: number };
  /** Where a private population's device credential is kept (default memoryDeviceStore()). */
  deviceStore?: DeviceStore;
}

export interface RunLeafSummary {
  uploaded: number;
  dropped: number;
  stopped: 'finished' | 'aborted' | 'maxTasks';
}

/** The leaf loop: claim → download → train → upload → repeat, until finished, aborted or maxTasks. */
export function runLeaf<D = TaskData>(options: RunLeafOptions<D>): Promise<RunLeafSummary>;

/** An error that stops the leaf: wrong version, bad credentials, unknown population. */
export class LeafStoppedError extends Error {
  constructor(message: string, status: number);
  readonly status: number;
}
/**
 * A sparse input as a TF / Keras SparseTensor [rows, N] in COO form: indices as [row, column]
 * pairs or a flat list of 2·nnz numbers, one value per index, denseShape (or dense_shape) [rows,
 * N]. Sorted by (row, column) for the caller; a row, column or value out of range or an index
 * given twice throws, naming the input and the entry.
 */
export interface SparseTensorInput {
  indices: ArrayLike<ArrayLike<number | bigint>> | ArrayLike<number> | BigInt64Array;
  values: ArrayLike<number>;
  denseShape?: ArrayLike<number | bigint>;
  dense_shape?: ArrayLike<number | bigint>;
}

/** What importTfjsLayersModel returns: a fedleaf plan, its safetensors model, and the id shifts. */
export interface ImportedTfjsModel {
  plan: Plan;
  model: Uint8Array;
  /** Per ids input: 1 when its Embedding has mask_zero (fedleaf id i is Keras token i + 1), else 0. */
  tokenOffsets: Record<string, number>;
  /** The common value of tokenOffsets (0 without ids inputs; null when they differ). */
  tokenOffset: number | null;
  /**
   * The inputs that were Keras sparse inputs (read by Dense layers, now embedding_bag sum +
   * use_bias): feed them SparseTensorInput or CSR rows; exportTfjsLayersModel's
   * options.sparseInputs writes them back as sparse InputLayers.
   */
  sparseInputs: string[];
}

/**
 * A TF.js Layers model (model.json + weight shards, or tf.io ModelArtifacts; Sequential or
 * functional, Keras 2, Keras 3 or TF.js) → a fedleaf plan and model. Supports InputLayers (ids,
 * dense, or sparse: true read by Dense layers, each an embedding_bag sum + use_bias), Embedding + GlobalAveragePooling1D or + Flatten (one id), one Embedding on several
 * inputs, Dense, Activation, Dropout, SpatialDropout1D, Concatenate, Add, Multiply, one output (the table is
 * in the package README); throws an Error naming any other layer's class and name (or the
 * topology) and listing the supported ones.
 */
export function importTfjsLayersModel(
  executor: Pick<Executor, 'encodeSafetensors' | 'validatePlan'>,
  modelJson: object,
  weightData?: ArrayBuffer | ArrayBufferView | Array<ArrayBuffer | ArrayBufferView>,
  options?: {
    /** A one-text-input model's featurization (the plan's features, num_buckets = the vocabulary). */
    features?: Plan['features'];
    /** inputs.<name>.features of a multi-input plan, by input (the InputLayer's name). */
    inputFeatures?: Record<string, Record<string, unknown>>;
    /** The plan's train section; default the model's optimizer, else Adam 0.001 (with a warning). */
    train?: Plan['train'];
    updates?: Plan['updates'];
    /** What the import changed or assumed (the default optimizer, a Dropout moved after a bag); default console.warn. */
    onWarning?: (message: string) => void;
  },
): ImportedTfjsModel;

/** A weight of a TF.js Layers model: what tf.io's WeightsManifestEntry holds for float32 weights. */
export interface TfjsWeightSpec {
  name: string;
  shape: number[];
  dtype: 'float32';
}

/** The fields of a TF.js Layers model that model.json and ModelArtifacts share. */
interface TfjsLayersModelDescription {
  format: 'layers-model';
  generatedBy: string;
  convertedBy: null;
  /** Sequential for a chain plan, Model (functional: input_layers, output_layers, inbound nodes) for a graph. */
  modelTopology: { class_name: 'Sequential' | 'Model'; config: { name: string; layers: object[]; [field: string]: unknown };
    [field: string]: unknown };
  /** Absent when the plan has no train section (TF.js then loads the model uncompiled). */
  trainingConfig?: { loss: string; optimizer_config: { class_name: string; config: object }; [field: string]: unknown };
}

/** A model.json as tf.loadLayersModel reads it from a URL: its weights in the files weightsManifest names. */
export interface TfjsModelJson extends TfjsLayersModelDescription {
  weightsManifest: Array<{ paths: string[]; weights: TfjsWeightSpec[] }>;
}

/**
 * What exportTfjsLayersModel returns: TF.js ModelArtifacts, which `tf.io.fromMemory(exported)`
 * takes as they are, and the same model as a model.json whose one shard is weightData.
 */
export interface ExportedTfjsModel extends TfjsLayersModelDescription {
  weightSpecs: TfjsWeightSpec[];
  /** The weights in weightSpecs order, float32 little-endian: also the shard model.json names. */
  weightData: ArrayBuffer;
  /** For saving to disk: write it as model.json and weightData beside it (options.weightsPath). */
  modelJson: TfjsModelJson;
}

/**
 * A fedleaf plan + model → a TF.js Layers model: `tf.loadLayersModel(tf.io.fromMemory(exported))`
 * loads it; `exported.modelJson` and `exported.weightData` are the files for a URL or disk. A plan
 * importTfjsLayersModel made (its `tfjs` section) exports as the model it came from: the same
 * inputs (Keras tokens, dtypes), loss and layer names, a mask_zero Embedding with its row 0.
 * options.name: the model's name (default the imported model's, else 'fedleaf').
 */
export function exportTfjsLayersModel(
  executor: Pick<Executor, 'decodeSafetensors' | 'version'>,
  plan: PlanInput,
  modelBytes: Uint8Array | ArrayBuffer,
  options?: { weightsPath?: string; name?: string; sparseInputs?: string[] },
): ExportedTfjsModel;

/**
 * The settings of a DP-FTRL (tree aggregation) run for planPrivacy: exactly one of
 * noiseMultiplier and targetEpsilon.
 */
export interface PrivacySettings {
  /** Enrolled devices (the population), >= 1: decides feasibility only, never epsilon. */
  devices: number;
  /** Devices per round (the round's target size), >= 1: decides feasibility only. */
  perRound: number;
  /** Rounds of the run, >= 1. */
  rounds: number;
  /** Rounds one device may take part in, >= 1. */
  maxParticipations: number;
  /** Rounds strictly between two rounds of one device, >= 0 (0 allows consecutive rounds). */
  minSeparation: number;
  /** In (0, 1); commonly below 1 / devices. */
  delta: number;
  /** Noise standard deviation over the clip norm, > 0: planPrivacy answers the epsilon. */
  noiseMultiplier?: number;
  /** > 0: planPrivacy answers the least noiseMultiplier reaching it. */
  targetEpsilon?: number;
}

/** What planPrivacy answers: the guarantee and whether the population can keep the limits. */
export interface PrivacyPlan {
  /** epsilon at delta after all rounds, per device. */
  epsilon: number;
  delta: number;
  /** zCDP after all rounds. */
  rho: number;
  /** The given one, or the least that reaches targetEpsilon. */
  noiseMultiplier: number;
  /** Worst-case squared L2 sensitivity of the tree's nodes, in clip norms squared. */
  squaredSensitivity: number;
  /** min(maxParticipations, ceil(rounds / (minSeparation + 1))). */
  participationsPossible: number;
  /** rounds x perRound. */
  deviceRoundsNeeded: number;
  /** devices x participationsPossible. */
  deviceRoundsAvailable: number;
  /** perRound x min(rounds, minSeparation + 1): the devices any window of minSeparation + 1 rounds needs. */
  devicesNeededPerWindow: number;
  /** The least population meeting both needs. */
  devicesNeeded: number;
  /** devices >= devicesNeeded: some schedule keeps every limit. */
  feasible: boolean;
  /** deviceRoundsNeeded / devices. */
  meanParticipations: number;
}

/**
 * The privacy calculator: the (epsilon, delta) a DP-FTRL setting reaches, or the noise multiplier a
 * target epsilon needs. Rejects (a FedleafError, code 'InvalidInput') naming the field of a bad setting.
 */
export function planPrivacy(settings: PrivacySettings, options?: ExecutorOptions): Promise<PrivacyPlan>;
