// runLeaf against a scripted in-process server (a fake fetch): the protocol rules without a
// network. The real-server tests live in tests/js/leaf_server.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

import { LeafStoppedError } from '../../js_bindings/src/leaf/leaf_stopped_error.js';
import { runLeaf } from '../../js_bindings/src/leaf/run_leaf.js';
import { backoffDelayMs, retryAfterMs } from '../../js_bindings/src/protocol/backoff.js';
import { PROTOCOL_VERSION } from '../../js_bindings/src/protocol/version.js';

const SERVER = 'http://leaf.test';

// A scripted task repository: `tasks` is how many train tasks exist; each claim hands one out.
function fakeServer({ tasks = 3, uploadStatus = () => 201, claimScript = [], version = PROTOCOL_VERSION,
  roundOf = () => 1, plan = {}, selectStatus = 200 } = {}) {
  const state = {
    claimBodies: [], claims: 0, uploads: [], leases: new Set(), maxLeases: 0, requests: [], handedOut: 0, selects: [],
  };
  const json = (status, body, headers = {}) => new Response(body === undefined ? null : JSON.stringify(body),
    { status, headers: { 'Content-Type': 'application/json', ...headers } });
  async function fetch(url, init = {}) {
    const u = new URL(url);
    const headers = new Headers(init.headers);
    state.requests.push({ method: init.method ?? 'GET', path: u.pathname, version: headers.get('Fedleaf-Version') });
    if (headers.get('Fedleaf-Version') !== version) {
      return json(426, { error: { code: 'upgrade_required', message: `leaf ${headers.get('Fedleaf-Version')}, server 9.0` } });
    }
    if (u.pathname.endsWith('/tasks:claim')) {
      state.claims += 1;
      state.claimBodies.push(init.body === undefined ? undefined : JSON.parse(init.body));
      const scripted = claimScript.shift();
      if (scripted) return scripted();
      if (state.handedOut >= tasks) {
        return new Response(null, { status: 204, headers: { 'Retry-After': '0', 'Fedleaf-Population-State': 'finished' } });
      }
      const id = `t${state.handedOut++}`;
      state.leases.add(id);
      state.maxLeases = Math.max(state.maxLeases, state.leases.size);
      return json(200, {
        task_id: id, round: roundOf(state.handedOut - 1), kind: 'train', lease_token: `lease-${id}`,
        lease_expires_at: Date.now() / 1000 + 60, plan, model_url: '/v1/populations/p/rounds/1/model',
        model_etag: '"m1"', upload_url: `/v1/tasks/${id}/result`,
      });
    }
    if (u.pathname.endsWith('/model:select') && init.method === 'POST') {
      state.selects.push({ path: u.pathname, contentType: headers.get('Content-Type'), body: new Uint8Array(init.body) });
      if (selectStatus !== 200) return json(selectStatus, { error: { code: 'invalid_argument', message: 'no' } });
      return new Response(new Uint8Array([9, 9]), { status: 200 });
    }
    if (u.pathname.endsWith('/model')) {
      if (headers.get('If-None-Match') === '"m1"') return new Response(null, { status: 304 });
      return new Response(new Uint8Array([1, 2, 3, 4]), { status: 200, headers: { ETag: '"m1"' } });
    }
    const m = u.pathname.match(/^\/v1\/tasks\/(t\d+)\/result$/);
    if (m && init.method === 'PUT') {
      assert.equal(headers.get('Authorization'), `Bearer lease-${m[1]}`);
      const status = uploadStatus(m[1]);
      state.leases.delete(m[1]);
      state.uploads.push({ id: m[1], status, bytes: new Uint8Array(await new Response(init.body).arrayBuffer()) });
      return json(status, status < 300 ? { accepted: true } : { error: { code: 'gone', message: 'round closed' } });
    }
    return json(404, { error: { code: 'not_found', message: u.pathname } });
  }
  return { fetch, state };
}

