// PlanHandle: a plan parsed once by the C++ core and held in wasm memory (module.Plan), what a
// task's training, evaluation, featurization and model:select request all read: no call parses
// the plan again. Its facts come from the C++ parse (core/train/plan_tables.h), never worked out
// here: the embedding tables with the layers owning and reading them, the inputs feeding them, how
// each downloads, and the rows a dataset needs of each (the select request).
//
//   const plan = executor.loadPlan(task.plan);      // an Error naming the JSON path when invalid
//   plan.tables;                                     // [{name, owner, lookups, inputs, vocab, dim,
//                                                    //   download, maxSelectRows, padding}]
//   plan.selectRequest(dataset);                     // [{name, ids, vocab, maxSelectRows, padding}]
//   plan.delete();                                   // when the task ends

import { planJson } from './plan_json.js';

const idsOf = (bytes) => new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);

export class PlanHandle {
  /** @param {object} handle  a module.Plan */
  constructor(handle) {
    this.handle = handle;
    /** 'train' or 'evaluate' */
    this.kind = handle.kind();
    /** The model's embedding tables, by owner layer (core/train/plan_tables.h). */
    this.tables = handle.tables();
  }

  /** The sorted distinct ids `dataset` holds for table `tensor`: the union over its inputs. */
  tableRows(dataset, tensor) {
    return idsOf(this.handle.tableRows(dataset.handle, String(tensor)));
  }

  /**
   * The tables a leaf downloads by model:select, each with the rows the dataset touches (ids,
   * sorted) and the plan's rules for the request (vocab, maxSelectRows: 0 for no cap, padding:
   * null, {multiple} or {count}); empty when every table downloads whole.
   */
  selectRequest(dataset) {
    return selectRequestOf(this.handle, dataset);
  }

  /** The rows the dataset touches, summed over the tables (a table shared by inputs counts once). */
  touchedRows(dataset) {
    return this.tables.reduce((n, table) => n + this.tableRows(dataset, table.name).length, 0);
  }

  delete() {
    if (this.handle) this.handle.delete();
    this.handle = null;
  }
}

/** PlanHandle.selectRequest of a module.Plan. */
export function selectRequestOf(handle, dataset) {
  return handle.selectRequest(dataset.handle).map((entry) => ({ ...entry, ids: idsOf(entry.ids) }));
}

/**
 * Calls use(module.Plan) with `plan`'s handle: a PlanHandle's own, else one parsed for this call
 * and deleted after it (inference: a plan that needs only its model, as for predict()).
 */
export function withPlan(module, plan, use, { inference = false } = {}) {
  if (plan instanceof PlanHandle) {
    if (!plan.handle) throw new TypeError('plan: this PlanHandle was deleted');
    return use(plan.handle);
  }
  const handle = module.Plan.parse(planJson(plan), inference);
  try {
    return use(handle);
  } finally {
    handle.delete();
  }
}
