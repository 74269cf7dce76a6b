// A leaf's local texts (e.g. its SpamAssassin shard): a LeafData (leaf_data.js) whose records are
// {text}, so a text plan's "features" decide tokenization and hashing, task by task.
//
//   const data = new TextLeafData(executor, {train: {texts, labels}, eval: {texts, labels}});
//   await runLeaf({..., executor, dataset: data});   // executor.runTask calls data.datasetFor
//   data.delete();

import { LeafData } from './leaf_data.js';

const textPart = (part) => part && { records: part.texts.map((text) => ({ text })), labels: part.labels };

export class TextLeafData extends LeafData {
  /**
   * @param {object} executor  from createExecutor()
   * @param {{train: {texts: string[], labels: number[]}, eval?: {texts: string[], labels: number[]}}} parts
   *   evaluate tasks use `eval` when given, else `train`.
   */
  constructor(executor, parts) {
    if (!parts?.train?.texts) throw new TypeError('parts.train.texts is required');
    super(executor, { train: textPart(parts.train), ...(parts.eval ? { eval: textPart(parts.eval) } : {}) });
  }
}
