// ProtocolClient against a scripted fetch: the requests it builds (URL, method, headers, body) and
// how it reads each answer (typed outcomes, ProtocolError); against local TCP servers that never
// answer or stall: its deadlines (RequestTimeoutError). The same client against the real
// server is exercised by tests/js/leaf_server.test.mjs and tests/package/consumer.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import net from 'node:net';

import {
  ProtocolClient, ProtocolError, PROTOCOL_VERSION, RequestTimeoutError, networkErrorMessage,
} from '../../js_bindings/src/index.js';
import { protocolError } from '../../js_bindings/src/protocol/protocol_error.js';

// A fetch that records every request and answers with the next scripted Response.
function scripted(...answers) {
  const requests = [];
  const fetch = async (url, init = {}) => {
    requests.push({ url: String(url), method: init.method ?? 'GET', headers: new Headers(init.headers), body: init.body });
    const next = answers.shift();
    if (next instanceof Error) throw next;
    return next;
  };
  return { fetch, requests };
}

const json = (status, body, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } });

test('claim posts min_round and wait_s with the client token and the version header, and returns the task', async () => {
  const task = { task_id: 7, round: 2, kind: 'train' };
  const { fetch, requests } = scripted(json(200, task));
  const client = new ProtocolClient({ server: 'http://tasks.example/base', token: 'client-token', fetch });
  const outcome = await client.claim('spam pop', { minRound: 2, waitS: 20 });
  assert.deepEqual(outcome, { kind: 'task', task });
  const [request] = requests;
  assert.equal(request.url, 'http://tasks.example/base/v1/populations/spam%20pop/tasks:claim');
  assert.equal(request.method, 'POST');
  assert.equal(request.headers.get('Fedleaf-Version'), PROTOCOL_VERSION);
  assert.equal(request.headers.get('Authorization'), 'Bearer client-token');
  assert.equal(request.headers.get('Content-Type'), 'application/json');
  assert.equal(request.body, '{"min_round":2,"wait_s":20}');
});

test('claim without waitS polls: the body has no wait_s', async () => {
  const { fetch, requests } = scripted(new Response(null, { status: 204 }));
  await new ProtocolClient({ server: 'http://h', fetch }).claim('p', { minRound: 0 });
  assert.equal(requests[0].body, '{"min_round":0}');
});

test('a 204 claim is no_task with the fine retry hint, finished or paused when the population state says so', async () => {
  const { fetch } = scripted(
    new Response(null, { status: 204, headers: { 'Retry-After': '1', 'Fedleaf-Retry-After-Ms': '120' } }),
    new Response(null, { status: 204, headers: { 'Fedleaf-Population-State': 'finished' } }),
    new Response(null, { status: 204, headers: { 'Fedleaf-Population-State': 'paused', 'Retry-After': '10' } }));
  const client = new ProtocolClient({ server: 'http://h', fetch });
  assert.deepEqual(await client.claim('p'), { kind: 'no_task', finished: false, paused: false, retryAfterMs: 120 });
  assert.deepEqual(await client.claim('p'), { kind: 'no_task', finished: true, paused: false, retryAfterMs: undefined });
  assert.deepEqual(await client.claim('p'), { kind: 'no_task', finished: false, paused: true, retryAfterMs: 10_000 });
});

test('an error answer throws a ProtocolError with the status, the server\'s code and message and the retry hint', async () => {
  const { fetch } = scripted(json(429, { error: { code: 'too_many_requests', message: 'slow down' } },
    { 'Retry-After': '2' }));
  const client = new ProtocolClient({ server: 'http://h', fetch });
  await assert.rejects(client.claim('p'), (error) => {
    assert.ok(error instanceof ProtocolError);
    assert.equal(error.status, 429);
    assert.equal(error.code, 'too_many_requests');
    assert.equal(error.message, 'slow down');
    assert.equal(error.retryAfterMs, 2000);
    assert.equal(error.retryable, true);
    assert.equal(error.url, 'http://h/v1/populations/p/tasks:claim');
    return true;
  });
});

