// Scale-out: three fedleaf-server instances on one PostgreSQL database behind haproxy, scripted
// leaves claiming and uploading through the load balancer. Mid-round one instance is SIGKILLed
// and another restarted. Every upload answered 2xx must be counted exactly once, the rounds
// close, and the published model equals the dense reference over exactly the accepted uploads
// (tolerance 1e-5, as for one server: the aggregate itself is bit-identical to a single
// server's folding the same results in seq order — task_repository_shared_test.cc). Needs
// FEDLEAF_TEST_PG_URL (scripts/test.sh starts a cluster) and Debian's haproxy; skipped without
// them, except under CI=true where that is a failure. The restart storm (one server killed and
// started 30 times beside two serving ones) needs FEDLEAF_TEST_PG_URL only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import {
  startServer, call, createPopulation, trainResult, randomTrainSpec, referenceNextModel, maxAbsDifference, tempDir,
  PROTOCOL, REPO_ROOT,
} from './server_harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const PG_BIN = process.env.FEDLEAF_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));
const missing = !process.env.FEDLEAF_TEST_PG_URL ? 'FEDLEAF_TEST_PG_URL is not set'
  : !HAPROXY ? 'haproxy is not installed' : null;
if (missing && process.env.CI === 'true') throw new Error(`CI=true but ${missing}`);
const pgMissing = process.env.FEDLEAF_TEST_PG_URL ? null : 'FEDLEAF_TEST_PG_URL is not set';

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// A fresh database on the cluster of FEDLEAF_TEST_PG_URL; returns its URL.
function createDatabase(name) {
  const url = new URL(process.env.FEDLEAF_TEST_PG_URL);
  const args = ['-h', url.hostname, '-p', url.port || '5432', '-U', url.username || 'postgres'];
  spawnSync(path.join(PG_BIN, 'dropdb'), [...args, '--if-exists', name]);
  const made = spawnSync(path.join(PG_BIN, 'createdb'), [...args, name], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`createdb ${name}: ${made.stderr}`);
  url.pathname = `/${name}`;
  return url.toString();
}

