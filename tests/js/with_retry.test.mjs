// withRetry (js_bindings/src/protocol/with_retry.js): which failures it retries, with which
// delays, and what it hands back. Backoff runs with baseMs 0, so no test waits.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { backoffDelayMs } from '../../js_bindings/src/protocol/backoff.js';
import { ProtocolError } from '../../js_bindings/src/protocol/protocol_error.js';
import { isTransient, withRetry } from '../../js_bindings/src/protocol/with_retry.js';

const httpError = (status) => new ProtocolError({ status, code: 'x', message: `status ${status}`, url: 'http://s/' });
const NO_WAIT = { baseMs: 0 };

// A call that fails with each of `failures` in turn, then resolves to 'done'.
function scripted(failures) {
  const attempts = [];
  const call = async (attempt) => {
    attempts.push(attempt);
    if (failures.length) throw failures.shift();
    return 'done';
  };
  return { call, attempts };
}

test('network failures, 429 and 5xx are transient; other statuses are not', () => {
  assert.equal(isTransient(new TypeError('fetch failed')), true);
  for (const status of [429, 500, 503]) assert.equal(isTransient(httpError(status)), true, `${status}`);
  for (const status of [400, 401, 404, 409, 410, 426]) assert.equal(isTransient(httpError(status)), false, `${status}`);
});

test('transient failures are retried until the call succeeds, each reported before its wait', async () => {
  const failures = [new TypeError('fetch failed'), httpError(503), httpError(429)];
  const { call, attempts } = scripted([...failures]);
  const retries = [];
  const result = await withRetry(call, { backoff: NO_WAIT, onRetry: (error, ms, attempt) => retries.push({ error, ms, attempt }) });
  assert.equal(result, 'done');
  assert.deepEqual(attempts, [0, 1, 2, 3]);
  assert.deepEqual(retries.map((r) => r.error), failures);
  assert.deepEqual(retries.map((r) => r.attempt), [0, 1, 2]);
  assert.deepEqual(retries.map((r) => r.ms), [0, 0, 0]);
});

test('a failure that is not transient rejects at once with the call\'s own error', async () => {
  const gone = httpError(410);
  const { call, attempts } = scripted([gone]);
  let retried = false;
  await assert.rejects(withRetry(call, { backoff: NO_WAIT, onRetry: () => { retried = true; } }), (error) => error === gone);
  assert.deepEqual(attempts, [0]);
  assert.equal(retried, false);
});

test('retryIf decides instead of isTransient', async () => {
  const busy = httpError(503);
  const { call, attempts } = scripted([httpError(503), busy]);
  let calls = 0;
  await assert.rejects(withRetry(call, { backoff: NO_WAIT, retryIf: () => ++calls < 2 }), (error) => error === busy);
  assert.deepEqual(attempts, [0, 1]);
});

test('the waits follow backoffDelayMs of the attempt and its options', async () => {
  const backoff = { baseMs: 1, maxMs: 4, random: () => 0 };
  const { call } = scripted([httpError(500), httpError(500), httpError(500), httpError(500)]);
  const waits = [];
  await withRetry(call, { backoff, onRetry: (error, ms) => waits.push(ms) });
  assert.deepEqual(waits, [0, 1, 2, 3].map((attempt) => backoffDelayMs(attempt, backoff)));
});

test('once the signal is aborted, a failure rejects without a retry, and an abort ends the wait', async () => {
  const controller = new AbortController();
  const failure = new TypeError('fetch failed');
  controller.abort(new Error('stopped'));
  await assert.rejects(withRetry(() => Promise.reject(failure), { signal: controller.signal, backoff: NO_WAIT }),
    (error) => error === failure);

  const waiting = new AbortController();
  const pending = withRetry(() => Promise.reject(new TypeError('fetch failed')), {
    signal: waiting.signal, backoff: { baseMs: 60_000, maxMs: 60_000 },
    onRetry: () => queueMicrotask(() => waiting.abort(new Error('leaf stopped'))),
  });
  await assert.rejects(pending, /leaf stopped/);
});