test('the error parser falls back to the body text, then the status, for answers without a JSON error', async () => {
  const text = await protocolError(new Response('bad gateway', { status: 502 }), 'http://h/x');
  assert.equal(text.message, 'bad gateway');
  assert.equal(text.code, 'http');
  assert.equal(text.retryable, true);
  const empty = await protocolError(new Response('', { status: 409 }), 'http://h/x');
  assert.equal(empty.code, 'conflict');
  assert.equal(empty.message, 'HTTP 409');
  assert.equal(empty.retryable, false);
});

test('a network failure rejects with fetch\'s own error, not a ProtocolError', async () => {
  const { fetch } = scripted(new TypeError('fetch failed'));
  await assert.rejects(new ProtocolClient({ server: 'http://h', fetch }).status('p'),
    (error) => error instanceof TypeError && !(error instanceof ProtocolError));
});

test('downloadModel sends If-None-Match and reads 304 as not_modified; a model answer carries its ETag', async () => {
  const { fetch, requests } = scripted(
    new Response(new Uint8Array([1, 2, 3]), { status: 200, headers: { ETag: '"e1"' } }),
    new Response(null, { status: 304 }));
  const client = new ProtocolClient({ server: 'http://h/', token: 't', fetch });
  const first = await client.downloadModel('/v1/populations/p/rounds/1/model');
  assert.deepEqual({ ...first, bytes: [...first.bytes] }, { kind: 'model', bytes: [1, 2, 3], etag: '"e1"' });
  assert.deepEqual(await client.downloadModel(client.modelUrl('p', 1), { etag: '"e1"', token: false }),
    { kind: 'not_modified', etag: '"e1"' });
  assert.equal(requests[0].url, 'http://h/v1/populations/p/rounds/1/model');
  assert.equal(requests[0].headers.get('Authorization'), 'Bearer t');
  assert.equal(requests[1].headers.get('If-None-Match'), '"e1"');
  assert.equal(requests[1].headers.get('Authorization'), null, 'token: false sends none');
});

test('selectModel posts the binary id lists', async () => {
  const { fetch, requests } = scripted(new Response(new Uint8Array([9]), { status: 200 }));
  const bytes = await new ProtocolClient({ server: 'http://h', token: 't', fetch })
    .selectModel('p', 3, [{ name: 'e', ids: Uint32Array.from([1, 5]) }]);
  assert.deepEqual([...bytes], [9]);
  assert.equal(requests[0].url, 'http://h/v1/populations/p/rounds/3/model:select');
  assert.equal(requests[0].headers.get('Content-Type'), 'application/vnd.fedleaf.select-ids');
  assert.deepEqual([...requests[0].body], [1, 0, 101, 2, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0]);
});

test('upload puts the bytes with the lease token to the task\'s upload_url', async () => {
  const { fetch, requests } = scripted(json(201, { status: 'accepted' }), json(410, { error: { code: 'gone', message: 'lease expired' } }));
  const client = new ProtocolClient({ server: 'http://h', token: 'client', fetch });
  const task = { upload_url: '/v1/tasks/4/result', lease_token: 'lease' };
  assert.deepEqual(await client.upload(task, new Uint8Array([1])), { status: 201, result: { status: 'accepted' } });
  assert.equal(requests[0].method, 'PUT');
  assert.equal(requests[0].url, 'http://h/v1/tasks/4/result');
  assert.equal(requests[0].headers.get('Authorization'), 'Bearer lease');
  await assert.rejects(client.upload(task, new Uint8Array([1])), (e) => e.status === 410 && e.message === 'lease expired');
});

