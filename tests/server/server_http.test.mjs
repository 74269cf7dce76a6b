// HTTP integration tests against the real fedleaf-server binary on 127.0.0.1.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PROTOCOL_VERSION } from '../../js_bindings/src/protocol/version.js';
import {
  startServer, call, createPopulation, trainResult, referenceNextModel, maxAbsDifference,
  decodeSafetensors, ADMIN_TOKEN, PROTOCOL, tempDir, PLAN, initialModel,
} from './server_harness.mjs';

let server;
const webRoot = path.join(tempDir('fedleaf-web-'), 'web');

before(async () => {
  mkdirSync(webRoot, { recursive: true });
  writeFileSync(path.join(webRoot, 'index.html'), '<!doctype html><title>demo</title>');
  server = await startServer({
    args: ['--web-root', webRoot, '--max-body-bytes', '65536', '--body-timeout-s', '1',
           '--header-timeout-s', '2', '--cors-origin', 'http://allowed.example'],
  });
});
after(async () => { await server?.stop(); });

async function claim(population) {
  return call(`${server.url}/v1/populations/${population.id}/tasks:claim`,
              { method: 'POST', token: population.client_token });
}
async function upload(task, body) {
  return call(`${server.url}${task.upload_url}`, { method: 'PUT', token: task.lease_token, body });
}
async function status(population) {
  return (await call(`${server.url}/v1/populations/${population.id}`)).json;
}

// Sends raw bytes on a fresh connection and returns the response text (until close or timeout).
function raw(bytes, { pauseMs = 0, thenBytes = null, waitMs = 4000 } = {}) {
  return new Promise((resolve, reject) => {
    const { port, hostname } = new URL(server.url);
    const socket = net.connect(Number(port), hostname);
    let text = '';
    socket.on('data', (d) => { text += d; });
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
    socket.setTimeout(waitMs, () => { socket.destroy(); resolve(text); });
    socket.write(bytes);
    if (thenBytes) setTimeout(() => socket.write(thenBytes), pauseMs);
  });
}

