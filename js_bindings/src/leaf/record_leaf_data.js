// A leaf's local records (plain objects of fields, e.g. its SpamAssassin emails through
// spamAssassinEmailRecord): a LeafData (leaf_data.js) built from records, featurized with each
// task's plan — every model input's "features" section says how a record fills it (a text plan
// reads each record's "text").
//
//   const data = new RecordLeafData(executor, {train: {records, labels}, eval: {records, labels}});
//   await runLeaf({..., executor, dataset: data});   // executor.runTask calls data.datasetFor
//   data.delete();

import { LeafData } from './leaf_data.js';

export { planTakesRecords } from './leaf_data.js';

export class RecordLeafData extends LeafData {}
