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
// with what fetch rejected with (a TypeError, or the signal's reason when aborted).

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

async function drain(response) {
  await response.arrayBuffer().catch(() => {});
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
    const response = await this.fetch(url, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal,
    });
    if (!response.ok) throw await protocolError(response, url);
    const text = await response.text();
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
    const response = await this.fetch(url, {
      method: 'POST',
      headers: this.headers(token, { 'Content-Type': 'application/json' }),
      body: JSON.stringify(body),
      signal,
    });
    if (response.status === 200) return { kind: 'task', task: await response.json() };
    if (response.status === 204) {
      await drain(response);
      return {
        kind: 'no_task',
        finished: response.headers.get('Fedleaf-Population-State') === 'finished',
        retryAfterMs: retryAfterMs(response.headers.get('Retry-After'),
          response.headers.get('Fedleaf-Retry-After-Ms')),
      };
    }
    throw await protocolError(response, url);
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
    const response = await this.fetch(url, { headers, signal });
    if (response.status === 304 && etag) return { kind: 'not_modified', etag };
    if (response.ok) {
      return { kind: 'model', bytes: new Uint8Array(await response.arrayBuffer()), etag: response.headers.get('ETag') };
    }
    throw await protocolError(response, url);
  }

  /**
   * POST /v1/populations/{p}/rounds/{r}/model:select with the binary id lists: entries
   * [{name, ids (sorted ascending)}]. Resolves to the safetensors answer.
   * @returns {Promise<Uint8Array>}
   */
  async selectModel(population, round, entries, { token, signal } = {}) {
    const url = this.url(`v1/populations/${encodeURIComponent(population)}/rounds/${Number(round)}/model:select`);
    const response = await this.fetch(url, {
      method: 'POST',
      headers: this.headers(token, { 'Content-Type': SELECT_IDS_CONTENT_TYPE }),
      body: encodeSelectRequest(entries),
      signal,
    });
    if (response.ok) return new Uint8Array(await response.arrayBuffer());
    throw await protocolError(response, url);
  }

  /**
   * PUT a task's result (safetensors) to its upload_url with its lease token.
   * @returns {Promise<{status: 200|201, result: object|null}>}  201 accepted, 200 the same
   *   bytes again (the first answer repeated)
   */
  async upload(task, bytes, { signal } = {}) {
    const url = this.url(task.upload_url);
    const response = await this.fetch(url, {
      method: 'PUT',
      headers: this.headers(task.lease_token, { 'Content-Type': 'application/octet-stream' }),
      body: bytes,
      signal,
    });
    if (response.status === 200 || response.status === 201) {
      const text = await response.text().catch(() => '');
      let result = null;
      try {
        result = text ? JSON.parse(text) : null;
      } catch {
        // an answer without a JSON body still means accepted
      }
      return { status: response.status, result };
    }
    throw await protocolError(response, url);
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
    const response = await this.fetch(url, { headers: this.headers(false), signal });
    if (!response.ok) throw await protocolError(response, url);
    return response.text();
  }
}
