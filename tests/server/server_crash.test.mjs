// Crash test: SIGKILL the server at random points while scripted clients drive a round, restart
// it on the same database, and finish the round. The published aggregate must equal the
// reference computed from exactly the uploads that got a 2xx answer: no accepted report lost,
// none counted twice, leases honoured across restarts. Enough clients run at once that claims
// and uploads share group commits, so kills also land while a batch is open (its steps done but
// not committed: their answers must not have been sent) and between a batch's commit and its
// sync (committed, unanswered: a retry of the same bytes gets 200).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import {
  startServer, call, createPopulation, trainResult, randomTrainSpec, referenceNextModel, maxAbsDifference, tempDir,
  SERVER_BIN, ADMIN_TOKEN, adminClient, PLAN, initialModel,
} from './server_harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('SIGKILL at random points loses no accepted report and counts none twice', async (t) => {
  const dir = tempDir('fedleaf-crash-');
  const serverArgs = ['--checkpoint-every', '5'];
  const ctx = { server: await startServer({ dir, args: serverArgs }) };
  const clientsPerRound = 120;
  const population = await createPopulation(ctx.server.url, {
    id: 'crash', rounds: 2, clients_per_round: clientsPerRound, over_selection: 2, lease_s: 600,
  });
  let seed = 12345;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };

  const accepted = new Map();  // task id -> upload spec, for every 2xx answer
  let done = false;
  // Retries `fn` across server restarts until it gets an HTTP answer.
  async function answered(fn) {
    for (;;) {
      if (done) return null;
      try { return await fn(ctx.server.url); } catch { await sleep(10); }
    }
  }
  async function client(id) {
    while (!done) {
      const claim = await answered((url) => call(`${url}/v1/populations/crash/tasks:claim`,
                                                 { method: 'POST', token: population.client_token }));
      if (!claim) return;
      if (claim.status === 204) { await sleep(20); continue; }
      assert.equal(claim.status, 200, `claim: ${claim.bytes}`);
      const task = claim.json;
      if (task.round !== 0) return;
      const spec = randomTrainSpec(random);
      const body = trainResult(spec);
      await sleep(5 + random() * 25);
      // A lost response leaves the outcome unknown: re-upload the same bytes until answered.
      const res = await answered((url) => call(`${url}${task.upload_url}`,
                                               { method: 'PUT', token: task.lease_token, body }));
      if (!res) return;
      if (res.status === 201 || res.status === 200) {
        assert.ok(!accepted.has(task.task_id) || res.status === 200, `task ${task.task_id} accepted twice`);
        accepted.set(task.task_id, spec);
      } else {
        assert.equal(res.status, 410, `client ${id} upload: ${res.status} ${res.bytes}`);
      }
    }
  }

  const clients = Array.from({ length: 10 }, (_, i) => client(i));
  let kills = 0;
  const batching = { commits: 0, answers: 0 };
  try {
    for (;;) {
      await sleep(10 + random() * 60);
      const status = await call(`${ctx.server.url}/v1/populations/crash`).catch(() => null);
      if (status?.json?.round >= 1) break;
      const metrics = await call(`${ctx.server.url}/metrics`).catch(() => null);
      const counter = (name) => Number(metrics?.bytes.toString().match(new RegExp(`^${name} (\\d+)`, 'm'))?.[1] ?? 0);
      batching.commits += counter('fedleaf_group_commits_total');
      batching.answers += counter('fedleaf_group_commit_answers_total');
      await ctx.server.kill();
      kills += 1;
      ctx.server = await startServer({ dir, args: serverArgs });
    }
  } finally {
    done = true;
    await Promise.all(clients).catch(() => {});
  }

  try {
    const status = (await call(`${ctx.server.url}/v1/populations/crash`)).json;
    t.diagnostic(`${kills} kills, ${accepted.size} accepted uploads, ` +
                 `${batching.answers} answers in ${batching.commits} group commits`);
    assert.ok(kills >= 2, `only ${kills} kills happened`);
    assert.equal(status.history[0].reports, clientsPerRound);
    assert.equal(accepted.size, clientsPerRound);
    const model = await call(`${ctx.server.url}/v1/populations/crash/rounds/1/model`);
    const difference = maxAbsDifference(model.bytes, referenceNextModel([...accepted.values()]));
    assert.ok(difference < 1e-5, `aggregate differs from the reference by ${difference}`);
  } finally {
    await ctx.server.kill();
  }
});

