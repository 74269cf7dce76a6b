// Long-poll claims ({"wait_s": s}) against the real server: a waiting claim is answered by the
// event that makes a task available (no timing assertion), and 2,000 waiting claims cost no
// threads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync } from 'node:fs';

import { startServer, withServer, createPopulation, call, trainResult, PROTOCOL } from './server_harness.mjs';

function threadsOf(pid) {
  return Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Threads:\s+(\d+)/m)[1]);
}

async function waitingClaims(url) {
  const text = (await call(`${url}/metrics`)).bytes.toString();
  return Number(text.match(/^fedleaf_waiting_claims (\d+)/m)[1]);
}

// Resolves once the server holds `n` waiting claims (polls /metrics; the condition, not a time).
async function untilWaiting(url, n) {
  while ((await waitingClaims(url)) !== n) await new Promise((r) => setTimeout(r, 20));
}

function claim(url, token, body) {
  return call(`${url}/tasks:claim`, { method: 'POST', token, body: JSON.stringify(body),
                                      headers: { 'Content-Type': 'application/json' } });
}

test('a waiting claim is answered with a task when the round it waits for opens', () => withServer(async (server) => {
  const pop = await createPopulation(server.url, { id: 'lp', rounds: 2, clients_per_round: 1 });
  const base = `${server.url}/v1/populations/lp`;
  const first = await claim(base, pop.client_token, {});
  assert.equal(first.status, 200);

  const waiting = claim(base, pop.client_token, { min_round: 1, wait_s: 30 });
  await untilWaiting(server.url, 1);
  const upload = await call(`${server.url}${first.json.upload_url}`, {
    method: 'PUT', token: first.json.lease_token,
    body: trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 2 }) });
  assert.equal(upload.status, 201);

  const answer = await waiting;  // answered by the round opening, not by the 30 s wait
  assert.equal(answer.status, 200);
  assert.equal(answer.json.round, 1);
  assert.equal(await waitingClaims(server.url), 0);
}));

// Regression: a woken claim was charged to its client's rate limit again (the wake handles the
// request anew) and got 429 the moment its task appeared, leaving the task free.
test('admitted waiting claims get their tasks under a tight client rate limit', () => withServer(async (server) => {
  const pop = await createPopulation(server.url,
    { id: 'lp', rounds: 2, clients_per_round: 2, over_selection: 1.5 });  // 3 tasks a round
  const base = `${server.url}/v1/populations/lp`;
  const firsts = [await claim(base, pop.client_token, {}), await claim(base, pop.client_token, {})];
  assert.deepEqual(firsts.map((a) => a.status), [200, 200]);
  const waiting = Array.from({ length: 3 }, () => claim(base, pop.client_token, { min_round: 1, wait_s: 30 }));
  await untilWaiting(server.url, 3);  // all 5 claims admitted: the burst is spent
  for (const first of firsts) {
    const upload = await call(`${server.url}${first.json.upload_url}`, {
      method: 'PUT', token: first.json.lease_token,
      body: trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 2 }) });
    assert.equal(upload.status, 201);
  }

  const answers = await Promise.all(waiting);
  assert.deepEqual(answers.map((a) => a.status), [200, 200, 200]);
  assert.deepEqual(answers.map((a) => a.json.round), [1, 1, 1]);
  assert.equal((await claim(base, pop.client_token, {})).status, 429);  // a new claim is charged
}, { args: ['--client-rate-limit', '0.001', '--client-rate-burst', '5'] }));

test('a waiting claim gets 204 with the retry headers when its wait ends', () => withServer(async (server) => {
  const pop = await createPopulation(server.url, { id: 'lp', rounds: 1, clients_per_round: 1 });
  const base = `${server.url}/v1/populations/lp`;
  assert.equal((await claim(base, pop.client_token, {})).status, 200);
  const answer = await claim(base, pop.client_token, { wait_s: 0.2 });
  assert.equal(answer.status, 204);
  assert.equal(answer.headers.get('fedleaf-population-state'), 'running');
  assert.ok(Number(answer.headers.get('fedleaf-retry-after-ms')) >= 50);
}));

