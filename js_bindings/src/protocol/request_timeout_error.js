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