// selectRequest (with `distinctIds`): the table emb/weight of SELECT_PLAN with those rows.
function fakeExecutor({ trainMs = 0, fail, distinctIds } = {}) {
  return {
    calls: 0,
    ...(distinctIds ? {
      selectRequest: () => [{ name: 'emb/weight', ids: distinctIds, vocab: 100, maxSelectRows: 4, padding: null }],
    } : {}),
    async runTask(task, model, dataset, { onProgress, signal }) {
      this.calls += 1;
      if (fail?.(task)) throw new Error('bad data');
      for (let step = 1; step <= 2; step++) {
        await new Promise((r) => setTimeout(r, trainMs / 2));
        signal?.throwIfAborted();
        onProgress(step, 1 / step);
      }
      return { bytes: new Uint8Array([task.task_id.length, model.length]), numExamples: 10, loss: 0.5 };
    },
  };
}

const fast = { baseMs: 1, maxMs: 5 };

test('a leaf completes every task, reuses the model by ETag and stops when the population is finished', async () => {
  const server = fakeServer({ tasks: 3 });
  const events = [];
  const summary = await runLeaf({
    server: SERVER, population: 'p', token: 'client', dataset: {}, executor: fakeExecutor(),
    fetch: server.fetch, backoff: fast, onEvent: (e) => events.push(e),
  });
  assert.deepEqual(summary, { uploaded: 3, dropped: 0, stopped: 'finished' });
  assert.deepEqual(server.state.uploads.map((u) => u.id).sort(), ['t0', 't1', 't2']);
  const downloads = events.filter((e) => e.type === 'downloaded');
  assert.equal(downloads.length, 3);
  assert.equal(downloads.filter((e) => e.cached).length, 2, 'model fetched once, then from the cache');
  assert.ok(events.some((e) => e.type === 'progress' && e.step === 2));
  assert.equal(events.at(-1).type, 'finished');
  assert.ok(server.state.requests.every((r) => r.version === PROTOCOL_VERSION), 'every request carries Fedleaf-Version');
});

for (const prefetch of [0, 1, 3]) {
  test(`prefetch ${prefetch} never holds more than ${prefetch + 1} leases`, async () => {
    const server = fakeServer({ tasks: 8 });
    const summary = await runLeaf({
      server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor({ trainMs: 6 }),
      fetch: server.fetch, prefetch, backoff: fast,
    });
    assert.equal(summary.uploaded, 8);
    assert.ok(server.state.maxLeases <= prefetch + 1, `held ${server.state.maxLeases}`);
    if (prefetch > 0) assert.ok(server.state.maxLeases >= 2, 'prefetch claims ahead while training');
  });
}

test('204 with Retry-After makes the leaf idle, then it claims again', async () => {
  const noTask = () => new Response(null, { status: 204, headers: { 'Retry-After': '0.01' } });
  const server = fakeServer({ tasks: 1, claimScript: [noTask, noTask] });
  const events = [];
  await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
    fetch: server.fetch, prefetch: 0, backoff: fast, onEvent: (e) => events.push(e),
  });
  const idles = events.filter((e) => e.type === 'idle');
  assert.equal(idles.length, 2);
  assert.equal(idles[0].ms, 10);
  assert.equal(server.state.uploads.length, 1);
});

test('5xx, 429 and network errors on claim are retried with backoff', async () => {
  const script = [
    () => { throw new TypeError('fetch failed'); },
    () => new Response('{"error":{"message":"busy"}}', { status: 503 }),
    () => new Response(null, { status: 429, headers: { 'Retry-After': '0' } }),
  ];
  const server = fakeServer({ tasks: 1, claimScript: script });
  const events = [];
  const summary = await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
    fetch: server.fetch, prefetch: 0, backoff: fast, onEvent: (e) => events.push(e),
  });
  assert.equal(summary.uploaded, 1);
  assert.deepEqual(events.filter((e) => e.type === 'idle').map((e) => e.reason.split(':')[0]),
    ['network', 'HTTP 503', 'HTTP 429']);
});