// A claim on a raw connection, so a test can close it: the connection and its whole answer's text.
function rawClaim(url, token, body) {
  const { port } = new URL(url);
  const json = JSON.stringify(body);
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.on('error', () => {});
  let text = '';
  socket.on('data', (d) => { text += d; });
  const answer = new Promise((resolve) => socket.on('close', () => resolve(text)));
  socket.write(`POST /v1/populations/lp/tasks:claim HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
    `Fedleaf-Version: ${PROTOCOL}\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n${json}`);
  return { socket, answer };
}

// A population whose round 1 has `tasks` train tasks, with round 0's one task claimed: its
// upload opens round 1.
async function roundAboutToOpen(server, tasks) {
  const pop = await createPopulation(server.url, { id: 'lp', rounds: 2, clients_per_round: 1, over_selection: tasks });
  const base = `${server.url}/v1/populations/lp`;
  const first = await claim(base, pop.client_token, {});
  assert.equal(first.status, 200);
  const openRound = async () => {
    const upload = await call(`${server.url}${first.json.upload_url}`, {
      method: 'PUT', token: first.json.lease_token,
      body: trainResult({ rows: [1], rowValue: 1, denseValue: 1, numExamples: 2 }) });
    assert.equal(upload.status, 201);
  };
  return { token: pop.client_token, openRound };
}

// Regression: a parked claim kept no read on its socket, so it never saw its client leave.
test('a waiting claim whose client closes the connection stops waiting', { timeout: 60_000 }, () => withServer(async (server) => {
  const { token } = await roundAboutToOpen(server, 4);
  const claims = Array.from({ length: 8 }, () => rawClaim(server.url, token, { min_round: 1, wait_s: 30 }));
  await untilWaiting(server.url, 8);

  for (const c of claims.slice(0, 5)) c.socket.destroy();

  await untilWaiting(server.url, 3);  // seen at once, not at the end of the 30 s wait
  for (const c of claims) c.socket.destroy();
}));

// Regression: when a round opened, woken claims of clients that had left took its tasks (each
// lost for a whole lease) while live waiters went without.
test('every task goes to a waiting client that is still there', { timeout: 60_000 }, () => withServer(async (server) => {
  const { token, openRound } = await roundAboutToOpen(server, 10);
  const claims = Array.from({ length: 20 }, () => rawClaim(server.url, token, { min_round: 1, wait_s: 5 }));
  await untilWaiting(server.url, 20);
  const gone = claims.filter((_, i) => i % 2 === 0);
  const live = claims.filter((_, i) => i % 2 === 1);

  for (const c of gone) c.socket.destroy();
  await openRound();  // no wait for the server to see them go: the wake must check too

  const answers = await Promise.all(live.map((c) => c.answer));
  assert.deepEqual(answers.map((t) => t.split(' ')[1]), Array(10).fill('200'));
  const taskIds = answers.map((t) => JSON.parse(t.slice(t.indexOf('\r\n\r\n') + 4)).task_id);
  assert.equal(new Set(taskIds).size, 10);
  assert.equal(await waitingClaims(server.url), 0);
}));

test('2,000 waiting claims hold no thread each and are answered at shutdown', async () => {
  const server = await startServer({ args: ['--max-connections', '5000'] });
  const sockets = [];
  try {
    const pop = await createPopulation(server.url, { id: 'lp', rounds: 2, clients_per_round: 1 });
    const base = `${server.url}/v1/populations/lp`;
    assert.equal((await claim(base, pop.client_token, {})).status, 200);
    const threadsBefore = threadsOf(server.proc.pid);

    const { port } = new URL(server.url);
    const body = JSON.stringify({ min_round: 0, wait_s: 30 });
    const request = `POST /v1/populations/lp/tasks:claim HTTP/1.1\r\nHost: x\r\n` +
      `Fedleaf-Version: ${PROTOCOL}\r\nAuthorization: Bearer ${pop.client_token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const answers = [];
    for (let i = 0; i < 2000; i++) {
      const socket = net.connect(Number(port), '127.0.0.1');
      let text = '';
      answers.push(new Promise((resolve) => {
        socket.on('data', (d) => { text += d; });
        socket.on('close', () => resolve(text));
        socket.on('error', () => {});
      }));
      socket.write(request);
      sockets.push(socket);
    }
    await untilWaiting(server.url, 2000);

    assert.equal(threadsOf(server.proc.pid), threadsBefore);
    const { code } = await server.stop();  // parked claims get their 204 at once
    assert.equal(code, 0);
    const statuses = (await Promise.all(answers)).map((t) => t.split(' ')[1]);
    assert.equal(statuses.filter((s) => s === '204').length, 2000);
  } finally {
    for (const s of sockets) s.destroy();
    await server.stop();
  }
});
