// ModelSource: the model bytes a leaf trains a task on — select → full → cache.
//
//   const models = new ModelSource({client, population, token, executor, dataset, signal, retry, emit});
//   const bytes = await models.fetch(task);   // emits downloaded {taskId, bytes, cached, select, ms}
//
// Select (issue 11): for a train task whose plan downloads embedding tables by "select", and an
// executor with selectRequest(dataset, task, plan) (the tables and each one's rows, from the
// plan's C++ parse: engine/plan_handle.js), those rows padded as the plan says
// (protocol/model_select.js), every table in one request to .../rounds/{r}/model:select; the
// update trained on them is the same as
// with the full model. Full: when a request would exceed max_select_rows or the server refuses the
// selection (400, 404, 405), the model at the task's model_url. Cache: the last full model (one
// model per round: only the newest is kept) with its ETag; a task naming that ETag is served from
// memory, any other revalidates it with If-None-Match.
//
// A request is retried through `retry` (the leaf's withRetry); one answered with a status no retry
// fixes rejects with a LeafStoppedError, an abort with the signal's reason.

import { selectionIds } from '../protocol/model_select.js';
import { ProtocolError } from '../protocol/protocol_error.js';
import { LeafStoppedError } from './leaf_stopped_error.js';

const isTrain = (task) => (task.kind ?? 'train') === 'train';

export class ModelSource {
  /**
   * @param {object} options
   * @param {import('../protocol/protocol_client.js').ProtocolClient} options.client
   * @param {string} options.population
   * @param {string} [options.token]
   * @param {{selectRequest?: (dataset: object, task: object, plan: object) =>
   *   {name: string, ids: ArrayLike<number>, vocab: number, maxSelectRows: number, padding: object | null}[]}} options.executor
   * @param {object} options.dataset  what executor.selectRequest takes
   * @param {AbortSignal} [options.signal]
   * @param {<T>(what: string, call: () => Promise<T>) => Promise<T>} options.retry  repeats a
   *   request that fails transiently; rejects with its last error
   * @param {(event: object) => void} options.emit  receives the downloaded events
   */
  constructor({ client, population, token, executor, dataset, signal, retry, emit }) {
    Object.assign(this, { client, population, token, executor, dataset, signal, retry, emit });
    // {href, etag, modelEtag, bytes}: the last full model downloaded with an ETag. `etag` is the
    // header (for If-None-Match); `modelEtag` the task's model_etag it was fetched for — they differ
    // (the header is quoted, and an F16 download has an ETag of its own bytes).
    this.cached = null;
  }

  /**
   * The model of `task`: its selected rows, else the full model. Emits one downloaded event.
   * `plan`: the task's plan parsed once (executor.loadPlan), else task.plan is.
   */
  async fetch(task, plan = task.plan) {
    const t0 = performance.now();
    const selection = this.selection(task, plan);
    const selected = selection && await this.select(task, selection);
    if (selected) {
      this.downloaded(task, selected.length, false, true, t0);
      return selected;
    }
    return this.full(task, t0);
  }

  // The select request for a train task, or null when the leaf downloads the full model.
  selection(task, plan) {
    if (!isTrain(task) || typeof this.executor.selectRequest !== 'function' || !plan) return null;
    const wanted = this.executor.selectRequest(this.dataset, task, plan);
    if (wanted.length === 0) return null;
    // Each table's own rows (the union over the inputs feeding it), all in one request.
    const entries = [];
    for (const table of wanted) {
      const ids = selectionIds(table.ids, table);
      if (!ids) return null;
      entries.push({ name: table.name, ids });
    }
    return entries;
  }

  // The selected rows, or null when the server refuses the selection.
  async select(task, entries) {
    const { client, population, token, signal } = this;
    try {
      return await this.retry(`model select of task ${task.task_id}`,
        () => client.selectModel(population, task.round, entries, { token, signal }));
    } catch (error) {
      if (signal?.aborted || !(error instanceof ProtocolError)) throw error;
      if (error.status === 400 || error.status === 404 || error.status === 405) return null;
      throw LeafStoppedError.after('model select', error);
    }
  }

  async full(task, t0) {
    const { client, token, signal } = this;
    const url = client.url(task.model_url);
    const cached = this.cached?.href === url.href ? this.cached : undefined;
    if (cached && task.model_etag && cached.modelEtag === task.model_etag) {
      this.downloaded(task, 0, true, false, t0);
      return cached.bytes;
    }
    let answer;
    try {
      answer = await this.retry(`model download of task ${task.task_id}`,
        () => client.downloadModel(url, { etag: cached?.etag, token, signal }));
    } catch (error) {
      if (signal?.aborted || !(error instanceof ProtocolError)) throw error;
      throw LeafStoppedError.after('model download', error);
    }
    if (answer.kind === 'not_modified') {
      cached.modelEtag = task.model_etag;
      this.downloaded(task, 0, true, false, t0);
      return cached.bytes;
    }
    const { bytes } = answer;
    const etag = answer.etag ?? task.model_etag;
    this.cached = etag ? { href: url.href, etag, modelEtag: task.model_etag, bytes } : null;
    this.downloaded(task, bytes.length, false, false, t0);
    return bytes;
  }

  downloaded(task, bytes, cached, select, t0) {
    this.emit({ type: 'downloaded', taskId: task.task_id, bytes, cached, select, ms: performance.now() - t0 });
  }
}