test('a 410 for a late upload drops that task and the leaf claims the next', async () => {
  const server = fakeServer({ tasks: 3, uploadStatus: (id) => (id === 't1' ? 410 : 201) });
  const events = [];
  const summary = await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
    fetch: server.fetch, backoff: fast, onEvent: (e) => events.push(e),
  });
  assert.deepEqual(summary, { uploaded: 2, dropped: 1, stopped: 'finished' });
  const dropped = events.find((e) => e.type === 'dropped');
  assert.equal(dropped.taskId, 't1');
  assert.equal(dropped.status, 410);
  assert.match(dropped.reason, /round closed/);
});

test('a 426 stops the leaf with the server message', async () => {
  const server = fakeServer({ version: '9.0' });
  await assert.rejects(
    runLeaf({ server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(), fetch: server.fetch }),
    (e) => e instanceof LeafStoppedError && e.status === 426 && e.message.includes(`leaf ${PROTOCOL_VERSION}, server 9.0`));
});

test('a 401 on claim stops the leaf instead of retrying forever', async () => {
  const server = fakeServer({
    claimScript: [() => new Response('{"error":{"code":"unauthorized","message":"bad client token"}}', { status: 401 })],
  });
  await assert.rejects(
    runLeaf({ server: SERVER, population: 'p', token: 'bad', dataset: {}, executor: fakeExecutor(), fetch: server.fetch }),
    { status: 401, message: /bad client token/ });
  assert.equal(server.state.claims, 1);
});

test('abort during training stops the leaf without uploading the task it was training', async () => {
  const server = fakeServer({ tasks: 5 });
  const controller = new AbortController();
  const events = [];
  const summary = await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor({ trainMs: 40 }),
    fetch: server.fetch, prefetch: 1, backoff: fast, signal: controller.signal,
    onEvent: (e) => {
      events.push(e);
      if (e.type === 'progress' && e.taskId === 't1' && e.step === 1) controller.abort();
    },
  });
  assert.equal(summary.stopped, 'aborted');
  assert.deepEqual(server.state.uploads.map((u) => u.id), ['t0']);
  assert.equal(new Set(server.state.uploads.map((u) => u.id)).size, server.state.uploads.length,
    'no task uploaded twice');
});

// An executor that parses plans (createExecutor's loadPlan): each task's plan parsed once, handed
// to runTask, and deleted once its training ends — the task trained, failed, or prefetched and
// never trained because the leaf stopped.
test('each task\'s plan is parsed once, given to runTask, and deleted when the task ends', async () => {
  for (const stop of ['finished', 'failed', 'aborted']) {
    const server = fakeServer({ tasks: 4, plan: { p: 1 }, roundOf: (i) => i + 1 });
    const controller = new AbortController();
    const executor = fakeExecutor({ trainMs: 20, fail: (task) => stop === 'failed' && task.task_id === 't1' });
    const handles = [];
    const given = [];
    executor.loadPlan = (plan, options) => {
      const handle = { plan, options, deleted: 0, delete() { this.deleted += 1; } };
      handles.push(handle);
      return handle;
    };
    const runTask = executor.runTask;
    executor.runTask = function (task, model, dataset, options) {
      given.push([task.task_id, options.plan]);
      assert.equal(options.plan.deleted, 0, 'alive while it trains');
      return runTask.call(this, task, model, dataset, options);
    };
    await runLeaf({
      server: SERVER, population: 'p', token: 'c', dataset: {}, executor, fetch: server.fetch, prefetch: 2,
      backoff: fast, signal: controller.signal,
      onEvent: (e) => {
        if (stop === 'aborted' && e.type === 'trained' && e.taskId === 't0') controller.abort();
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 50));  // jobs prepared ahead settle
    assert.ok(handles.length >= given.length && handles.length >= 2, stop);
    assert.deepEqual(handles.map((h) => [h.deleted, h.plan, h.options]),
      handles.map(() => [1, { p: 1 }, { inference: false }]), stop);
    assert.deepEqual(given.map(([, plan]) => plan), handles.slice(0, given.length), stop);
    if (stop === 'aborted') assert.ok(handles.length > given.length, 'a prefetched plan was never trained');
  }
});

test('a plan the executor cannot parse stops the leaf naming the rule, before any download', async () => {
  const server = fakeServer({ tasks: 2, plan: SELECT_PLAN, roundOf: (i) => i + 1 });
  const executor = fakeExecutor({ distinctIds: Uint32Array.of(3) });
  executor.loadPlan = () => {
    throw new Error('plan.model.layers[0]: bad');
  };
  executor.selectRequest = () => assert.fail('selectRequest of a plan that did not parse');
  const events = [];
  await assert.rejects(runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor, fetch: server.fetch, backoff: fast,
    onEvent: (e) => events.push(e),
  }), /plan\.model\.layers\[0\]: bad/);
  assert.equal(server.state.selects.length, 0);
  assert.equal(server.state.uploads.length, 0);
  assert.deepEqual(events.filter((e) => e.type === 'downloaded'), []);
});

