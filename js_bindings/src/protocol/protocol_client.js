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

import { retryAfterMs } from './backoff.js';
import { SELECT_IDS_CONTENT_TYPE, encodeSelectRequest } from './model_select.js';
import { PROTOCOL_VERSION } from './version.js';

// The server's error codes by status (src/server/README.md, "HTTP API"), for answers without a
// JSON error body (a proxy's 502, a body cut short).
const CODE_OF_STATUS = {
  400: 'invalid_input',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  409: 'conflict',
  410: 'gone',
  413: 'payload_too_large',
  426: 'upgrade_required',
  429: 'too_many_requests',
  500: 'internal',
  503: 'unavailable',
};

/** An answer the call does not expect: status, the server's code and message, its retry hint. */
export class ProtocolError extends Error {
  /**
   * @param {{status: number, code: string, message: string, retryAfterMs?: number, url: string}} fields
   */
  constructor({ status, code, message, retryAfterMs, url }) {
    super(message);
    this.name = 'ProtocolError';
    this.status = status;
    this.code = code;
    this.retryAfterMs = retryAfterMs;
    this.url = url;
  }

  /** 429 and 5xx: the same request may succeed later (after retryAfterMs when given). */
  get retryable() {
    return this.status === 429 || this.status >= 500;
  }
}

/**
 * The one error parser: reads the answer's body and makes the ProtocolError. The message is the
 * server's {"error": {"message"}}, else the body's text, else the status text.
 */
export async function protocolError(response, url = response.url) {
  const text = await response.text().catch(() => '');
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the text is the message
  }
  const message = body?.error?.message || text || response.statusText || `HTTP ${response.status}`;
  return new ProtocolError({
    status: response.status,
    code: body?.error?.code ?? CODE_OF_STATUS[response.status] ?? 'http',
    message,
    retryAfterMs: retryAfterMs(response.headers.get('Retry-After'), response.headers.get('Fedleaf-Retry-After-Ms')),
    url: String(url),
  });
}

/** A request past its deadline (ProtocolClient's timeoutMs, claimMarginMs or stallTimeoutMs). */
export class RequestTimeoutError extends Error {
  /**
   * @param {URL} url  the request's URL
   * @param {number} timeoutMs  the deadline it missed
   * @param {'headers'|'body'} phase  waiting for the answer, or for the rest of its body
   */
  constructor(url, timeoutMs, phase = 'headers') {
    super(`no answer from ${url.origin} within ${timeoutMs / 1000} s${phase === 'body' ? ' (the answer\'s body stalled)' : ''}`);
    this.name = 'RequestTimeoutError';
    this.url = String(url);
    this.origin = url.origin;
    this.timeoutMs = timeoutMs;
    this.phase = phase;
  }
}

// A browser's fetch says only "Failed to fetch" (Firefox: "NetworkError when attempting to fetch
// resource.") when CORS blocks an answer, the same as when the server is down: a request from a
// page to another origin that fails so is marked with both origins for networkErrorMessage.
function markCrossOrigin(error, url, aborted) {
  const page = globalThis.location?.origin;
  if (error instanceof TypeError && !aborted && page && page !== 'null' && page !== url.origin) {
    error.crossOrigin = { page, server: url.origin };
  }
  return error;
}

/**
 * A network error's message with its causes (undici's fetch rejects with "fetch failed" and keeps
 * the reason in error.cause): "fetch failed (connect ECONNREFUSED 127.0.0.1:1)"; for a request
 * from a page to another origin, with what CORS needs.
 */
export function networkErrorMessage(error) {
  const message = error?.message || String(error);
  const causes = [];
  let cause = error?.cause;
  for (let depth = 0; cause && depth < 4; depth++) {
    let text = cause.message || cause.code || '';
    if (!text && Array.isArray(cause.errors)) {  // AggregateError: one error per address tried
      text = [...new Set(cause.errors.map((e) => e?.message || e?.code).filter(Boolean))].join('; ');
    }
    if (!text && typeof cause !== 'object') text = String(cause);
    if (text && text !== message && !causes.includes(text)) causes.push(text);
    cause = cause.cause;
  }
  const text = causes.length ? `${message} (${causes.join(': ')})` : message;
  const { page, server } = error?.crossOrigin ?? {};
  if (!page) return text;
  return `${text}; ${server} is another origin than this page's, so this may be CORS: the server ` +
    `must allow ${page} (start fedleaf-server with --cors-origin ${page})`;
}