test('status is public (no token); createPopulation and listPopulations send the admin token', async () => {
  const { fetch, requests } = scripted(json(200, { id: 'p' }), json(201, { id: 'q' }), json(200, { populations: [] }));
  const client = new ProtocolClient({ server: 'http://h', token: 'admin', fetch });
  assert.deepEqual(await client.status('p'), { id: 'p' });
  assert.deepEqual(await client.createPopulation({ plan: {} }), { id: 'q' });
  assert.deepEqual(await client.listPopulations(), { populations: [] });
  assert.equal(requests[0].headers.get('Authorization'), null);
  assert.equal(requests[1].method, 'POST');
  assert.equal(requests[1].body, '{"plan":{}}');
  assert.equal(requests[1].headers.get('Authorization'), 'Bearer admin');
  assert.equal(requests[2].url, 'http://h/v1/populations');
});

test('in a page, the default server is the folder of the page (a page at /dashboard.html talks to /)', async () => {
  const { fetch, requests } = scripted(json(200, {}));
  globalThis.location = new URL('http://h:8080/demo/dashboard.html?x=1');
  try {
    await new ProtocolClient({ fetch }).status('p');
  } finally {
    delete globalThis.location;
  }
  assert.equal(requests[0].url, 'http://h:8080/demo/v1/populations/p');
});

test('version overrides the header (what a test of an old or future leaf sends)', async () => {
  const { fetch, requests } = scripted(json(200, {}));
  await new ProtocolClient({ server: 'http://h', fetch, version: '7.3' }).status('p');
  assert.equal(requests[0].headers.get('Fedleaf-Version'), '7.3');
});