test('a full round with three scripted clients publishes the reference aggregate', async () => {
  const population = await createPopulation(server.url, { id: 'full', rounds: 2, clients_per_round: 3 });
  const uploads = [
    { rows: [1, 3], rowValue: 0.5, denseValue: 0.25, numExamples: 3, loss: 0.5 },
    { rows: [3, 7], rowValue: -1, denseValue: 1, numExamples: 1, loss: 1.5 },
    { rows: [9], rowValue: 2, denseValue: -0.5, numExamples: 2, loss: 1 },
  ];
  const results = await Promise.all(uploads.map(async (u) => {
    const task = (await claim(population)).json;
    assert.equal(task.kind, 'train');
    assert.equal(task.round, 0);
    const model = await call(`${server.url}${task.model_url}`);
    assert.equal(model.status, 200);
    assert.equal(model.headers.get('etag'), `"${task.model_etag}"`);
    assert.equal(model.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    const cached = await call(`${server.url}${task.model_url}`, { headers: { 'If-None-Match': `"${task.model_etag}"` } });
    assert.equal(cached.status, 304);
    return upload(task, trainResult(u));
  }));

  assert.deepEqual(results.map((r) => r.status), [201, 201, 201]);
  const s = await status(population);
  assert.equal(s.round, 1);
  assert.equal(s.history[0].reports, 3);
  assert.equal(s.history[0].examples, 6);
  assert.ok(Math.abs(s.history[0].mean_train_loss - (3 * 0.5 + 1.5 + 2) / 6) < 1e-9);
  const next = await call(`${server.url}/v1/populations/full/rounds/1/model`);
  assert.ok(maxAbsDifference(next.bytes, referenceNextModel(uploads)) < 1e-5);
  const metrics = (await call(`${server.url}/metrics`)).bytes.toString();
  assert.match(metrics, /fedleaf_uploads_total\{status="201"\} [1-9]/);
  assert.match(metrics, /fedleaf_round_duration_seconds_count [1-9]/);
});

test('a population spec with a broken server_optimizer gets 400 naming the field', async () => {
  const body = (optimizer) => JSON.stringify({
    plan: PLAN, initial_model_b64: initialModel().toString('base64'), server_optimizer: optimizer,
  });
  const create = (optimizer) => call(`${server.url}/v1/populations`, {
    method: 'POST', token: ADMIN_TOKEN, body: body(optimizer), headers: { 'Content-Type': 'application/json' },
  });
  const refused = await create({ type: 'sgd', momentum: 1.5 });
  assert.equal(refused.status, 400);
  assert.equal(refused.json.error.code, 'invalid_input');
  assert.match(refused.json.error.message, /^population\.server_optimizer\.momentum: expected a number in \[0, 1\)/);
  const created = await createPopulation(server.url, { id: 'fedadam', server_optimizer: { type: 'adam' } });
  const shown = (await call(`${server.url}/v1/populations/${created.id}`)).json.server_optimizer;
  assert.deepEqual(shown, { type: 'adam', learning_rate: 0.01, beta1: 0.9, beta2: 0.99, epsilon: 0.001,
                            bias_correction: true });
});

test('malformed uploads get 400 and leave the round unchanged', async () => {
  const population = await createPopulation(server.url, { id: 'malformed', clients_per_round: 2 });
  const task = (await claim(population)).json;
  const good = trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 1 });
  const cases = {
    truncated: good.subarray(0, good.length - 5),
    nan: trainResult({ rows: [1], rowValue: NaN, denseValue: 1, numExamples: 1 }),
    out_of_range_index: trainResult({ rows: [12], rowValue: 1, denseValue: 1, numExamples: 1 }),
    wrong_shape: trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 1 }, { denseShape: [2, 3] }),
    zero_examples: trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 0 }),
    garbage: Buffer.from('definitely not safetensors'),
  };
  for (const [name, body] of Object.entries(cases)) {
    const res = await upload(task, body);
    assert.equal(res.status, 400, name);
    assert.equal(typeof res.json.error.message, 'string', name);
    assert.equal(res.json.error.code, 'invalid_input', name);
  }
  const s = await status(population);
  assert.equal(s.reports, 0);
  assert.equal(s.rejections.invalid_result, Object.keys(cases).length);
  assert.equal((await upload(task, good)).status, 201);
  assert.equal((await upload(task, good)).status, 200);
  assert.equal((await upload(task, trainResult({ rows: [2], rowValue: 1, denseValue: 1, numExamples: 1 }))).status, 409);
  assert.equal((await status(population)).reports, 1);
});

test('an oversize body gets 413 and the server keeps serving', async () => {
  const population = await createPopulation(server.url, { id: 'oversize', clients_per_round: 2 });
  const task = (await claim(population)).json;

  const res = await upload(task, Buffer.alloc(70000, 1));

  assert.equal(res.status, 413);
  assert.equal(res.json.error.code, 'payload_too_large');
  assert.equal((await status(population)).reports, 0);
  assert.equal((await call(`${server.url}/healthz`)).status, 200);
  assert.equal((await upload(task, trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 1 }))).status, 201);
});

// Regression: a Content-Length over the limit whose body had not arrived with the header (the
// client sent "Expect: 100-continue", or is slow) closed the connection without an answer.
test('an oversize Content-Length gets 413 before the body is sent, with or without Expect', async () => {
  const population = await createPopulation(server.url, { id: 'oversize-expect', clients_per_round: 2 });
  const task = (await claim(population)).json;
  const head = (expect) => `PUT ${task.upload_url} HTTP/1.1\r\nHost: x\r\nFedleaf-Version: ${PROTOCOL}\r\n` +
    `Authorization: Bearer ${task.lease_token}\r\nContent-Length: 70000\r\n` +
    (expect ? 'Expect: 100-continue\r\n' : '') + '\r\n';

  for (const expect of [true, false]) {
    const text = await raw(head(expect), { waitMs: 3000 });
    assert.match(text, /^HTTP\/1\.1 413/, `expect=${expect}: ${JSON.stringify(text.slice(0, 80))}`);
    assert.match(text, /payload_too_large/);
    assert.match(text, /70000 bytes exceeds the limit of 65536/);
    assert.doesNotMatch(text, /100 Continue/);
  }
  assert.equal((await status(population)).reports, 0);
});