test('a training failure drops the task and the leaf continues', async () => {
  const server = fakeServer({ tasks: 2 });
  const summary = await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, fetch: server.fetch, backoff: fast,
    executor: fakeExecutor({ fail: (task) => task.task_id === 't0' }),
  });
  assert.deepEqual(summary, { uploaded: 1, dropped: 1, stopped: 'finished' });
});

test('maxTasks stops after that many tasks', async () => {
  const server = fakeServer({ tasks: 10 });
  const summary = await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
    fetch: server.fetch, prefetch: 0, backoff: fast, maxTasks: 2,
  });
  assert.deepEqual(summary, { uploaded: 2, dropped: 0, stopped: 'maxTasks' });
});

test('claims ask only for train tasks of rounds after the last one claimed', async () => {
  const server = fakeServer({ tasks: 3, roundOf: (n) => n + 4 });
  await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
    fetch: server.fetch, prefetch: 0, backoff: fast,
  });
  assert.deepEqual(server.state.claimBodies.map((b) => b.min_round), [0, 5, 6, 7]);
});

test('claims wait for a task (wait_s, 20 s by default) unless waitS is 0', async () => {
  const waiting = fakeServer({ tasks: 1 });
  await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
    fetch: waiting.fetch, prefetch: 0, backoff: fast,
  });
  assert.deepEqual(waiting.state.claimBodies.map((b) => b.wait_s), [20, 20]);

  const custom = fakeServer({ tasks: 1 });
  await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
    fetch: custom.fetch, prefetch: 0, backoff: fast, waitS: 5,
  });
  assert.deepEqual(custom.state.claimBodies.map((b) => b.wait_s), [5, 5]);

  const polling = fakeServer({ tasks: 1 });
  await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
    fetch: polling.fetch, prefetch: 0, backoff: fast, waitS: 0,
  });
  assert.deepEqual(polling.state.claimBodies, [{ min_round: 0 }, { min_round: 2 }]);
  await assert.rejects(runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
    fetch: polling.fetch, waitS: -1,
  }), /waitS must be a number of seconds >= 0/);
});

test('a dropped task frees its round: the next claim may take that round again', async () => {
  const server = fakeServer({ tasks: 2, roundOf: () => 3, uploadStatus: (id) => (id === 't0' ? 410 : 201) });
  await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
    fetch: server.fetch, prefetch: 0, backoff: fast,
  });
  assert.deepEqual(server.state.claimBodies.map((b) => b.min_round), [0, 0, 4]);
});

