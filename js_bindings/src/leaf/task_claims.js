// TaskClaims: a leaf's claims and what each answer means for it. A claim asks for train tasks of
// the rounds its RoundBook leaves free, waiting up to waitS for one (the long poll); a task is
// held in the book and announced (claimed {task}); no task, a network failure, 429 or 5xx make
// the leaf idle — for the server's Retry-After, else the backoff that grows with each failed
// claim in a row (a claim's network failure is never a fatal error: the leaf stays idle and
// claims again); a population finished (204 with Fedleaf-Population-State: finished, or 410)
// ends the leaf; any other status stops it with a LeafStoppedError. Claims go out one at a time:
// each one's min_round counts the task the claim before it brought, so a leaf prefetching two or
// more jobs never holds two train tasks of one round (version).
// A private population's claims carry the leaf's device credential (Fedleaf-Device), loaded from
// the device store before the first claim; a claim answered 401 device_required enrolls once
// (enrolled {deviceId}), saves the credential and claims again; a 429 min_separation names the
// round the device may take (retry_round): later claims ask for it as their min_round, so the
// server holds them (long poll) until that round opens instead of refusing each; a 403
// max_participations stops the leaf (the device may take no more rounds).
//
//   const claims = new TaskClaims({client, population, token, waitS, signal, backoff, book, emit,
//                                  devices: {store, key}});
//   const job = await claims.next();   // {task} | {idle: ms, reason} | {finished: true}

import { backoffDelayMs } from '../protocol/backoff.js';
import { ProtocolError, failureMessage } from '../protocol/protocol_error.js';
import { memoryDeviceStore } from './device_store.js';
import { LeafStoppedError } from './leaf_stopped_error.js';

export class TaskClaims {
  /**
   * @param {object} options
   * @param {import('../protocol/protocol_client.js').ProtocolClient} options.client
   * @param {string} options.population
   * @param {string} [options.token]
   * @param {number} options.waitS  the long poll's wait, 0 for none
   * @param {AbortSignal} [options.signal]
   * @param {{baseMs?: number, maxMs?: number}} [options.backoff]
   * @param {import('./round_book.js').RoundBook} options.book
   * @param {(event: object) => void} options.emit  receives the claimed and enrolled events
   * @param {{store: {load: Function, save: Function}, key: string}} [options.devices]  where the
   *   device credential is kept (device_store.js; default in memory)
   */
  constructor({ client, population, token, waitS, signal, backoff, book, emit,
    devices = { store: memoryDeviceStore(), key: population } }) {
    Object.assign(this, { client, population, token, waitS, signal, backoff, book, emit, devices });
    this.device = undefined;  // the credential: undefined until loaded, null when none is kept
    this.roundFloor = 0;  // the round min_separation lets this device take next
    this.failures = 0;  // failed claims in a row: the next idle's backoff attempt
    this.inFlight = Promise.resolve();  // the claim before, settled once it is answered
  }

  /** One claim's outcome: {task} | {idle: ms, reason} | {finished: true}. */
  async next() {
    // After the claim before it is answered (and its task held in the book): two claims sent at
    // once would both ask for the same min_round and could both bring a task of that round.
    const previous = this.inFlight;
    let answered;
    this.inFlight = new Promise((resolve) => { answered = resolve; });
    try {
      await previous;
      return await this.claim();
    } finally {
      answered();
    }
  }

  async claim(enrolled = false) {
    const { client, population, token, waitS, signal, book, devices } = this;
    this.device ??= (await devices.store.load(devices.key))?.credential ?? null;
    let claim;
    try {
      claim = await client.claim(population, {
        minRound: Math.max(book.minRound(), this.roundFloor), waitS, token, signal, device: this.device ?? undefined,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      if (!(error instanceof ProtocolError)) return { idle: this.backoffMs(), reason: failureMessage(error) };
      if (error.status === 410) return { finished: true };
      // A private population: enroll once, then claim again (a credential refused right after
      // its enrollment is the server's error, not a reason to enroll again).
      if (error.status === 401 && error.code === 'device_required' && !enrolled) {
        const idle = await this.enroll();
        return idle ?? this.claim(true);
      }
      if (error.status === 429 && error.code === 'min_separation' && Number.isInteger(error.retryRound) &&
          error.retryRound > this.roundFloor) {
        this.roundFloor = error.retryRound;
        return { idle: this.backoffMs(), reason: failureMessage(error) };
      }
      if (error.retryable) {
        return { idle: Math.max(error.retryAfterMs ?? 0, this.backoffMs()), reason: failureMessage(error) };
      }
      throw LeafStoppedError.after('claim', error);
    }
    if (claim.kind === 'task') {
      this.failures = 0;
      book.hold(claim.task);
      this.emit({ type: 'claimed', task: claim.task });
      return { task: claim.task };
    }
    if (claim.finished) return { finished: true };
    this.failures = 0;
    return { idle: claim.retryAfterMs ?? backoffDelayMs(0, this.backoff), reason: 'no task available' };
  }

  // Enrolls this leaf as a device and keeps its credential; an idle job when the enrollment may
  // succeed later (429: the token's hourly limit; 5xx; the network), else undefined.
  async enroll() {
    const { client, population, token, signal, devices } = this;
    let enrolled;
    try {
      enrolled = await client.enrollDevice(population, { token, signal });
    } catch (error) {
      if (signal?.aborted) throw error;
      if (!(error instanceof ProtocolError)) return { idle: this.backoffMs(), reason: `enroll: ${failureMessage(error)}` };
      if (error.retryable) {
        return { idle: Math.max(error.retryAfterMs ?? 0, this.backoffMs()), reason: `enroll: ${failureMessage(error)}` };
      }
      throw LeafStoppedError.after('device enrollment', error);
    }
    this.device = enrolled.credential;
    await devices.store.save(devices.key, { deviceId: enrolled.device_id, credential: enrolled.credential });
    this.emit({ type: 'enrolled', deviceId: enrolled.device_id });
    return undefined;
  }

  backoffMs() {
    return backoffDelayMs(this.failures++, this.backoff);
  }
}
