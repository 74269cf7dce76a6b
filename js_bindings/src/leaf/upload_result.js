// uploadResult: a trained task's result sent until a final answer or the lease's end. Transient
// failures (network, 429, 5xx) are retried while the lease lasts; a final refusal (410 for a
// closed round, 409, 400, …) or retries past the lease drop the task (a dropped event); a 426
// stops the leaf. Resolves to whether the server accepted the result (201, or 200 for the same
// bytes again).

import { ProtocolError, failureMessage } from '../protocol/protocol_error.js';
import { isTransient } from '../protocol/with_retry.js';
import { LeafStoppedError } from './leaf_stopped_error.js';

/**
 * @param {object} task  the claimed task (upload_url, lease_token, lease_expires_at in seconds)
 * @param {Uint8Array} bytes  the result
 * @param {object} leaf
 * @param {import('../protocol/protocol_client.js').ProtocolClient} leaf.client
 * @param {AbortSignal} [leaf.signal]
 * @param {<T>(what: string, call: () => Promise<T>, retryIf: (error: unknown) => boolean) => Promise<T>} leaf.retry
 * @param {(event: object) => void} leaf.emit  receives uploaded and dropped events
 * @returns {Promise<boolean>}  rejects only when aborted (the signal's reason) or on a 426
 */
export async function uploadResult(task, bytes, { client, signal, retry, emit }) {
  const expiresAt = Number(task.lease_expires_at) * 1000;
  let answer;
  try {
    answer = await retry(`upload of task ${task.task_id}`, () => client.upload(task, bytes, { signal }),
      (error) => isTransient(error) && Date.now() < expiresAt);
  } catch (error) {
    if (signal?.aborted) throw error;
    if (!(error instanceof ProtocolError)) {
      emit({ type: 'dropped', taskId: task.task_id, status: 0, reason: `lease expired during retries: ${failureMessage(error)}` });
      return false;
    }
    if (error.status === 426) throw LeafStoppedError.after('upload', error);
    emit({ type: 'dropped', taskId: task.task_id, status: error.status, reason: error.message });
    return false;
  }
  emit({ type: 'uploaded', taskId: task.task_id, bytes: bytes.length, status: answer.status });
  return true;
}