test('backoff grows exponentially with jitter and Retry-After parses seconds and dates', () => {
  assert.equal(backoffDelayMs(0, { baseMs: 100, random: () => 0 }), 50);
  assert.equal(backoffDelayMs(3, { baseMs: 100, random: () => 1 }), 800);
  assert.equal(backoffDelayMs(30, { baseMs: 100, maxMs: 1000, random: () => 1 }), 1000);
  assert.equal(retryAfterMs('2'), 2000);
  assert.equal(retryAfterMs(new Date(10_000).toUTCString(), undefined, 4_000), 6000);
  assert.equal(retryAfterMs('1', '250'), 250);
  assert.equal(retryAfterMs('soon'), undefined);
  assert.equal(retryAfterMs(null), undefined);
});

const SELECT_PLAN = {
  model: { layers: [{ type: 'embedding_bag', name: 'emb', vocab: 100, dim: 2 }, { type: 'dense', name: 'out', units: 2 }] },
  updates: {
    'emb/weight': { encoding: 'row_sparse', aggregator: 'mean_over_contributors', max_select_rows: 4 },
    'out/weight': { encoding: 'dense', aggregator: 'weighted_mean' },
  },
};

test('a select plan posts the data\'s distinct ids to model:select and trains on the answer', async () => {
  const server = fakeServer({ tasks: 2, plan: SELECT_PLAN, roundOf: (i) => i + 1 });
  const events = [];
  const summary = await runLeaf({
    server: SERVER, population: 'p', token: 'tok', dataset: {}, executor: fakeExecutor({ distinctIds: Uint32Array.of(3, 7, 42) }),
    fetch: server.fetch, onEvent: (e) => events.push(e), backoff: fast,
  });
  assert.equal(summary.uploaded, 2);
  assert.deepEqual(server.state.selects.map((r) => r.path),
    ['/v1/populations/p/rounds/1/model:select', '/v1/populations/p/rounds/2/model:select']);
  assert.equal(server.state.selects[0].contentType, 'application/vnd.fedleaf.select-ids');
  const name = new TextEncoder().encode('emb/weight');
  const expected = new Uint8Array(2 + name.length + 4 + 12);
  const view = new DataView(expected.buffer);
  view.setUint16(0, name.length, true);
  expected.set(name, 2);
  view.setUint32(2 + name.length, 3, true);
  [3, 7, 42].forEach((id, i) => view.setUint32(6 + name.length + 4 * i, id, true));
  assert.deepEqual(server.state.selects[0].body, expected);
  assert.ok(!server.state.requests.some((r) => r.path.endsWith('/model')), 'no full download');
  assert.deepEqual(events.filter((e) => e.type === 'downloaded').map((e) => [e.bytes, e.select]), [[2, true], [2, true]]);
  assert.deepEqual(server.state.uploads.map((u) => [...u.bytes]), [[2, 2], [2, 2]]);  // trained on the 2-byte answer
});

test('data touching more rows than max_select_rows download the full model', async () => {
  const server = fakeServer({ tasks: 1, plan: SELECT_PLAN });
  await runLeaf({
    server: SERVER, population: 'p', token: 'tok', dataset: {},
    executor: fakeExecutor({ distinctIds: Uint32Array.of(1, 2, 3, 4, 5) }), fetch: server.fetch, backoff: fast,
  });
  assert.equal(server.state.selects.length, 0);
  assert.deepEqual(server.state.uploads.map((u) => [...u.bytes]), [[2, 4]]);
});

test('a select the server refuses falls back to the full model', async () => {
  for (const status of [400, 404]) {
    const server = fakeServer({ tasks: 1, plan: SELECT_PLAN, selectStatus: status });
    await runLeaf({
      server: SERVER, population: 'p', token: 'tok', dataset: {},
      executor: fakeExecutor({ distinctIds: Uint32Array.of(1) }), fetch: server.fetch, backoff: fast,
    });
    assert.equal(server.state.selects.length, 1);
    assert.deepEqual(server.state.uploads.map((u) => [...u.bytes]), [[2, 4]], `HTTP ${status}`);
  }
});