// The shipped configuration (deploy/haproxy.cfg) with one server line per backend port.
async function startHaproxy(dir, port, backends) {
  const cfg = path.join(dir, 'haproxy.cfg');
  writeFileSync(cfg, readFileSync(path.join(REPO_ROOT, 'deploy/haproxy.cfg'), 'utf8') +
    backends.map((p, i) => `  server s${i} 127.0.0.1:${p} check inter 200 fall 1 rise 1\n`).join(''));
  const env = { ...process.env, FEDLEAF_LB_BIND: `127.0.0.1:${port}` };
  const proc = spawn(HAPROXY, ['-f', cfg, '-db'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  for (let i = 0; i < 100; i++) {
    const up = await call(`http://127.0.0.1:${port}/healthz`).catch(() => null);
    if (up?.status === 200) return { proc, exited, url: `http://127.0.0.1:${port}` };
    await sleep(50);
  }
  proc.kill('SIGKILL');
  throw new Error(`haproxy did not start: ${stderr}`);
}

test('three servers behind haproxy count every accepted upload once through a kill and a restart',
  { skip: missing ?? false }, async (t) => {
    const dir = tempDir('fedleaf-scale-');
    const db = createDatabase(`fedleaf_scale_${process.pid}`);
    const args = ['--tick-interval-s', '0.2', '--checkpoint-every', '5'];
    const ports = [await freePort(), await freePort(), await freePort()];
    const servers = [];
    for (const port of ports) servers.push(await startServer({ dir, db, port, args }));
    const lb = await startHaproxy(dir, await freePort(), ports);
    t.after(async () => {
      lb.proc.kill('SIGTERM');
      await lb.exited;
      for (const s of servers) if (s.proc.exitCode === null && s.proc.signalCode === null) await s.stop();
    });

    const clientsPerRound = 60;
    const population = await createPopulation(lb.url, {
      id: 'scale', rounds: 2, clients_per_round: clientsPerRound, over_selection: 2, lease_s: 600,
    });
    let seed = 4242;
    const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
    const accepted = [new Map(), new Map()];  // per round: task id -> upload spec (2xx answers)
    const serverErrors = [];
    let done = false;

    async function answered(fn) {
      for (;;) {
        if (done) return null;
        try {
          const res = await fn();
          if (res.status < 500) return res;
          serverErrors.push(`${res.status} ${res.bytes}`);  // its instance died: the leaf retries
        } catch { /* connection lost: retry */ }
        await sleep(20);
      }
    }
    // Each claim stands for another device: no min_round, so a loop keeps training round 0
    // until it closes.
    async function leaf() {
      while (!done) {
        const claim = await answered(() => call(`${lb.url}/v1/populations/scale/tasks:claim`, {
          method: 'POST', token: population.client_token }));
        if (!claim) return;
        if (claim.status === 204) {
          if (claim.headers?.get?.('fedleaf-population-state') === 'finished') return;
          await sleep(30);
          continue;
        }
        assert.equal(claim.status, 200, `claim: ${claim.status} ${claim.bytes}`);
        const task = claim.json;
        const spec = randomTrainSpec(random);
        const body = trainResult(spec);
        await sleep(5 + random() * 20);
        const res = await answered(() => call(`${lb.url}${task.upload_url}`,
                                              { method: 'PUT', token: task.lease_token, body }));
        if (!res) return;
        if (res.status === 201 || res.status === 200) {
          assert.ok(!accepted[task.round].has(task.task_id) || res.status === 200,
                    `task ${task.task_id} accepted twice`);
          accepted[task.round].set(task.task_id, spec);
        } else {
          assert.equal(res.status, 410, `upload: ${res.status} ${res.bytes}`);
        }
      }
    }

    const leaves = Array.from({ length: 12 }, () => leaf());
    try {
      // Mid-round 0: SIGKILL instance 1, then restart instance 2 (SIGTERM, same port).
      while (accepted[0].size < clientsPerRound / 3) await sleep(10);
      await servers[1].kill();
      while (accepted[0].size < (2 * clientsPerRound) / 3) await sleep(10);
      await servers[2].stop();
      servers[2] = await startServer({ dir, db, port: ports[2], args });
      for (let i = 0; i < 600; i++) {
        const status = await call(`${lb.url}/v1/populations/scale`).catch(() => null);
        if (status?.json?.state === 'finished') break;
        await sleep(50);
      }
    } finally {
      done = true;
      await Promise.all(leaves).catch(() => {});
    }

    const status = (await call(`${lb.url}/v1/populations/scale`)).json;
    t.diagnostic(`accepted ${accepted[0].size} + ${accepted[1].size}, ` +
                 `${serverErrors.length} 5xx answers seen while an instance died: ` +
                 `${[...new Set(serverErrors)].slice(0, 3).join('; ')}`);
    assert.equal(status.state, 'finished', JSON.stringify(status).slice(0, 600));
    for (const round of [0, 1]) {
      assert.equal(status.history[round].reports, accepted[round].size, `round ${round} reports`);
      // Accepts in flight on other servers when the quorum is reached are part of the close
      // (docs/deploy.md "Locks"): a round may count more than clients_per_round, each once.
      assert.ok(accepted[round].size >= clientsPerRound, `round ${round}: ${accepted[round].size}`);
    }
    // Round 1 trains from round 1's model: check round 0's aggregate against the reference.
    const model = await call(`${lb.url}/v1/populations/scale/rounds/1/model`);
    assert.equal(model.status, 200, `model of round 1: ${model.bytes}`);
    const difference = maxAbsDifference(model.bytes, referenceNextModel([...accepted[0].values()]));
    assert.ok(difference < 1e-5, `aggregate differs from the reference by ${difference}`);
    for (const s of [servers[0], servers[2]]) {
      const direct = await call(`${s.url}/v1/populations/scale/rounds/2/model`);
      const viaLb = await call(`${lb.url}/v1/populations/scale/rounds/2/model`);
      assert.equal(direct.headers.get('etag'), viaLb.headers.get('etag'));
    }
  });

// Behind haproxy, a leaf that closes its connection while its claim waits (long poll) must reach
// the server, which then drops the parked claim (docs/design.md, "Client disconnect"): without
// `option abortonclose` (deploy/haproxy.cfg) haproxy keeps the server's side open until the wait
// ends, and a task handed to the claim meanwhile is lost for a whole lease.
test('behind haproxy, a waiting claim whose leaf disconnects is dropped by the server',
  { skip: HAPROXY ? false : 'haproxy is not installed' }, async (t) => {
    const dir = tempDir('fedleaf-abort-');
    const server = await startServer({ dir });
    const lb = await startHaproxy(dir, await freePort(), [new URL(server.url).port]);
    t.after(async () => {
      lb.proc.kill('SIGTERM');
      await lb.exited;
      await server.stop();
    });
    const population = await createPopulation(lb.url, { id: 'abort', rounds: 1, clients_per_round: 1, lease_s: 600 });
    const claimUrl = `${lb.url}/v1/populations/abort/tasks:claim`;
    for (;;) {  // every task leased: the next claim waits
      const claim = await call(claimUrl, { method: 'POST', token: population.client_token });
      if (claim.status === 204) break;
      assert.equal(claim.status, 200, `claim: ${claim.status} ${claim.bytes}`);
    }
    const waitingClaims = async () => {
      const metrics = (await call(`${server.url}/metrics`)).bytes.toString();
      return Number(/^fedleaf_waiting_claims (\d+)$/m.exec(metrics)[1]);
    };

    const request = http.request(claimUrl, {
      method: 'POST',
      headers: { 'Fedleaf-Version': PROTOCOL, Authorization: `Bearer ${population.client_token}` },
    });
    request.on('error', () => {});  // the destroy below
    request.end(JSON.stringify({ wait_s: 30 }));
    let parked = 0;
    for (let i = 0; i < 600 && parked === 0; i++) {
      await sleep(20);
      parked = await waitingClaims();
    }
    assert.equal(parked, 1, 'the claim through haproxy never parked');
    request.destroy();
    // A bound well inside the claim's 30 s wait, not a timing: the server drops the claim as soon
    // as the close reaches it.
    let left = parked;
    for (let i = 0; i < 200 && left > 0; i++) {
      await sleep(50);
      left = await waitingClaims();
    }
    assert.equal(left, 0, 'the server still holds the claim 10 s after its leaf closed the connection: ' +
                          'haproxy did not pass the close on');
  });

// Two servers on one database, no balancer: each round's two reports are uploaded to the two
// servers at once, then both are asked for the status at once — both may see the quorum and try
// to close the round. Each round must close exactly once (the servers' closed-round counts sum to
// the rounds), with both reports, and both servers publish the same model.
test('two servers that see a round\'s quorum at once publish one model', { skip: missing ?? false },
  async (t) => {
    const dir = tempDir('fedleaf-race-');
    const db = createDatabase(`fedleaf_race_${process.pid}`);
    const args = ['--tick-interval-s', '60'];  // only requests close rounds here
    const servers = [await startServer({ dir, db, args }), await startServer({ dir, db, args })];
    t.after(async () => { for (const s of servers) await s.stop(); });
    const rounds = 4;
    const population = await createPopulation(servers[0].url, {
      id: 'race', rounds, clients_per_round: 2, lease_s: 600 });
    const uploads = [];
    for (let round = 0; round < rounds; round++) {
      const tasks = [];
      for (const s of servers) {
        const claim = await call(`${s.url}/v1/populations/race/tasks:claim`, {
          method: 'POST', token: population.client_token, body: JSON.stringify({ min_round: round }) });
        assert.equal(claim.status, 200, `claim of round ${round}: ${claim.status} ${claim.bytes}`);
        assert.equal(claim.json.round, round);
        tasks.push(claim.json);
      }
      const specs = tasks.map((_, i) => ({ rows: [i, 3 + round], rowValue: 0.25 * (i + 1),
                                           denseValue: 0.1 * (round + 1), numExamples: 2 + i }));
      uploads.push(specs);
      const answers = await Promise.all(tasks.map((task, i) => call(`${servers[i].url}${task.upload_url}`, {
        method: 'PUT', token: task.lease_token, body: trainResult(specs[i]) })));
      for (const a of answers) assert.equal(a.status, 201, `upload: ${a.status} ${a.bytes}`);
      const statuses = await Promise.all(servers.map((s) => call(`${s.url}/v1/populations/race`)));
      for (const s of statuses) {
        assert.equal(s.status, 200);
        assert.equal(s.json.history[round].status, 'closed', `round ${round}`);
        assert.equal(s.json.history[round].reports, 2);
      }
    }
    let closes = 0;
    for (const s of servers) {
      const metrics = (await call(`${s.url}/metrics`)).bytes.toString();
      closes += Number(/^fedleaf_round_duration_seconds_count (\d+)/m.exec(metrics)[1]);
    }
    assert.equal(closes, rounds, 'every round closed once');
    for (let round = 1; round <= rounds; round++) {
      const models = await Promise.all(servers.map(
        (s) => call(`${s.url}/v1/populations/race/rounds/${round}/model`)));
      assert.equal(models[0].status, 200);
      assert.equal(models[0].headers.get('etag'), models[1].headers.get('etag'));
    }
    const first = await call(`${servers[1].url}/v1/populations/race/rounds/1/model`);
    const difference = maxAbsDifference(first.bytes, referenceNextModel(uploads[0]));
    assert.ok(difference < 1e-5, `round 0's aggregate differs from the reference by ${difference}`);
  });

// A rolling restart at its worst: one server SIGKILLed and started again 30 times while two
// others serve the claims and uploads of 12 leaves. A start that ran the schema's DDL took
// table locks that deadlocked with the running claims (issue 32): it exited, or a claim was
// answered 503. Every start must listen, and no claim be answered 5xx.
test('a server killed and started 30 times beside two serving ones always starts, no claim fails',
  { skip: pgMissing ?? false }, async (t) => {
    const dir = tempDir('fedleaf-storm-');
    const db = createDatabase(`fedleaf_storm_${process.pid}`);
    const args = ['--tick-interval-s', '0.2'];
    const servers = [await startServer({ dir, db, args }), await startServer({ dir, db, args })];
    let restarted = null;
    t.after(async () => {
      if (restarted && restarted.proc.exitCode === null && restarted.proc.signalCode === null) {
        await restarted.kill();
      }
      for (const s of servers) await s.stop();
    });
    const population = await createPopulation(servers[0].url, {
      id: 'storm', rounds: 100000, clients_per_round: 8, lease_s: 600 });
    let seed = 77;
    const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
    const claimErrors = [];
    const uploadErrors = [];
    let claims = 0;
    let done = false;
    async function leaf(server) {
      while (!done) {
        let claim;
        try {
          claim = await call(`${server.url}/v1/populations/storm/tasks:claim`, {
            method: 'POST', token: population.client_token });
        } catch (e) {
          claimErrors.push(`claim: ${e.message}`);
          continue;
        }
        claims += 1;
        if (claim.status >= 500) claimErrors.push(`claim: ${claim.status} ${claim.bytes}`);
        if (claim.status !== 200) {
          await sleep(10);
          continue;
        }
        const res = await call(`${server.url}${claim.json.upload_url}`, {
          method: 'PUT', token: claim.json.lease_token, body: trainResult(randomTrainSpec(random)) })
          .catch((e) => ({ status: 599, bytes: e.message }));
        // A side transaction that gives up its lock wait answers 503 (deploy.md "Locks"): counted,
        // not a failure of this test.
        if (res.status >= 500) uploadErrors.push(`upload: ${res.status} ${res.bytes}`);
      }
    }
    const leaves = Array.from({ length: 12 }, (_, i) => leaf(servers[i % 2]));
    const startMs = [];
    try {
      for (let i = 0; i < 30; i++) {
        const begun = Date.now();
        restarted = await startServer({ dir, db, args });  // rejects when it exits before listening
        startMs.push(Date.now() - begun);
        // A claim of its own, so that some kills land while its batch is open.
        await call(`${restarted.url}/v1/populations/storm/tasks:claim`, {
          method: 'POST', token: population.client_token }).catch(() => null);
        await restarted.kill();
      }
    } finally {
      done = true;
      await Promise.all(leaves);
    }

    startMs.sort((a, b) => a - b);
    t.diagnostic(`${startMs.length} starts, start → listening median ${startMs[15]} ms, max ` +
                 `${startMs[29]} ms; ${claims} claims; ${uploadErrors.length} uploads answered 5xx` +
                 `${uploadErrors.length ? `: ${uploadErrors[0]}` : ''}`);
    assert.equal(startMs.length, 30);
    assert.ok(claims > 0);
    assert.deepEqual(claimErrors, []);
  });