// A server optimizer's state (here FedAdam's moments and per-row step counts) is stored with each
// model in the close's transaction: a server killed after every accepted upload — mid-round, and
// right after the upload that completes a round (its close may be in flight, off the request
// path) — publishes, after its restarts, the models of a server never killed, bit for bit.
test('SIGKILL after every upload keeps a FedAdam population on the uninterrupted models', async () => {
  const spec = {
    id: 'adam', rounds: 4, clients_per_round: 3, min_reports: 3, lease_s: 600,
    server_optimizer: { type: 'adam', learning_rate: 0.1, beta1: 0.8, beta2: 0.9 },
  };
  let seed = 777;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const specs = Array.from({ length: spec.rounds }, () =>
    Array.from({ length: spec.clients_per_round }, () => randomTrainSpec(random)));
  const uploads = specs.map((round) => round.map((s) => trainResult(s)));
  // Claims until a train task of `round` (a background close may still be running) and uploads.
  async function report(url, token, round, body) {
    for (;;) {
      const claim = await call(`${url}/v1/populations/adam/tasks:claim`, { method: 'POST', token });
      if (claim.status === 200 && claim.json.round === round) {
        const res = await call(`${url}${claim.json.upload_url}`,
                               { method: 'PUT', token: claim.json.lease_token, body });
        assert.equal(res.status, 201, `upload: ${res.bytes}`);
        return;
      }
      assert.ok(claim.status === 204 || claim.status === 200, `claim: ${claim.status} ${claim.bytes}`);
      await sleep(10);
    }
  }
  const steady = await startServer();
  const dir = tempDir('fedleaf-crash-adam-');
  let killed = await startServer({ dir });
  try {
    const a = await createPopulation(steady.url, spec);
    const b = await createPopulation(killed.url, spec);
    for (let round = 0; round < spec.rounds; round++) {
      for (const body of uploads[round]) {
        await report(steady.url, a.client_token, round, body);
        await report(killed.url, b.client_token, round, body);
        await killed.kill();
        killed = await startServer({ dir });
      }
    }
    for (;;) {  // the last close may still be in flight on either server
      const [sa, sb] = await Promise.all([steady.url, killed.url].map((u) => call(`${u}/v1/populations/adam`)));
      if (sa.json.round >= spec.rounds && sb.json.round >= spec.rounds) break;
      await sleep(20);
    }
    const status = (await call(`${killed.url}/v1/populations/adam`)).json;
    assert.equal(status.server_optimizer.type, 'adam');
    for (let round = 1; round <= spec.rounds; round++) {
      const expected = await call(`${steady.url}/v1/populations/adam/rounds/${round}/model`);
      const got = await call(`${killed.url}/v1/populations/adam/rounds/${round}/model`);
      assert.equal(got.status, 200);
      assert.equal(got.headers.get('etag'), expected.headers.get('etag'), `round ${round}'s model`);
    }
    // Not FedAvg's model: the optimizer moved it (FedAvg's reference: the harness's).
    const model1 = (await call(`${killed.url}/v1/populations/adam/rounds/1/model`)).bytes;
    assert.ok(maxAbsDifference(model1, referenceNextModel(specs[0])) > 1e-3);
  } finally {
    await steady.kill();
    await killed.kill();
  }
});

