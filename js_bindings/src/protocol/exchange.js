// Exchange: one request with its deadlines (ProtocolClient's timeoutMs, claimMarginMs or
// stallTimeoutMs): the response's headers within headersMs, then every chunk of its body within
// stallTimeoutMs of the one before. What ProtocolClient's calls read their answers through.
// AbortSignal.any would combine the signals but is not in Node 18 (this package's minimum) nor
// in Safari before 17.4; the listener on the caller's signal is removed when the request ends,
// so a leaf's long-lived signal does not collect one per request.

import { markCrossOrigin } from './network_error.js';
import { RequestTimeoutError } from './request_timeout_error.js';

// Settles like `promise`, or rejects with onTimeout()'s error after ms (never when ms is Infinity).
function within(promise, ms, onTimeout) {
  if (!Number.isFinite(ms)) return promise;
  let timer;
  const timeout = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export class Exchange {
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