// Regression: "Transfer-Encoding: gzip" (no chunked) was read as a request without a body, so the
// claim was served ignoring its body, whose bytes were then answered as a second request.
test('a Transfer-Encoding other than chunked gets 400 and a closed connection, nothing smuggled', async () => {
  const population = await createPopulation(server.url, { id: 'transfer-coding', clients_per_round: 1 });
  const smuggled = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
  for (const codings of [['gzip'], ['gzip, chunked'], ['chunked', 'identity'], ['Chunked, x']]) {
    const text = await raw(`POST /v1/populations/${population.id}/tasks:claim HTTP/1.1\r\nHost: x\r\n` +
      `Fedleaf-Version: ${PROTOCOL}\r\nAuthorization: Bearer ${population.client_token}\r\n` +
      codings.map((c) => `Transfer-Encoding: ${c}\r\n`).join('') + '\r\n' + smuggled, { waitMs: 3000 });
    assert.match(text, /^HTTP\/1\.1 400/, `${codings}: ${JSON.stringify(text.slice(0, 80))}`);
    // Beast refuses some forms itself ("bad Transfer-Encoding"); the server names the rule for the rest.
    assert.match(text, codings[0] === 'gzip'
      ? /Transfer-Encoding 'gzip' is not accepted: the only transfer coding read is 'chunked'/
      : /Transfer-Encoding/);
    assert.equal(text.match(/HTTP\/1\.1 /g).length, 1, `${codings}: one answer, the smuggled request unread`);
  }
  // No lease was handed out: the round's one task is still there.
  assert.equal((await claim(population)).status, 200);
  // Chunked alone is read as before.
  const body = '{"min_round": 0}';
  const chunked = await raw(`POST /v1/populations/${population.id}/tasks:claim HTTP/1.1\r\nHost: x\r\n` +
    `Fedleaf-Version: ${PROTOCOL}\r\nAuthorization: Bearer ${population.client_token}\r\n` +
    `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
  assert.match(chunked, /^HTTP\/1\.1 204/);
});

// Regression: an absolute-form target (RFC 9112 §3.2.2: servers must accept it) got 404.
test('an absolute-form request target is served like its origin form', async () => {
  const population = await createPopulation(server.url, { id: 'absolute-form', clients_per_round: 1 });
  const health = await raw(`GET ${server.url}/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  assert.match(health, /^HTTP\/1\.1 200/);
  const claimed = await raw(`POST HTTP://proxy.example:81/v1/populations/${population.id}/tasks:claim HTTP/1.1\r\n` +
    `Host: x\r\nFedleaf-Version: ${PROTOCOL}\r\nAuthorization: Bearer ${population.client_token}\r\n` +
    'Content-Length: 0\r\nConnection: close\r\n\r\n');
  assert.match(claimed, /^HTTP\/1\.1 200/);
  assert.match(claimed, /"upload_url":"\/v1\/tasks\//);
  const missing = await raw('GET http://x/no-such-path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.match(missing, /^HTTP\/1\.1 404/);
  assert.match(missing, /no such (path|file): \/no-such-path"/);
});

test('Expect: 100-continue within the limit gets 100 Continue, then the answer to the body', async () => {
  const population = await createPopulation(server.url, { id: 'continue', clients_per_round: 2 });
  const task = (await claim(population)).json;
  const body = trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 1 });
  const head = `PUT ${task.upload_url} HTTP/1.1\r\nHost: x\r\nFedleaf-Version: ${PROTOCOL}\r\n` +
    `Authorization: Bearer ${task.lease_token}\r\nContent-Length: ${body.length}\r\n` +
    'Expect: 100-continue\r\nConnection: close\r\n\r\n';

  const text = await raw(head, { pauseMs: 300, thenBytes: body });

  assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201/);
  assert.equal((await status(population)).reports, 1);
});

test('a slow body gets 408 and the round is unchanged', async () => {
  const population = await createPopulation(server.url, { id: 'slow', clients_per_round: 2 });
  const task = (await claim(population)).json;
  const head = `PUT ${task.upload_url} HTTP/1.1\r\nHost: x\r\nFedleaf-Version: ${PROTOCOL}\r\n` +
               `Authorization: Bearer ${task.lease_token}\r\nContent-Length: 1000\r\n\r\n`;

  const text = await raw(head + 'only-a-few-bytes');

  assert.match(text, /^HTTP\/1\.1 408/);
  assert.match(text, /request_timeout/);
  assert.equal((await status(population)).reports, 0);
  assert.equal((await upload(task, trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 1 }))).status, 201);
});

