// withRetry: one protocol call repeated until it succeeds or fails for good. A failure is
// retried when `retryIf` says so — by default when it is transient: a network failure (fetch's
// errors, a RequestTimeoutError) or a retryable status (429, 5xx) — after backoffDelayMs(attempt)
// (full jitter, capped); anything else, and any failure once the signal is aborted, rejects with
// the call's own error, so the caller decides what it means (fall back, drop, stop).
//
//   const bytes = await withRetry(() => client.selectModel(population, round, entries, {signal}), {
//     signal, backoff: {baseMs: 250},
//     onRetry: (error, ms) => console.warn(`retrying in ${ms} ms: ${error.message}`),
//   });

import { backoffDelayMs, sleep } from './backoff.js';
import { ProtocolError } from './protocol_error.js';

/** True for a failure the same request may not meet again: a network failure, 429 or 5xx. */
export function isTransient(error) {
  return !(error instanceof ProtocolError) || error.retryable;
}

/**
 * @template T
 * @param {(attempt: number) => Promise<T>} call  attempt: 0 for the first call
 * @param {object} [options]
 * @param {AbortSignal} [options.signal]  aborts the wait between attempts (with its reason)
 * @param {{baseMs?: number, maxMs?: number, random?: () => number}} [options.backoff]
 * @param {(error: unknown) => boolean} [options.retryIf=isTransient]
 * @param {(error: unknown, ms: number, attempt: number) => void} [options.onRetry]  before each
 *   wait of `ms` milliseconds
 * @returns {Promise<T>}
 */
export async function withRetry(call, { signal, backoff, retryIf = isTransient, onRetry } = {}) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call(attempt);
    } catch (error) {
      if (signal?.aborted || !retryIf(error)) throw error;
      const ms = backoffDelayMs(attempt, backoff);
      onRetry?.(error, ms, attempt);
      await sleep(ms, signal);
    }
  }
}
