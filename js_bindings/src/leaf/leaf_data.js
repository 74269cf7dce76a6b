// A leaf's local data, the one type runLeaf takes for every plan: records (flat plain objects)
// and labels per part (train, and eval when given), featurized with each task's plan on first use
// and again only when a later plan featurizes differently.
//
//   const data = new LeafData(executor, {train: {records, labels}, eval: {records, labels}});
//   await runLeaf({..., executor, dataset: data});   // executor.runTask calls data.datasetFor
//   data.delete();
//
// A records plan (some model input has "features") featurizes the records' fields
// (executor.datasetFromRecords, one call into wasm); a text plan featurizes each record's "text"
// with the plan's top-level "features" (executor.datasetFromTexts: records {text} on the same
// path, the defaults when the plan gives none), sending nothing but the texts. So one record
// carrying both — an email's fields and its whole text (EmailLeafData) — serves either plan.
// TextLeafData, RecordLeafData and EmailLeafData are this type built from texts, records and raw
// emails.

/**
 * True when the plan's model takes records: some input has a "features" section (a one-input
 * plan with the top-level text "features" reads each record's "text").
 */
export function planTakesRecords(plan) {
  const inputs = plan?.model?.inputs;
  if (!inputs || typeof inputs !== 'object') return false;
  return Object.values(inputs).some((input) => input !== null && typeof input === 'object' &&
    input.features !== undefined);
}

// What decides a records plan's featurization: each input's type, width and features, by name
// (layers, training and updates do not change the dataset).
function featuresKey(plan) {
  return JSON.stringify(Object.entries(plan?.model?.inputs ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

// The texts a text plan reads: each record's "text", a string.
function textsOf(records) {
  return records.map((record, i) => {
    if (typeof record.text !== 'string') {
      throw new TypeError(`records[${i}].text: expected a string (a text plan reads each record's text), got ${record.text === null ? 'null' : typeof record.text}`);
    }
    return record.text;
  });
}

export class LeafData {
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
    this.texts = new Map();  // part → its records' texts, taken on the first text plan
    this.cache = new Map();
  }

  get numTrainExamples() {
    return this.parts.train.records.length;
  }

  /**
   * The embedding rows the training part touches under the plan: a records plan's distinct ids
   * in each table, summed over its tables (a table shared by several inputs counts the union
   * once; PlanHandle.touchedRows), a text plan's distinct ids.
   */
  touchedRows(plan) {
    if (!planTakesRecords(plan)) return this.datasetFor({ kind: 'train', plan }).numDistinctIds;
    const handle = this.executor.loadPlan(plan, { inference: true });
    try {
      return handle.touchedRows(this.datasetFor({ kind: 'train', plan }, handle));
    } finally {
      handle.delete();
    }
  }

  /**
   * The dataset a task trains or evaluates on (`plan`: the task's PlanHandle when the caller
   * holds one, featurizing records without parsing the plan again).
   */
  datasetFor(task, plan = task?.plan) {
    const kind = (task?.kind ?? 'train') === 'evaluate' && this.parts.eval ? 'eval' : 'train';
    const records = planTakesRecords(task?.plan);
    const key = records ? `${kind} records ${featuresKey(task.plan)}`
      : `${kind} text ${JSON.stringify(task?.plan?.features ?? {})}`;
    let dataset = this.cache.get(key);
    if (!dataset) {
      const part = this.parts[kind];
      if (records) {
        dataset = this.executor.datasetFromRecords(part.records, part.labels, plan);
      } else {
        if (!this.texts.has(kind)) this.texts.set(kind, textsOf(part.records));
        dataset = this.executor.datasetFromTexts(this.texts.get(kind), part.labels, { features: task?.plan?.features ?? {} });
      }
      this.cache.set(key, dataset);
    }
    return dataset;
  }

  delete() {
    for (const dataset of this.cache.values()) dataset.delete();
    this.cache.clear();
  }
}