test('a slow header gets 408', async () => {
  const text = await raw('GET /healthz HTTP/1.1\r\nHost: x\r\n');
  assert.match(text, /^HTTP\/1\.1 408/);
});

test('another major version gets 426 naming both versions, before auth', async () => {
  const res = await call(`${server.url}/v1/populations`, { method: 'POST', headers: { 'Fedleaf-Version': '7.3' } });
  assert.equal(res.status, 426);
  assert.match(res.json.error.message, /7\.3/);
  assert.ok(res.json.error.message.includes(`fedleaf ${PROTOCOL_VERSION}`), res.json.error.message);
});

test('auth failures are 401 without a token and 403 with a wrong one', async () => {
  const population = await createPopulation(server.url, { id: 'auth' });
  const url = `${server.url}/v1/populations/auth/tasks:claim`;
  assert.equal((await call(url, { method: 'POST' })).status, 401);
  assert.equal((await call(url, { method: 'POST', token: 'wrong' })).status, 403);
  assert.equal((await call(`${server.url}/v1/populations`, { token: 'wrong' })).status, 403);
  const list = await call(`${server.url}/v1/populations`, { token: ADMIN_TOKEN });
  assert.ok(list.json.populations.some((p) => p.id === population.id));
});

// Regression: the first of two Authorization (or Fedleaf-Version) headers counted, silently.
test('a header the server reads once, given twice, gets 400 naming it', async () => {
  const population = await createPopulation(server.url, { id: 'twice', clients_per_round: 1 });
  const head = `POST /v1/populations/${population.id}/tasks:claim HTTP/1.1\r\nHost: x\r\n`;
  const auth = `Authorization: Bearer ${population.client_token}\r\n`;
  for (const [name, headers] of [
    ['authorization', `Fedleaf-Version: ${PROTOCOL}\r\n${auth}${auth}`],
    ['fedleaf-version', `Fedleaf-Version: ${PROTOCOL}\r\nFedleaf-Version: 9.9\r\n${auth}`],
    ['content-type', `Fedleaf-Version: ${PROTOCOL}\r\n${auth}Content-Type: a/b\r\nContent-Type: c/d\r\n`],
  ]) {
    const text = await raw(`${head}${headers}Content-Length: 0\r\n\r\n`);
    assert.match(text, /^HTTP\/1\.1 400/, name);
    assert.match(text, new RegExp(`the header '${name}' is given more than once`));
  }
  assert.equal((await claim(population)).status, 200);
});

test('a claim body over 1 KiB gets 413 before it is parsed, and no task is leased', async () => {
  const population = await createPopulation(server.url, { id: 'claim-cap', clients_per_round: 1 });
  const url = `${server.url}/v1/populations/${population.id}/tasks:claim`;
  for (const token of ['no-such-token', population.client_token]) {
    const res = await call(url, { method: 'POST', token, body: '['.repeat(60000) });
    assert.equal(res.status, 413);
    assert.match(res.json.error.message, /claim body: 60000 bytes exceeds the 1024 bytes a claim body may have/);
  }
  assert.equal((await claim(population)).status, 200);
});

test('claims answer 204 with Retry-After when every task is leased', async () => {
  const population = await createPopulation(server.url, { id: 'busy', clients_per_round: 1, lease_s: 30 });
  assert.equal((await claim(population)).status, 200);
  const res = await claim(population);
  assert.equal(res.status, 204);
  assert.ok(Number(res.headers.get('retry-after')) >= 1);
  assert.equal(res.headers.get('fedleaf-population-state'), 'running');
});

