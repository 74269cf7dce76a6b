/** An error that stops the leaf: wrong version, bad credentials, unknown population. */
export class LeafStoppedError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'LeafStoppedError';
    this.status = status;
  }

  /**
   * What stops the leaf after `what` ('claim', 'model download', …) was answered with a
   * ProtocolError no retry fixes: a 426 says the server does not speak this leaf's version (any
   * answer may be one); any other status, that the request failed with it.
   */
  static after(what, error) {
    if (error.status === 426) {
      return new LeafStoppedError(`server refused this leaf's version: ${error.message}`, 426);
    }
    return new LeafStoppedError(`${what} failed with HTTP ${error.status}: ${error.message}`, error.status);
  }
}
