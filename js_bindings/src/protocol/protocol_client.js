// The task repository's v1 protocol (docs/design.md, "The protocol"; every field and status in
// src/server/README.md): the one place JS builds its requests and reads its answers.
//
//   const client = new ProtocolClient({server: 'http://127.0.0.1:8080', token: clientToken});
//   const claim = await client.claim('spam', {minRound: 0, waitS: 20});
//   if (claim.kind === 'task') {
//     const model = await client.downloadModel(claim.task.model_url);   // {kind: 'model', bytes, etag}
//     await client.upload(claim.task, updateBytes);                      // {status: 201, result}
//   } else if (!claim.finished) {
//     await sleep(claim.retryAfterMs);                                    // {kind: 'no_task'}
//   }
//
// Every request carries Fedleaf-Version (PROTOCOL_VERSION, stamped from CMake) and, where a call
// needs one, Authorization: Bearer with the token given to the call, else the client's. Expected
// answers are returned as typed outcomes; any other status throws a ProtocolError carrying the
// status, the server's error code and message, and its retry hint. A network failure rejects
// with what fetch rejected with (a TypeError, or the signal's reason when aborted);
// networkErrorMessage(error) is its message with the cause undici keeps in error.cause
// ("fetch failed (connect ECONNREFUSED 127.0.0.1:1)") and, when a page's request to another
// origin failed, the CORS setting to check (error.crossOrigin: {page, server}).
//
// Deadlines: no request waits forever for a server that accepted the connection and went quiet.
//   - the response headers of a claim must arrive within its wait_s + claimMarginMs (default 15 s;
//     the server holds a long poll at most wait_s, at most 30 s);
//   - those of any other call within timeoutMs (default 90 s: the clock starts when the request
//     is sent, so it covers an upload's body too, and the server itself gives a body 60 s);
//   - then the response body may not stall: every chunk must arrive within stallTimeoutMs of the
//     previous one (default 30 s), however long the whole body takes (a 17 MB model on a slow
//     link may take minutes).
// A request past its deadline is aborted and rejects with a RequestTimeoutError, "no answer from
// <origin> within N s": a network failure like any other (runLeaf retries it). Infinity turns a
// deadline off. The caller's signal still aborts the request, with the signal's reason.
//
// Its parts: protocol_error.js (ProtocolError and its one parser), network_error.js
// (networkErrorMessage), exchange.js (one request with its deadlines), request_timeout_error.js.

import { retryAfterMs } from './backoff.js';
import { Exchange } from './exchange.js';
import { SELECT_IDS_CONTENT_TYPE, encodeSelectRequest } from './model_select.js';
import { protocolError } from './protocol_error.js';
import { PROTOCOL_VERSION } from './version.js';

function checkTimeout(name, value, fallback) {
  const ms = value ?? fallback;
  if (typeof ms !== 'number' || !(ms > 0)) {
    throw new TypeError(`ProtocolClient: ${name} must be a number of milliseconds > 0 (or Infinity), got ${value}`);
  }
  return ms;
}

export class ProtocolClient {
  /**
   * @param {object} [options]
   * @param {string|URL} [options.server]  base URL of the task repository (default in a page or
   *   worker: the folder of its location)
   * @param {string} [options.token]  the bearer token calls use unless given their own (a
   *   population's client token for leaves, the admin token for operators)
   * @param {typeof fetch} [options.fetch]  default globalThis.fetch
   * @param {string} [options.version]  Fedleaf-Version sent (default PROTOCOL_VERSION; tests
   *   pretend to be other releases with it)
   * @param {number} [options.timeoutMs=90000]  deadline for the answer's headers of every call
   *   but claim, from when the request is sent
   * @param {number} [options.claimMarginMs=15000]  a claim's deadline: its wait_s plus this
   * @param {number} [options.stallTimeoutMs=30000]  longest wait for the next chunk of a body
   * @param {string} [options.device]  a private population's device credential, sent as
   *   Fedleaf-Device on every claim (enrollDevice() issues one)
   */
  constructor(options = {}) {
    // In a page or worker: the folder of its URL (a page at /dashboard.html talks to /).
    const server = options.server ?? (globalThis.location ? new URL('./', globalThis.location.href) : undefined);
    if (server === undefined) throw new TypeError('ProtocolClient needs options.server outside a page');
    this.server = new URL(server);
    this.apiBase = new URL(this.server.href.endsWith('/') ? this.server.href : `${this.server.href}/`);
    this.token = options.token;
    this.version = options.version ?? PROTOCOL_VERSION;
    const doFetch = options.fetch ?? globalThis.fetch;
    this.fetch = (url, init) => doFetch(url, init);
    this.timeoutMs = checkTimeout('timeoutMs', options.timeoutMs, 90_000);
    this.claimMarginMs = checkTimeout('claimMarginMs', options.claimMarginMs, 15_000);
    this.stallTimeoutMs = checkTimeout('stallTimeoutMs', options.stallTimeoutMs, 30_000);
    this.device = options.device;
  }

