// A leaf's raw emails (headers and body, as the SpamAssassin corpus holds them) for any spam plan:
// a LeafData (leaf/leaf_data.js) of one record per email, spamAssassinEmailRecord's fields plus
// `text` (the whole email), so one record serves a records plan (a model input with "features",
// e.g. the wide & deep scripts/demo/spam_wide_deep_plan.json) and a text plan (top-level
// "features", e.g. scripts/demo/spam_plan.json) alike. The simulator's leaves and the web demo's
// tab hold their shard this way, so one population's plan decides, task by task.
//
//   const data = new EmailLeafData(executor, {train: {texts, labels}, eval: {texts, labels}});
//   await runLeaf({..., executor, dataset: data});
//   data.delete();

import { LeafData } from '../leaf/leaf_data.js';
import { spamAssassinEmailRecord } from './spamassassin.js';

/** One raw email as a leaf's record: spamAssassinEmailRecord's fields and `text`, the whole email. */
export function emailRecord(text) {
  return { ...spamAssassinEmailRecord(text), text };
}

const emailPart = (part) => part && { records: part.texts.map(emailRecord), labels: part.labels };

export class EmailLeafData extends LeafData {
  /**
   * @param {object} executor  from createExecutor()
   * @param {{train: {texts: string[], labels: number[]}, eval?: {texts: string[], labels: number[]}}} parts
   */
  constructor(executor, parts) {
    if (!Array.isArray(parts?.train?.texts)) throw new TypeError('parts.train.texts is required (an array of emails)');
    super(executor, { train: emailPart(parts.train), ...(parts.eval ? { eval: emailPart(parts.eval) } : {}) });
  }
}
