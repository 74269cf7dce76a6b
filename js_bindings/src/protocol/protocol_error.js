// ProtocolError: an answer of the task repository that a call does not expect, made by one
// parser (protocolError) from the status, the server's {"error": {"code", "message"}} and its
// retry hint.

import { retryAfterMs } from './backoff.js';
import { networkErrorMessage } from './network_error.js';

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
   * @param {{status: number, code: string, message: string, retryAfterMs?: number, retryRound?: number,
   *   url: string}} fields  retryRound: a device refused by min_separation, the round it may take
   */
  constructor({ status, code, message, retryAfterMs, retryRound, url }) {
    super(message);
    this.name = 'ProtocolError';
    this.status = status;
    this.code = code;
    this.retryAfterMs = retryAfterMs;
    this.retryRound = retryRound;
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
    retryRound: Number.isInteger(body?.error?.retry_round) ? body.error.retry_round : undefined,
    url: String(url),
  });
}

/** A failed request for messages: 'HTTP 503: busy', or 'network: fetch failed (cause)'. */
export function failureMessage(error) {
  return error instanceof ProtocolError ? `HTTP ${error.status}: ${error.message}`
    : `network: ${networkErrorMessage(error)}`;
}