function checkTimeout(name, value, fallback) {
  const ms = value ?? fallback;
  if (typeof ms !== 'number' || !(ms > 0)) {
    throw new TypeError(`ProtocolClient: ${name} must be a number of milliseconds > 0 (or Infinity), got ${value}`);
  }
  return ms;
}

// Settles like `promise`, or rejects with onTimeout()'s error after ms (never when ms is Infinity).
function within(promise, ms, onTimeout) {
  if (!Number.isFinite(ms)) return promise;
  let timer;
  const timeout = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// One request with its deadlines: what ProtocolClient's calls read their answers through.
// AbortSignal.any would combine the signals but is not in Node 18 (this package's minimum) nor
// in Safari before 17.4; the listener on the caller's signal is removed when the request ends,
// so a leaf's long-lived signal does not collect one per request.
class Exchange {
  constructor(client, url, init, headersMs) {
    this.client = client;
    this.url = url;
    this.controller = new AbortController();
    this.callerSignal = init.signal;
    this.onCallerAbort = () => this.controller.abort(this.callerSignal.reason);
    if (this.callerSignal?.aborted) this.onCallerAbort();
    else this.callerSignal?.addEventListener('abort', this.onCallerAbort, { once: true });
    this.init = { ...init, signal: this.controller.signal };
    this.headersMs = headersMs;
  }

  timeout(ms, phase) {
    const error = new RequestTimeoutError(this.url, ms, phase);
    this.controller.abort(error);
    return error;
  }

  // Resolves to the Response once its headers arrive; the body is read with bytes() or text().
  async start() {
    try {
      this.response = await within(this.client.fetch(this.url, this.init), this.headersMs,
        () => this.timeout(this.headersMs, 'headers'));
    } catch (error) {
      this.end();
      throw markCrossOrigin(error, this.url, this.controller.signal.aborted);
    }
    return this.response;
  }

  end() {
    this.callerSignal?.removeEventListener('abort', this.onCallerAbort);
  }

  // The whole body, each chunk within stallTimeoutMs of the one before.
  async bytes() {
    try {
      const { body } = this.response;
      if (!body) return new Uint8Array(await this.response.arrayBuffer());
      const reader = body.getReader();
      const chunks = [];
      let length = 0;
      const stallMs = this.client.stallTimeoutMs;
      for (;;) {
        const { done, value } = await within(reader.read(), stallMs, () => {
          const error = this.timeout(stallMs, 'body');
          reader.cancel(error).catch(() => {});
          return error;
        });
        if (done) break;
        chunks.push(value);
        length += value.length;
      }
      const [first] = chunks;
      if (chunks.length === 1 && first.byteOffset === 0 && first.byteLength === first.buffer.byteLength) return first;
      const out = new Uint8Array(length);
      let offset = 0;
      for (const chunk of chunks) {
        out.set(chunk, offset);
        offset += chunk.length;
      }
      return out;
    } finally {
      this.end();
    }
  }

  async text() {
    return new TextDecoder().decode(await this.bytes());
  }

  // The body read and dropped (errors too: the answer is already decided).
  async drain() {
    await this.bytes().catch(() => {});
  }

  // What protocolError reads: the status, the headers, and the body through the stall deadline.
  get answer() {
    const { response } = this;
    return { status: response.status, statusText: response.statusText, headers: response.headers,
      url: response.url, text: () => this.text() };
  }
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
   * the long poll (the server holds the claim up to that long, at most 30 s).
   * @returns {Promise<{kind: 'task', task: object} |
   *                   {kind: 'no_task', finished: boolean, retryAfterMs: number|undefined}>}
   */
  async claim(population, { minRound, waitS = 0, token, signal } = {}) {
    const url = this.url(`v1/populations/${encodeURIComponent(population)}/tasks:claim`);
    const body = {};
    if (minRound !== undefined) body.min_round = minRound;
    if (waitS > 0) body.wait_s = waitS;
    const exchange = await this.send(url, {
      method: 'POST',
      headers: this.headers(token, { 'Content-Type': 'application/json' }),
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

  /** GET /metrics: the Prometheus text. */
  async metrics({ signal } = {}) {
    const url = this.url('/metrics');
    const exchange = await this.send(url, { headers: this.headers(false), signal });
    if (!exchange.response.ok) throw await protocolError(exchange.answer, url);
    return exchange.text();
  }
}