// A buffered population (FedBuff) folds each report into the open version when it is accepted,
// stores it under that version, and publishes every K reports inline: a server killed after
// every upload — mid-buffer, and right after the upload that publishes a version — rebuilds the
// buffer from the stored reports with their staleness weights and publishes the versions of a
// server never killed, bit for bit. A report staler than max_staleness is 409 on both.
test('SIGKILL after every upload keeps a buffered population on the uninterrupted versions', async () => {
  const spec = {
    id: 'fedbuff', plan: PLAN, initial_model_b64: initialModel().toString('base64'), rounds: 4,
    mode: 'buffered', buffer_size: 2, concurrency: 3, max_staleness: 1, lease_s: 600,
  };
  let seed = 4242;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const specs = Object.fromEntries('abcdefghi'.split('').map((name) => [name, randomTrainSpec(random)]));
  // [operation, task, version it is handed out on / answer expected]; staleness in comments.
  const script = [
    ['claim', 'a', 0], ['claim', 'b', 0], ['claim', 'c', 0],
    ['upload', 'a', 201], ['upload', 'b', 201],  // version 1
    ['claim', 'd', 1], ['claim', 'e', 1],
    ['upload', 'c', 201], ['upload', 'd', 201],  // c: staleness 1; version 2
    ['claim', 'f', 2], ['upload', 'f', 201], ['claim', 'g', 2], ['upload', 'g', 201],  // version 3
    ['upload', 'e', 409],  // staleness 2 > 1
    ['claim', 'h', 3], ['claim', 'i', 3], ['upload', 'h', 201], ['upload', 'i', 201],  // version 4
  ];
  const steady = await startServer();
  const dir = tempDir('fedleaf-crash-fedbuff-');
  let killed = await startServer({ dir });
  try {
    const tokens = [];
    for (const server of [steady, killed]) {
      tokens.push((await adminClient(server.url).createPopulation(spec)).client_token);
    }
    const tasks = [new Map(), new Map()];
    for (const [op, name, expected] of script) {
      for (const k of [0, 1]) {
        const url = k === 0 ? steady.url : killed.url;
        if (op === 'claim') {
          const claim = await call(`${url}/v1/populations/fedbuff/tasks:claim`, { method: 'POST', token: tokens[k] });
          assert.equal(claim.status, 200, `claim ${name}: ${claim.status} ${claim.bytes}`);
          assert.equal(claim.json.round, expected, `task ${name}'s version`);
          tasks[k].set(name, claim.json);
          continue;
        }
        const task = tasks[k].get(name);
        const res = await call(`${url}${task.upload_url}`,
                               { method: 'PUT', token: task.lease_token, body: trainResult(specs[name]) });
        assert.equal(res.status, expected, `upload ${name}: ${res.bytes}`);
        if (expected === 409) assert.match(res.json.error.message, /staleness 2 exceeds max_staleness 1/);
        if (k === 1) {
          await killed.kill();
          killed = await startServer({ dir });
        }
      }
    }
    for (const server of [steady, killed]) {
      const status = (await call(`${server.url}/v1/populations/fedbuff`)).json;
      assert.equal(status.state, 'finished');
      assert.equal(status.mode, 'buffered');
      assert.equal(status.rejections.stale, 1);
      assert.deepEqual(status.history.slice(0, 4).map((h) => h.reports), [2, 2, 2, 2]);
    }
    for (let version = 1; version <= spec.rounds; version++) {
      const expected = await call(`${steady.url}/v1/populations/fedbuff/rounds/${version}/model`);
      const got = await call(`${killed.url}/v1/populations/fedbuff/rounds/${version}/model`);
      assert.equal(got.status, 200);
      assert.equal(got.headers.get('etag'), expected.headers.get('etag'), `version ${version}'s model`);
    }
    // Version 1 is the K = 2 reports of version 0, both of staleness 0: the synchronous rule.
    const model1 = (await call(`${steady.url}/v1/populations/fedbuff/rounds/1/model`)).bytes;
    assert.ok(maxAbsDifference(model1, referenceNextModel([specs.a, specs.b])) < 1e-5);
  } finally {
    await steady.kill();
    await killed.kill();
  }
});