// A TCP server that accepts connections and never answers (a hung server, a black-holing proxy),
// or, with `answer`, writes that once the request arrives and then says nothing more.
async function silentServer(answer) {
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    if (answer) socket.once('data', () => socket.write(answer));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

test('a server that never answers: each call rejects with a RequestTimeoutError naming the origin and the deadline', { timeout: 20_000 }, async () => {
  const silent = await silentServer();
  try {
    const client = new ProtocolClient({ server: silent.url, token: 't', timeoutMs: 80, claimMarginMs: 60 });
    const timedOut = (ms) => (error) => {
      assert.ok(error instanceof RequestTimeoutError, String(error));
      assert.ok(!(error instanceof ProtocolError));
      assert.equal(error.message, `no answer from ${silent.url} within ${ms / 1000} s`);
      assert.equal(error.origin, silent.url);
      assert.equal(error.timeoutMs, ms);
      return true;
    };
    await assert.rejects(client.claim('p', { minRound: 0 }), timedOut(60));  // no wait_s: the margin
    await assert.rejects(client.claim('p', { waitS: 0.05 }), timedOut(110));  // wait_s + margin
    await assert.rejects(client.status('p'), timedOut(80));
    await assert.rejects(client.downloadModel('/v1/populations/p/rounds/0/model'), timedOut(80));
    await assert.rejects(client.upload({ upload_url: '/v1/tasks/1/result', lease_token: 'l' }, new Uint8Array(4)),
      timedOut(80));
  } finally {
    await silent.close();
  }
});

test('an answer whose body stalls rejects after stallTimeoutMs without a chunk', { timeout: 20_000 }, async () => {
  const stalling = await silentServer('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: "e"\r\n\r\nfirst bytes');
  try {
    const client = new ProtocolClient({ server: stalling.url, stallTimeoutMs: 80 });
    await assert.rejects(client.downloadModel('/v1/populations/p/rounds/0/model'), (error) => {
      assert.ok(error instanceof RequestTimeoutError, String(error));
      assert.equal(error.phase, 'body');
      assert.match(error.message, /^no answer from http:\/\/127\.0\.0\.1:\d+ within 0\.08 s \(the answer's body stalled\)$/);
      return true;
    });
  } finally {
    await stalling.close();
  }
});

test('the caller\'s signal still aborts a request with its own reason, and no listener stays on it', { timeout: 20_000 }, async () => {
  const silent = await silentServer();
  try {
    const controller = new AbortController();
    const client = new ProtocolClient({ server: silent.url, timeoutMs: 60 });
    const { fetch } = scripted(json(200, {}), json(200, {}));
    const scriptedClient = new ProtocolClient({ server: 'http://h', fetch });
    await scriptedClient.status('p', { signal: controller.signal });
    await assert.rejects(client.status('p', { signal: controller.signal }), RequestTimeoutError);
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0, 'listeners removed when requests end');
    const pending = client.claim('p', { waitS: 10, signal: controller.signal });
    controller.abort(new Error('mine'));
    await assert.rejects(pending, { message: 'mine' });
  } finally {
    await silent.close();
  }
});

test('deadlines must be positive numbers of milliseconds (Infinity: none); the defaults', () => {
  const client = new ProtocolClient({ server: 'http://h' });
  assert.deepEqual([client.timeoutMs, client.claimMarginMs, client.stallTimeoutMs], [90_000, 15_000, 30_000]);
  assert.equal(new ProtocolClient({ server: 'http://h', timeoutMs: Infinity }).timeoutMs, Infinity);
  for (const bad of [0, -1, NaN, '5']) {
    assert.throws(() => new ProtocolClient({ server: 'http://h', timeoutMs: bad }), /timeoutMs must be a number of milliseconds > 0/);
  }
});

test('networkErrorMessage adds the causes fetch keeps in error.cause', async () => {
  assert.equal(networkErrorMessage(new TypeError('fetch failed', {
    cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
  })), 'fetch failed (connect ECONNREFUSED 127.0.0.1:1)');
  assert.equal(networkErrorMessage(new TypeError('fetch failed', {
    cause: new AggregateError([new Error('connect ECONNREFUSED ::1:8'), new Error('connect ECONNREFUSED 127.0.0.1:8')]),
  })), 'fetch failed (connect ECONNREFUSED ::1:8; connect ECONNREFUSED 127.0.0.1:8)');
  assert.equal(networkErrorMessage(new TypeError('fetch failed')), 'fetch failed');
  // Real fetch failures: a closed port and a scheme fetch cannot speak.
  const closed = net.createServer();
  await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address();
  await new Promise((resolve) => closed.close(resolve));
  await assert.rejects(new ProtocolClient({ server: `http://127.0.0.1:${port}` }).status('p'),
    (error) => /^fetch failed \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)$/.test(networkErrorMessage(error)));
  await assert.rejects(new ProtocolClient({ server: 'ftp://127.0.0.1:21' }).status('p'),
    (error) => /unknown scheme/.test(networkErrorMessage(error)));
});

// As in a page at `origin`: globalThis.location for the duration of `body`.
async function inPage(origin, body) {
  globalThis.location = new URL(`${origin}/app/`);
  try {
    return await body();
  } finally {
    delete globalThis.location;
  }
}

test('a page\'s failed request to another origin names CORS and --cors-origin; same-origin and aborted ones do not', async () => {
  const failing = () => Promise.reject(new TypeError('Failed to fetch'));
  await inPage('http://page.test:5173', async () => {
    await assert.rejects(new ProtocolClient({ server: 'http://repo.test:8080', fetch: failing }).status('p'),
      (error) => {
        assert.deepEqual(error.crossOrigin, { page: 'http://page.test:5173', server: 'http://repo.test:8080' });
        assert.equal(networkErrorMessage(error), 'Failed to fetch; http://repo.test:8080 is another origin than ' +
          'this page\'s, so this may be CORS: the server must allow http://page.test:5173 (start fedleaf-server ' +
          'with --cors-origin http://page.test:5173)');
        return true;
      });
    await assert.rejects(new ProtocolClient({ server: 'http://page.test:5173/', fetch: failing }).status('p'),
      (error) => networkErrorMessage(error) === 'Failed to fetch');
    const controller = new AbortController();
    controller.abort(new TypeError('stopped'));
    await assert.rejects(new ProtocolClient({ server: 'http://repo.test:8080', fetch: failing }).status('p',
      { signal: controller.signal }), (error) => networkErrorMessage(error) === 'Failed to fetch');
  });
});