  // Sends a request with its deadlines (headersMs: default timeoutMs). Resolves to an Exchange
  // whose response has arrived; read its body with bytes()/text()/drain().
  async send(url, init, headersMs = this.timeoutMs) {
    const exchange = new Exchange(this, url, init, headersMs);
    await exchange.start();
    return exchange;
  }

  /** An API path (no leading slash, e.g. 'v1/populations') or a server-relative URL as URL. */
  url(path) {
    return new URL(path, path.startsWith('/') ? this.server : this.apiBase);
  }

  // token: this call's bearer token; undefined: the client's; false: none (public calls).
  headers(token, extra = {}) {
    const headers = { 'Fedleaf-Version': this.version, ...extra };
    const bearer = token === false ? undefined : token ?? this.token;
    if (bearer) headers.Authorization = `Bearer ${bearer}`;
    return headers;
  }

  async json(method, path, { token, body, signal } = {}) {
    const url = this.url(path);
    const headers = this.headers(token, body === undefined ? {} : { 'Content-Type': 'application/json' });
    const exchange = await this.send(url, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal,
    });
    if (!exchange.response.ok) throw await protocolError(exchange.answer, url);
    const text = await exchange.text();
    return text ? JSON.parse(text) : null;
  }

  /**
   * POST /v1/populations/{p}/tasks:claim. minRound: train tasks only of rounds >= it; waitS > 0:
   * the long poll (the server holds the claim up to that long, at most 30 s). device: the device
   * credential sent as Fedleaf-Device (default the client's; a private population answers a
   * claim without one 401 with code 'device_required').
   * @returns {Promise<{kind: 'task', task: object} |
   *                   {kind: 'no_task', finished: boolean, paused: boolean, retryAfterMs: number|undefined}>}
   */
  async claim(population, { minRound, waitS = 0, token, device, signal } = {}) {
    const url = this.url(`v1/populations/${encodeURIComponent(population)}/tasks:claim`);
    const body = {};
    if (minRound !== undefined) body.min_round = minRound;
    if (waitS > 0) body.wait_s = waitS;
    const credential = device ?? this.device;
    const exchange = await this.send(url, {
      method: 'POST',
      headers: this.headers(token, {
        'Content-Type': 'application/json', ...(credential ? { 'Fedleaf-Device': credential } : {}),
      }),
      body: JSON.stringify(body),
      signal,
    }, (waitS > 0 ? waitS * 1000 : 0) + this.claimMarginMs);
    const { response } = exchange;
    if (response.status === 200) return { kind: 'task', task: JSON.parse(await exchange.text()) };
    if (response.status === 204) {
      await exchange.drain();
      return {
        kind: 'no_task',
        finished: response.headers.get('Fedleaf-Population-State') === 'finished',
        paused: response.headers.get('Fedleaf-Population-State') === 'paused',
        retryAfterMs: retryAfterMs(response.headers.get('Retry-After'),
          response.headers.get('Fedleaf-Retry-After-Ms')),
      };
    }
    throw await protocolError(exchange.answer, url);
  }

  /** The URL of round r's published model: GET /v1/populations/{p}/rounds/{r}/model. */
  modelUrl(population, round) {
    return this.url(`v1/populations/${encodeURIComponent(population)}/rounds/${Number(round)}/model`);
  }

  /**
   * GET a model (a task's model_url, or modelUrl(p, r)); with `etag`, If-None-Match.
   * @returns {Promise<{kind: 'model', bytes: Uint8Array, etag: string|null} |
   *                   {kind: 'not_modified', etag: string}>}
   */
  async downloadModel(modelUrl, { etag, token, signal } = {}) {
    const url = modelUrl instanceof URL ? modelUrl : this.url(modelUrl);
    const headers = this.headers(token, etag ? { 'If-None-Match': etag } : {});
    const exchange = await this.send(url, { headers, signal });
    const { response } = exchange;
    if (response.status === 304 && etag) {
      await exchange.drain();
      return { kind: 'not_modified', etag };
    }
    if (response.ok) {
      return { kind: 'model', bytes: await exchange.bytes(), etag: response.headers.get('ETag') };
    }
    throw await protocolError(exchange.answer, url);
  }

  /**
   * POST /v1/populations/{p}/rounds/{r}/model:select with the binary id lists: entries
   * [{name, ids (sorted ascending)}]. Resolves to the safetensors answer.
   * @returns {Promise<Uint8Array>}
   */
  async selectModel(population, round, entries, { token, signal } = {}) {
    const url = this.url(`v1/populations/${encodeURIComponent(population)}/rounds/${Number(round)}/model:select`);
    const exchange = await this.send(url, {
      method: 'POST',
      headers: this.headers(token, { 'Content-Type': SELECT_IDS_CONTENT_TYPE }),
      body: encodeSelectRequest(entries),
      signal,
    });
    if (exchange.response.ok) return exchange.bytes();
    throw await protocolError(exchange.answer, url);
  }

  /**
   * PUT a task's result (safetensors) to its upload_url with its lease token.
   * @returns {Promise<{status: 200|201, result: object|null}>}  201 accepted, 200 the same
   *   bytes again (the first answer repeated)
   */
  async upload(task, bytes, { signal } = {}) {
    const url = this.url(task.upload_url);
    const exchange = await this.send(url, {
      method: 'PUT',
      headers: this.headers(task.lease_token, { 'Content-Type': 'application/octet-stream' }),
      body: bytes,
      signal,
    });
    const { response } = exchange;
    if (response.status === 200 || response.status === 201) {
      const text = await exchange.text().catch(() => '');
      let result = null;
      try {
        result = text ? JSON.parse(text) : null;
      } catch {
        // an answer without a JSON body still means accepted
      }
      return { status: response.status, result };
    }
    throw await protocolError(exchange.answer, url);
  }

  /** GET /v1/populations/{p}: the public status JSON. */
  status(population, { signal } = {}) {
    return this.json('GET', `v1/populations/${encodeURIComponent(population)}`, { token: false, signal });
  }

  /** GET /v1/populations (admin token): {populations: [{id, state, round, rounds, clients_per_round}]}. */
  listPopulations({ token, signal } = {}) {
    return this.json('GET', 'v1/populations', { token, signal });
  }

  /**
   * POST /v1/populations (admin token): {id, client_token, round, model_etag, model_url, status_url}.
   * @param {object} spec  plan, initial_model_b64 or seed, rounds, clients_per_round, …
   */
  createPopulation(spec, { token, signal } = {}) {
    return this.json('POST', 'v1/populations', { token, body: spec, signal });
  }

  /**
   * POST /v1/populations/{p}:pause, :resume or :finish (admin token): the population's status after
   * it. action 'finish' takes an optional reason (kept and shown by the status).
   * @param {'pause'|'resume'|'finish'} action
   */
  controlPopulation(population, action, { reason, token, signal } = {}) {
    const body = action === 'finish' && reason !== undefined ? { reason } : undefined;
    return this.json('POST', `v1/populations/${encodeURIComponent(population)}:${action}`, { token, body, signal });
  }

  /** POST /v1/populations/{p}/tokens (admin token): a new client token, {id, population, client_token}. */
  issueClientToken(population, { token, signal } = {}) {
    return this.json('POST', `v1/populations/${encodeURIComponent(population)}/tokens`, { token, signal });
  }

  /** POST /v1/populations/{p}/tokens/{id}:revoke (admin token): the token's entry after it. */
  revokeClientToken(population, id, { token, signal } = {}) {
    return this.json('POST', `v1/populations/${encodeURIComponent(population)}/tokens/${id}:revoke`, { token, signal });
  }

  /** GET /v1/populations/{p}/tokens (admin token): {tokens: [{id, created_at, revoked_at}]}, no token. */
  listClientTokens(population, { token, signal } = {}) {
    return this.json('GET', `v1/populations/${encodeURIComponent(population)}/tokens`, { token, signal });
  }

  /**
   * POST /v1/populations/{p}/devices (client token): enrolls this leaf as a device of a private
   * population, {device_id, credential}. The credential is shown once (the server keeps only its
   * hash): keep it and claim with it. 409 for a population without privacy; 429 past the
   * population's enrollments_per_token_per_hour.
   */
  enrollDevice(population, { token, signal } = {}) {
    return this.json('POST', `v1/populations/${encodeURIComponent(population)}/devices`, { token, signal });
  }

  /**
   * GET /v1/populations/{p}/devices (admin token): a page of devices, {devices: [{id,
   * enrolled_at, participations, last_round, revoked, revoked_at}], next_after} (next_after: the
   * `after` of the next page, null on the last); never a credential.
   */
  listDevices(population, { after, token, signal } = {}) {
    const query = after === undefined ? '' : `?after=${encodeURIComponent(after)}`;
    return this.json('GET', `v1/populations/${encodeURIComponent(population)}/devices${query}`, { token, signal });
  }

  /** POST /v1/populations/{p}/devices/{id}:revoke (admin token): {device_id, revoked: true}. */
  revokeDevice(population, deviceId, { token, signal } = {}) {
    return this.json('POST',
      `v1/populations/${encodeURIComponent(population)}/devices/${encodeURIComponent(deviceId)}:revoke`, { token, signal });
  }

  /** GET /metrics: the Prometheus text. */
  async metrics({ signal } = {}) {
    const url = this.url('/metrics');
    const exchange = await this.send(url, { headers: this.headers(false), signal });
    if (!exchange.response.ok) throw await protocolError(exchange.answer, url);
    return exchange.text();
  }
}