test('an executor without selectRequest downloads the full model', async () => {
  const server = fakeServer({ tasks: 1, plan: SELECT_PLAN });
  await runLeaf({
    server: SERVER, population: 'p', token: 'tok', dataset: {}, executor: fakeExecutor(), fetch: server.fetch, backoff: fast,
  });
  assert.equal(server.state.selects.length, 0);
  assert.equal(server.state.uploads.length, 1);
});

test('a server that accepts and never answers: the claim hits its deadline, the leaf reports it and retries', { timeout: 20_000 }, async () => {
  const sockets = new Set();
  const silent = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${silent.address().port}`;
  try {
    const controller = new AbortController();
    const idles = [];
    const summary = await runLeaf({
      server: url, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(), backoff: fast,
      waitS: 0.05, claimMarginMs: 50, signal: controller.signal,
      onEvent: (e) => {
        if (e.type !== 'idle') return;
        idles.push(e.reason);
        if (idles.length === 2) controller.abort();  // retried once: enough
      },
    });
    assert.equal(summary.stopped, 'aborted');
    assert.deepEqual(idles, [`network: no answer from ${url} within 0.1 s`, `network: no answer from ${url} within 0.1 s`]);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});

test('network errors are reported with their cause: a claim\'s as idle, a download\'s as a non-fatal error', async () => {
  const refused = () => new TypeError('fetch failed', {
    cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8'), { code: 'ECONNREFUSED' }),
  });
  const server = fakeServer({ tasks: 1, claimScript: [() => { throw refused(); }] });
  let failDownload = true;
  const fetch = (url, init) => {
    if (failDownload && new URL(url).pathname.endsWith('/model')) {
      failDownload = false;
      throw refused();
    }
    return server.fetch(url, init);
  };
  const events = [];
  const summary = await runLeaf({
    server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(), fetch, prefetch: 0,
    backoff: fast, onEvent: (e) => events.push(e),
  });
  assert.equal(summary.uploaded, 1);
  assert.deepEqual(events.filter((e) => e.type === 'idle').map((e) => e.reason),
    ['network: fetch failed (connect ECONNREFUSED 127.0.0.1:8)']);
  const errors = events.filter((e) => e.type === 'error');
  assert.equal(errors.length, 1);
  assert.equal(errors[0].fatal, false);
  assert.match(errors[0].error.message,
    /^model download of task t0: network: fetch failed \(connect ECONNREFUSED 127\.0\.0\.1:8\); retrying in \d+ ms$/);
});

for (const prefetch of [0, 1]) {
  test(`maxTasks counts tasks whose training failed (prefetch ${prefetch}): maxTasks 1 claims one task`, async () => {
    const server = fakeServer({ tasks: 5 });
    const summary = await runLeaf({
      server: SERVER, population: 'p', token: 'c', dataset: {}, fetch: server.fetch, backoff: fast, prefetch,
      maxTasks: 1, executor: fakeExecutor({ fail: () => true }),
    });
    assert.deepEqual(summary, { uploaded: 0, dropped: 1, stopped: 'maxTasks' });
    assert.equal(server.state.claims, 1);
  });
}

test('in a page, a claim to another origin failing as CORS does is reported naming --cors-origin', async () => {
  const server = fakeServer({ tasks: 1, claimScript: [() => { throw new TypeError('Failed to fetch'); }] });
  const events = [];
  globalThis.location = new URL('http://page.test/app/');
  try {
    await runLeaf({ server: SERVER, population: 'p', token: 'c', dataset: {}, executor: fakeExecutor(),
      fetch: server.fetch, prefetch: 0, backoff: fast, onEvent: (e) => events.push(e) });
  } finally {
    delete globalThis.location;
  }
  assert.deepEqual(events.filter((e) => e.type === 'idle').map((e) => e.reason),
    [`network: Failed to fetch; ${SERVER} is another origin than this page's, so this may be CORS: the server ` +
      'must allow http://page.test (start fedleaf-server with --cors-origin http://page.test)']);
});
