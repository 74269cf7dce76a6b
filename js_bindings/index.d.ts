// Types of the fedleaf JS API (js_bindings/src/index.js).

export type DType = 'F32' | 'F64' | 'I32' | 'I64' | 'U8';
export type TypedArray = Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;

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

export interface ExecutorOptions {
  /** 'auto' (default): the SIMD build when WebAssembly.validate accepts SIMD. */
  simd?: 'auto' | boolean;
  /** Where fedleaf_core*.{js,wasm} are served from; default ../dist/ next to src/index.js. */
  distUrl?: string | URL;
}

export interface Executor {
  /** The fedleaf version, the same as package.json and CMake's project version. */
  readonly version: string;
  /** Whether the SIMD build was loaded. */
  readonly simd: boolean;
  /** Bytes of the wasm module's linear memory now: its high-water mark (it never shrinks). */
  readonly wasmMemoryBytes: number;
  encodeSafetensors(tensors: Record<string, Tensor>, metadata?: Metadata): Uint8Array;
  decodeSafetensors(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): {
    tensors: Record<string, DecodedTensor>;
    metadata: Metadata;
  };
  /** Sorts indices and sums duplicates. */
  coalesce(tensor: SparseTensor): DecodedSparseTensor;
  /**
   * Class probabilities of the model (safetensors bytes) on the dataset: [dataset.size, classes]
   * row-major; classes is the output width for softmax losses, 2 ([1 - p, p]) for the sigmoid
   * loss. The dataset's labels must be valid for the loss but do not change the result.
   */
  predict(plan: object | string, modelBytes: Uint8Array, dataset: { readonly size: number }): Float32Array;
  /**
   * The sorted distinct ids of the data a task trains on (a Dataset, or a source with
   * datasetFor(task) such as TextLeafData): the embedding rows runLeaf asks model:select for.
   */
  distinctIds(source: SparseIdSource, task?: object): Uint32Array;
}

/** A dataset in wasm memory (module Dataset): its sorted distinct ids as a Uint32Array. */
export interface SparseIdDataset {
  readonly size: number;
  readonly numDistinctIds: number;
  distinctIds(): Uint32Array;
}
export type SparseIdSource = SparseIdDataset | { datasetFor(task: object): SparseIdDataset };

export function createExecutor(options?: ExecutorOptions): Promise<Executor>;
export function wasmSimdSupported(): boolean;
/** A byte count for people: "512 B", "1.5 kB", "18.2 MB", "1.07 GB"; "–" when not finite. */
export function formatBytes(bytes: number): string;

/** What importTfjsLayersModel returns: a fedleaf plan, its safetensors model, and the id shift. */
export interface ImportedTfjsModel {
  plan: object;
  model: Uint8Array;
  /** 1 when the Embedding has mask_zero (fedleaf id i is Keras token i + 1), else 0. */
  tokenOffset: number;
}

/**
 * A TF.js Layers model (model.json + weight shards, or tf.io ModelArtifacts) → a fedleaf plan and
 * model. Supports InputLayer, Embedding + GlobalAveragePooling1D, Dense, Activation in a chain;
 * throws an Error naming any other layer's class and name.
 */
export function importTfjsLayersModel(
  executor: Pick<Executor, 'encodeSafetensors'> & { validatePlan(plan: object | string): void },
  modelJson: object,
  weightData?: ArrayBuffer | ArrayBufferView | Array<ArrayBuffer | ArrayBufferView>,
  options?: { features?: object; train?: object; updates?: object },
): ImportedTfjsModel;

/** A fedleaf plan + model → a TF.js Layers model.json object and its one weight shard. */
export function exportTfjsLayersModel(
  executor: Pick<Executor, 'decodeSafetensors' | 'version'>,
  plan: object | string,
  modelBytes: Uint8Array | ArrayBuffer,
  options?: { weightsPath?: string; name?: string },
): { modelJson: object; weightData: ArrayBuffer };
