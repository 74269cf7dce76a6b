// A leaf's raw emails (headers and body, as the SpamAssassin corpus holds them) for any spam plan:
// a plan that takes records (a model input with "features", e.g. the wide & deep
// scripts/demo/spam_wide_deep_plan.json) trains on each email's spamAssassinEmailRecord, a text
// plan (top-level "features", e.g. scripts/demo/spam_plan.json) on the whole email as text. The
// simulator's leaves and the web demo's tab hold their shard this way, so one population's plan
// decides, task by task, as it does for TextLeafData.
//
//   const data = new EmailLeafData(executor, {train: {texts, labels}, eval: {texts, labels}});
//   await runLeaf({..., executor, dataset: data});
//   data.delete();

import { RecordLeafData, planTakesRecords } from '../leaf/record_leaf_data.js';
import { TextLeafData } from '../leaf/text_leaf_data.js';
import { spamAssassinEmailRecord } from './spamassassin.js';

function recordsPart(part) {
  return part && { records: part.texts.map((text) => spamAssassinEmailRecord(text)), labels: part.labels };
}

export class EmailLeafData {
  /**
   * @param {object} executor  from createExecutor()
   * @param {{train: {texts: string[], labels: number[]}, eval?: {texts: string[], labels: number[]}}} parts
   */
  constructor(executor, parts) {
    this.executor = executor;
    this.texts = new TextLeafData(executor, parts);
    this.parts = parts;
    this.records = null; // the RecordLeafData, parsed on the first records plan
  }

  get numTrainExamples() {
    return this.texts.numTrainExamples;
  }

  // The source that featurizes for this plan.
  sourceFor(plan) {
    if (!planTakesRecords(plan)) return this.texts;
    this.records ??= new RecordLeafData(this.executor, {
      train: recordsPart(this.parts.train),
      ...(this.parts.eval ? { eval: recordsPart(this.parts.eval) } : {}),
    });
    return this.records;
  }

  touchedRows(plan) {
    return this.sourceFor(plan).touchedRows(plan);
  }

  datasetFor(task, plan) {
    return this.sourceFor(task?.plan).datasetFor(task, plan);
  }

  delete() {
    this.texts.delete();
    this.records?.delete();
  }
}
