// Retry delays: exponential backoff with full jitter, capped, and the server's Retry-After when
// it gives one (never shorter than what the server asked for).

/**
 * @param {number} attempt  0 for the first retry
 * @param {{baseMs?: number, maxMs?: number, random?: () => number}} [options]
 */
export function backoffDelayMs(attempt, options = {}) {
  const base = options.baseMs ?? 250;
  const max = options.maxMs ?? 15_000;
  const random = options.random ?? Math.random;
  const ceiling = Math.min(max, base * 2 ** Math.min(attempt, 20));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * Milliseconds to wait: the server's Fedleaf-Retry-After-Ms when given (finer than HTTP's whole
 * seconds), else Retry-After (seconds or an HTTP date), else undefined.
 */
export function retryAfterMs(header, fineHeader, now = Date.now()) {
  const fine = Number(fineHeader);
  if (fineHeader != null && fineHeader !== '' && Number.isFinite(fine) && fine >= 0) return fine;
  if (header == null || header === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Resolves after ms, or rejects with the signal's reason when aborted first. */
export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    function onAbort() {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
