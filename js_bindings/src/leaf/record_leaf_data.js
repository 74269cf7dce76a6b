// A leaf's local records (plain objects of fields, e.g. its SpamAssassin emails through
// spamAssassinEmailRecord) featurized on demand with the plan of each task: every model input's
// "features" section (model.inputs.<name>.features) says how a record fills it, so the dataset is
// built when the first task arrives and rebuilt only if a later plan featurizes differently —
// TextLeafData's equivalent for multi-input plans.
//
//   const data = new RecordLeafData(executor, {train: {records, labels}, eval: {records, labels}});
//   await runLeaf({..., executor, dataset: data});   // executor.runTask calls data.datasetFor
//   data.delete();

/**
 * True when the plan's model takes records: some input has a "features" section (a one-input
 * plan with the top-level text "features" takes texts).
 */
export function planTakesRecords(plan) {
  const inputs = plan?.model?.inputs;
  if (!inputs || typeof inputs !== 'object') return false;
  return Object.values(inputs).some((input) => input !== null && typeof input === 'object' &&
    input.features !== undefined);
}

// What decides the featurization: each input's type, width and features, by name (layers,
// training and updates do not change the dataset).
function featuresKey(plan) {
  return JSON.stringify(Object.entries(plan?.model?.inputs ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export class RecordLeafData {
  /**
   * @param {object} executor  from createExecutor()
   * @param {{train: {records: object[], labels: number[]}, eval?: {records: object[], labels: number[]}}} parts
   *   evaluate tasks use `eval` when given, else `train`.
   */
  constructor(executor, parts) {
    if (!Array.isArray(parts?.train?.records)) throw new TypeError('parts.train.records is required (an array of records)');
    for (const kind of ['train', 'eval']) {
      const part = parts[kind];
      if (part && (!Array.isArray(part.records) || part.labels?.length !== part.records.length)) {
        throw new TypeError(`parts.${kind}: records and labels must be arrays of the same length`);
      }
    }
    this.executor = executor;
    this.parts = parts;
    this.cache = new Map();
  }

  /**
   * The embedding rows the training part touches under the plan: its distinct ids in each table,
   * summed over the model's tables (a table shared by several inputs counts the union once; the
   * tables are the plan's C++ parse's: PlanHandle.touchedRows).
   */
  touchedRows(plan) {
    const handle = this.executor.loadPlan(plan, { inference: true });
    try {
      return handle.touchedRows(this.datasetFor({ kind: 'train', plan }, handle));
    } finally {
      handle.delete();
    }
  }

  get numTrainExamples() {
    return this.parts.train.records.length;
  }

  /**
   * The dataset a task trains or evaluates on: executor.datasetFromRecords with the task's plan
   * (`plan`: its PlanHandle when the caller holds one, featurizing without parsing it again).
   */
  datasetFor(task, plan = task?.plan) {
    if (!planTakesRecords(task?.plan)) {
      throw new TypeError('RecordLeafData: the task\'s plan takes no records (no model input has "features")');
    }
    const kind = (task.kind ?? 'train') === 'evaluate' && this.parts.eval ? 'eval' : 'train';
    const key = `${kind} ${featuresKey(task.plan)}`;
    let dataset = this.cache.get(key);
    if (!dataset) {
      const { records, labels } = this.parts[kind];
      dataset = this.executor.datasetFromRecords(records, labels, plan);
      this.cache.set(key, dataset);
    }
    return dataset;
  }

  delete() {
    for (const dataset of this.cache.values()) dataset.delete();
    this.cache.clear();
  }
}
