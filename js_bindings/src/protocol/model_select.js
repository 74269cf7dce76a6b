// Sparse download: the request a leaf posts for the rows of its task's model it fetches as a
// selection (POST .../rounds/{r}/model:select) instead of whole.
//
//   const [table] = plan.selectRequest(dataset);  // PlanHandle: [{name, ids, vocab, maxSelectRows, padding}]
//   const ids = selectionIds(table.ids, table);   // null: download the full model
//   const body = encodeSelectRequest([{name: table.name, ids}]);
//
// Which tables download by select, and the rows of each, are the plan's C++ parse's
// (engine/plan_handle.js; docs/design.md, "updates"): a tensor's "download" is "select" or
// "full", by default "select" for a "row_sparse" update; only embedding tables can be selected,
// their rows the ids of the leaf's data. "max_select_rows" (0 or absent: no limit) bounds a
// request: a leaf whose data touch more rows downloads the full model. "select_padding" hides the
// exact count: {"multiple": N} pads the ids with random unused ones up to a multiple of N,
// {"count": N} up to at least N ids; padding never exceeds max_select_rows or the vocabulary
// (core/aggregation/updates/update_plan.h states the same rules for the server).

import { uint32Array } from '../engine/dataset_inputs.js';

function paddedCount(count, padding, vocab) {
  let target = count;
  if (padding?.multiple > 0) target = Math.ceil(count / padding.multiple) * padding.multiple;
  if (padding?.count > 0) target = Math.max(count, padding.count);
  return Math.min(target, vocab);
}

/**
 * The sorted ids to request for one selected tensor: the data's distinct ids (sorted, unique)
 * plus padding drawn with `random` (default Math.random) among ids the data do not touch; null
 * when the data touch more than max_select_rows rows (the leaf then downloads the full model).
 */
export function selectionIds(distinctIds, { vocab, maxSelectRows, padding }, random = Math.random) {
  if (maxSelectRows > 0 && distinctIds.length > maxSelectRows) return null;
  const padded = paddedCount(distinctIds.length, padding, vocab);
  const target = maxSelectRows > 0 ? Math.min(padded, maxSelectRows) : padded;
  if (target === distinctIds.length) return Uint32Array.from(distinctIds);
  const present = new Set(distinctIds);
  const extra = [];
  while (present.size < target) {
    const id = Math.floor(random() * vocab);
    if (present.has(id)) continue;
    present.add(id);
    extra.push(id);
  }
  const out = new Uint32Array(target);
  out.set(distinctIds);
  out.set(extra, distinctIds.length);
  return out.sort();
}

const encoder = new TextEncoder();

/**
 * The binary body of model:select (Content-Type application/vnd.fedleaf.select-ids): per tensor,
 * u16 name length | UTF-8 name | u32 id count | ids as u32, all little-endian. A name over 65535
 * UTF-8 bytes or an id that is not an integer in [0, 2^32) is an error (a DataView would wrap it).
 */
export function encodeSelectRequest(entries) {
  const names = entries.map(({ name }) => {
    const bytes = encoder.encode(name);
    if (bytes.length > 0xffff) {
      throw new RangeError(`select: tensor name of ${bytes.length} UTF-8 bytes exceeds 65535`);
    }
    return bytes;
  });
  entries = entries.map(({ name, ids }) => ({ name, ids: uint32Array(`select: ids of '${name}'`, ids) }));
  const size = entries.reduce((sum, { ids }, i) => sum + 2 + names[i].length + 4 + 4 * ids.length, 0);
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  let at = 0;
  entries.forEach(({ ids }, i) => {
    view.setUint16(at, names[i].length, true);
    bytes.set(names[i], at + 2);
    at += 2 + names[i].length;
    view.setUint32(at, ids.length, true);
    at += 4;
    for (const id of ids) {
      view.setUint32(at, id, true);
      at += 4;
    }
  });
  return bytes;
}

export const SELECT_IDS_CONTENT_TYPE = 'application/vnd.fedleaf.select-ids';
