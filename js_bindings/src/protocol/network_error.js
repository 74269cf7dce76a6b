// Network failures, for messages: what fetch rejected with, its causes, and the CORS hint when a
// page's request to another origin failed.

// A browser's fetch says only "Failed to fetch" (Firefox: "NetworkError when attempting to fetch
// resource.") when CORS blocks an answer, the same as when the server is down: a request from a
// page to another origin that fails so is marked with both origins for networkErrorMessage.
export function markCrossOrigin(error, url, aborted) {
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
