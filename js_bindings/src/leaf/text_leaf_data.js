// A leaf's local text data (e.g. its SpamAssassin shard) featurized on demand with the plan of
// each task: the plan's "features" section decides tokenization and hashing, so the dataset is
// built when the first task arrives and rebuilt only if a later plan featurizes differently.
//
//   const data = new TextLeafData(executor, {train: {texts, labels}, eval: {texts, labels}});
//   await runLeaf({..., executor, dataset: data});   // executor.runTask calls data.datasetFor
//   data.delete();

export class TextLeafData {
  /**
   * @param {object} executor  from createExecutor()
   * @param {{train: {texts: string[], labels: number[]}, eval?: {texts: string[], labels: number[]}}} parts
   *   evaluate tasks use `eval` when given, else `train`.
   */
  constructor(executor, parts) {
    if (!parts?.train?.texts) throw new TypeError('parts.train.texts is required');
    this.executor = executor;
    this.parts = parts;
    this.cache = new Map();
  }

  /** Distinct feature ids of the training part under the plan: the embedding rows it touches. */
  touchedRows(plan) {
    return this.datasetFor({ kind: 'train', plan }).numDistinctIds;
  }

  get numTrainExamples() {
    return this.parts.train.texts.length;
  }

  /** The dataset a task trains or evaluates on. */
  datasetFor(task) {
    const kind = (task.kind ?? 'train') === 'evaluate' && this.parts.eval ? 'eval' : 'train';
    const features = JSON.stringify(task.plan?.features ?? {});
    const key = `${kind} ${features}`;
    let dataset = this.cache.get(key);
    if (!dataset) {
      const { texts, labels } = this.parts[kind];
      dataset = this.executor.datasetFromTexts(texts, labels, { features: task.plan?.features ?? {} });
      this.cache.set(key, dataset);
    }
    return dataset;
  }

  delete() {
    for (const dataset of this.cache.values()) dataset.delete();
    this.cache.clear();
  }
}