// Regression: two servers started on one SQLite file both ran, each with its own rounds in
// memory, and handed out the same population's tasks twice. The second now refuses to start; a
// killed server's lock goes with it.
test('a second server on the same SQLite file refuses to start, and a killed one frees it', async () => {
  const dir = tempDir();
  const first = await startServer({ dir });
  try {
    await assert.rejects(startServer({ dir }), /another fedleaf-server uses '.*tasks\.db'.*postgresql:\/\//s);
  } finally {
    await first.kill();
  }
  const again = await startServer({ dir });
  assert.equal((await call(`${again.url}/healthz`)).status, 200);
  await again.stop();
});

// Regression: NaN, negative and overflowing numbers were taken (--tick-interval-s -1 spun a core,
// --max-body-bytes -1 wrapped), and a mistyped --log-level silenced every log, fatal ones too.
test('bad start-up flags exit non-zero naming the flag, before any database is created', () => {
  const dir = tempDir();
  const token = path.join(dir, 'admin.token');
  writeFileSync(token, ADMIN_TOKEN);
  const db = path.join(dir, 'tasks.db');
  for (const [flag, value] of [['--threads', '0'], ['--threads', '1000'], ['--tick-interval-s', '-1'],
    ['--tick-interval-s', 'nan'], ['--header-timeout-s', 'inf'], ['--max-body-bytes', '-1'],
    ['--max-body-bytes', '99999999999999999999'], ['--max-connections', '0'], ['--port', '70000'],
    ['--client-rate-limit', 'nan'], ['--client-rate-burst', '0.5'], ['--log-level', 'verbose'],
    ['--web-root', path.join(dir, 'missing')], ['--db', ':memory:']]) {
    const args = ['--db', db, '--admin-token-file', token, '--port', '0', flag, value];
    const run = spawnSync(SERVER_BIN, args, { encoding: 'utf8', timeout: 10000 });
    assert.notEqual(run.status, 0, `${flag} ${value}`);
    assert.equal(run.signal, null, `${flag} ${value}`);
    assert.match(run.stderr + run.stdout, new RegExp(`${flag}: `), `${flag} ${value}`);
    assert.ok(!existsSync(db), `${flag} ${value}: no database left behind`);
  }
  const dirToken = spawnSync(SERVER_BIN, ['--db', db, '--admin-token-file', dir, '--port', '0'],
    { encoding: 'utf8', timeout: 10000 });
  assert.equal(dirToken.status, 1);
  assert.match(dirToken.stderr, /--admin-token-file: '.*' is a directory, not a file/);
  assert.ok(!existsSync(db));
});

// Regression: the server opened (and created) its database before binding its port, so a start
// on a taken port failed after leaving a new database and its lock file behind.
test('a start on a taken port fails before creating a database', async () => {
  const dir = tempDir();
  const token = path.join(dir, 'admin.token');
  writeFileSync(token, ADMIN_TOKEN);
  const taken = createServer();
  await new Promise((resolve) => taken.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = taken.address();
    const db = path.join(dir, 'tasks.db');
    const run = spawnSync(SERVER_BIN, ['--db', db, '--admin-token-file', token, '--port', String(port)],
      { encoding: 'utf8', timeout: 10000 });
    assert.equal(run.status, 1);
    assert.match(run.stderr, new RegExp(`http server: cannot listen on 127\\.0\\.0\\.1:${port}: Address already in use`));
    assert.deepEqual(readdirSync(dir), ['admin.token']);
  } finally {
    taken.close();
  }
});

// Regression: an IPv6 address was printed as http://::1:PORT, which is no URL. On a machine
// without an IPv6 loopback the server cannot listen there, and must say so and exit 1.
test('the listening line is a URL for an IPv6 address too', async () => {
  const dir = tempDir();
  const token = path.join(dir, 'admin.token');
  writeFileSync(token, ADMIN_TOKEN);
  const proc = spawn(SERVER_BIN, ['--db', path.join(dir, 'tasks.db'), '--admin-token-file', token,
    '--port', '0', '--address', '::1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
  const line = await new Promise((resolve) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(out.split('\n')[0]);
    });
    exited.then(() => resolve(null));
  });
  if (line === null) {
    assert.equal(await exited, 1);
    assert.match(stderr, /http server: cannot listen on ::1:0/);
    return;
  }
  const url = new URL(line.replace('fedleaf-server listening on ', ''));
  assert.equal(url.hostname, '[::1]');
  assert.equal((await call(`${url.origin}/healthz`)).status, 200);
  proc.kill('SIGTERM');
  assert.equal(await exited, 0);
});