test('CORS: allowed origins are echoed, others get nothing, preflights answer 204', async () => {
  const allowed = await call(`${server.url}/healthz`, { headers: { Origin: 'http://allowed.example' } });
  const other = await call(`${server.url}/healthz`, { headers: { Origin: 'http://evil.example' } });
  const preflight = await fetch(`${server.url}/v1/populations/x/tasks:claim`, {
    method: 'OPTIONS',
    headers: { Origin: 'http://allowed.example', 'Access-Control-Request-Method': 'POST' },
  });

  assert.equal(allowed.headers.get('access-control-allow-origin'), 'http://allowed.example');
  assert.equal(allowed.headers.get('access-control-allow-credentials'), null);
  assert.equal(other.headers.get('access-control-allow-origin'), null);
  assert.equal(preflight.status, 204);
  assert.match(preflight.headers.get('access-control-allow-headers'), /Fedleaf-Version/);
});

test('static files are served cross-origin isolated', async () => {
  const res = await fetch(`${server.url}/`);
  assert.equal(res.status, 200);
  assert.match(await res.text(), /demo/);
  assert.equal(res.headers.get('cross-origin-opener-policy'), 'same-origin');
  assert.equal(res.headers.get('cross-origin-embedder-policy'), 'require-corp');
  assert.equal((await fetch(`${server.url}/../../etc/passwd`)).status, 404);
});

test('SIGTERM finishes in-flight work and exits 0', async () => {
  const own = await startServer();
  const population = await createPopulation(own.url, { id: 'term', clients_per_round: 3 });
  const task = (await call(`${own.url}/v1/populations/term/tasks:claim`, { method: 'POST', token: population.client_token })).json;
  const res = await call(`${own.url}${task.upload_url}`, { method: 'PUT', token: task.lease_token,
    body: trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 1 }) });
  assert.equal(res.status, 201);

  const { code } = await own.stop();

  assert.equal(code, 0);
  const again = await startServer({ dir: own.dir });
  const s = (await call(`${again.url}/v1/populations/term`)).json;
  assert.equal(s.reports, 1);
  const model = await call(`${again.url}/v1/populations/term/rounds/0/model`);
  assert.equal(decodeSafetensors(model.bytes).tensors['out/weight'].shape.join(','), '3,2');
  assert.equal((await again.stop()).code, 0);
});

test('--keep-models 1: an older round\'s model is 410 and its file deleted, the current one is served', async () => {
  const own = await startServer({ args: ['--keep-models', '1'] });
  try {
    const population = await createPopulation(own.url, { id: 'keep', rounds: 4, clients_per_round: 1 });
    const etags = [];
    for (let round = 0; round < 3; round++) {
      const task = (await call(`${own.url}/v1/populations/keep/tasks:claim`, { method: 'POST', token: population.client_token })).json;
      assert.equal(task.round, round);
      etags.push(task.model_etag);
      const res = await call(`${own.url}${task.upload_url}`, { method: 'PUT', token: task.lease_token,
        body: trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 1 }) });
      assert.equal(res.status, 201);
      assert.equal((await call(`${own.url}/v1/populations/keep`)).json.round, round + 1);  // waits for the close
    }

    for (const round of [0, 1]) {
      const gone = await call(`${own.url}/v1/populations/keep/rounds/${round}/model`);
      assert.equal(gone.status, 410);
      assert.match(gone.json.error.message, /retention/);
    }
    assert.equal((await call(`${own.url}/v1/populations/keep/rounds/3/model`)).status, 200);
    // Models 0 and 1 were dropped by round 1's close, durable by round 2's upload's sync.
    const files = readdirSync(path.join(own.dir, 'tasks.db-models'));
    for (const etag of etags.slice(0, 2)) assert.ok(!files.includes(`${etag}.safetensors`), `${etag} is still there`);
  } finally {
    await own.stop();
  }
});
