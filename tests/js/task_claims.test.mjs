// TaskClaims (js_bindings/src/leaf/task_claims.js): what each claim answer means for a leaf.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { LeafStoppedError } from '../../js_bindings/src/leaf/leaf_stopped_error.js';
import { RoundBook } from '../../js_bindings/src/leaf/round_book.js';
import { TaskClaims } from '../../js_bindings/src/leaf/task_claims.js';
import { ProtocolError } from '../../js_bindings/src/protocol/protocol_error.js';

const httpError = (status, retryAfterMs) => new ProtocolError({ status, code: 'x', message: `status ${status}`, retryAfterMs, url: 'http://s/' });
const BACKOFF = { baseMs: 100, maxMs: 1000, random: () => 1 };  // the ceiling: 100, 200, 400, …

// Claims answered by `answers` in turn: a claim outcome, or an error to throw.
function claims(answers) {
  const requests = [];
  const events = [];
  const book = new RoundBook();
  const client = {
    async claim(population, options) {
      requests.push({ population, ...options });
      const answer = answers.shift();
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
  const source = new TaskClaims({ client, population: 'p', token: 'tok', waitS: 20, backoff: BACKOFF, book,
    emit: (event) => events.push(event) });
  return { source, requests, events, book };
}

test('a task is held in the round book and announced; the next claim asks for a later round', async () => {
  const task = { task_id: 't', round: 3, kind: 'train' };
  const { source, requests, events } = claims([{ kind: 'task', task }, { kind: 'no_task', finished: true }]);
  assert.deepEqual(await source.next(), { task });
  assert.deepEqual(events, [{ type: 'claimed', task }]);
  assert.deepEqual(await source.next(), { finished: true });
  assert.deepEqual(requests.map((r) => [r.population, r.minRound, r.waitS, r.token]), [['p', 0, 20, 'tok'], ['p', 4, 20, 'tok']]);
});

test('failed claims in a row back off further; a task or no task resets it', async () => {
  const { source } = claims([new TypeError('fetch failed'), httpError(503), httpError(429, 5000),
    { kind: 'no_task', finished: false }, new TypeError('fetch failed')]);
  assert.deepEqual(await source.next(), { idle: 100, reason: 'network: fetch failed' });
  assert.deepEqual(await source.next(), { idle: 200, reason: 'HTTP 503: status 503' });
  assert.deepEqual(await source.next(), { idle: 5000, reason: 'HTTP 429: status 429' }, 'Retry-After when longer');
  assert.deepEqual(await source.next(), { idle: 100, reason: 'no task available' });
  assert.deepEqual(await source.next(), { idle: 100, reason: 'network: fetch failed' });
});

test('a 410 finishes the leaf; other refusals stop it, a 426 naming the version', async () => {
  const { source } = claims([httpError(410), httpError(401), httpError(426)]);
  assert.deepEqual(await source.next(), { finished: true });
  await assert.rejects(source.next(), (e) => e instanceof LeafStoppedError && e.status === 401 &&
    e.message === 'claim failed with HTTP 401: status 401');
  await assert.rejects(source.next(), (e) => e instanceof LeafStoppedError && e.status === 426 &&
    e.message === 'server refused this leaf\'s version: status 426');
});

// A leaf prefetching two jobs starts two claims at once: the second must ask past the round the
// first brought, or both could bring a train task of one round (the same data reported twice).
test('claims started together go out one at a time, each past the round the one before brought', async () => {
  const book = new RoundBook();
  const requests = [];
  const pending = [];
  const client = {
    claim(population, options) {
      requests.push(options.minRound);
      return new Promise((resolve) => pending.push(resolve));
    },
  };
  const source = new TaskClaims({ client, population: 'p', waitS: 20, backoff: BACKOFF, book, emit: () => {} });
  book.hold({ task_id: 'now', round: 4, kind: 'train' });  // the task training
  const first = source.next();
  const second = source.next();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(requests, [5], 'the second claim waits for the first answer');
  pending.shift()({ kind: 'task', task: { task_id: 'a', round: 5, kind: 'train' } });
  assert.deepEqual(await first, { task: { task_id: 'a', round: 5, kind: 'train' } });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(requests, [5, 6]);
  pending.shift()({ kind: 'no_task', finished: false, retryAfterMs: 50 });
  assert.deepEqual(await second, { idle: 50, reason: 'no task available' });
  // A claim that failed does not hold up the next one.
  const third = source.next();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(requests, [5, 6, 6]);
  pending.shift()({ kind: 'no_task', finished: true });
  assert.deepEqual(await third, { finished: true });
});

// A private population (issue 39): the first claim answered device_required enrolls once, keeps
// the credential in the device store and claims again with it; a kept credential is loaded
// before the first claim; max_participations stops the leaf; min_separation waits.
test('a private population: enroll once, keep the credential, claim with it', async () => {
  const deviceError = (status, code, message, retryAfterMs) =>
    new ProtocolError({ status, code, message, retryAfterMs, url: 'http://s/' });
  const task = { task_id: 't', round: 0, kind: 'train' };
  const answers = [deviceError(401, 'device_required', 'enroll first'), { kind: 'task', task },
    Object.assign(deviceError(429, 'min_separation', 'min_separation: … round 2', 3000), { retryRound: 2 }),
    deviceError(429, 'min_separation', 'min_separation: … round 2', 3000),
    deviceError(403, 'max_participations', 'max_participations: this device has taken part in 2 rounds')];
  const requests = [];
  const minRounds = [];
  const enrollments = [];
  const events = [];
  const client = {
    async claim(population, options) {
      requests.push(options.device);
      minRounds.push(options.minRound);
      const answer = answers.shift();
      if (answer instanceof Error) throw answer;
      return answer;
    },
    async enrollDevice(population, options) {
      enrollments.push([population, options.token]);
      return { device_id: 'd1', credential: 'secret' };
    },
  };
  const saved = new Map();
  const store = { async load(key) { return saved.get(key); }, async save(key, device) { saved.set(key, device); } };
  const source = new TaskClaims({ client, population: 'p', token: 'tok', waitS: 20, backoff: BACKOFF,
    book: new RoundBook(), emit: (event) => events.push(event), devices: { store, key: 'k' } });

  assert.deepEqual(await source.next(), { task });
  assert.deepEqual(requests, [undefined, 'secret']);
  assert.deepEqual(enrollments, [['p', 'tok']]);
  assert.deepEqual(saved.get('k'), { deviceId: 'd1', credential: 'secret' });
  assert.deepEqual(events[0], { type: 'enrolled', deviceId: 'd1' });
  // The round it may take becomes its min_round (the server then holds the claim until it opens).
  assert.deepEqual(await source.next(), { idle: 100, reason: 'HTTP 429: min_separation: … round 2' });
  assert.deepEqual(await source.next(), { idle: 3000, reason: 'HTTP 429: min_separation: … round 2' });
  assert.equal(minRounds[2], 1);
  assert.equal(minRounds[3], 2);
  await assert.rejects(source.next(), (e) => e instanceof LeafStoppedError && e.status === 403 &&
    /max_participations: this device has taken part in 2 rounds/.test(e.message));

  // A restarted leaf: the kept credential goes with the first claim, no enrollment.
  const again = [];
  const restarted = new TaskClaims({ client: { async claim(population, options) { again.push(options.device); return { kind: 'task', task }; } },
    population: 'p', waitS: 20, backoff: BACKOFF, book: new RoundBook(), emit: () => {}, devices: { store, key: 'k' } });
  assert.deepEqual(await restarted.next(), { task });
  assert.deepEqual(again, ['secret']);
});

test('a credential refused right after its enrollment stops the leaf instead of enrolling again', async () => {
  const refused = new ProtocolError({ status: 401, code: 'device_required', message: 'enroll first', url: 'http://s/' });
  let enrolled = 0;
  const client = {
    async claim() { throw refused; },
    async enrollDevice() { enrolled += 1; return { device_id: 'd', credential: 'c' }; },
  };
  const source = new TaskClaims({ client, population: 'p', waitS: 20, backoff: BACKOFF, book: new RoundBook(), emit: () => {} });
  await assert.rejects(source.next(), (e) => e instanceof LeafStoppedError && e.status === 401);
  assert.equal(enrolled, 1);
});
