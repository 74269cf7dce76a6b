// AdminUsageError: what fedleaf-admin refuses before it sends a request — a bad flag, an
// unreadable or malformed file, a configuration that names no server or admin token. The CLI
// prints its message and the command's usage line and exits with status 2. A message never holds
// a token: it names the file or variable the token came from.
export class AdminUsageError extends Error {
  constructor(message) {
    super(message);
    this.name = 'AdminUsageError';
  }
}
