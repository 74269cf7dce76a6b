// fedleaf-admin token issue | revoke | ls POPULATION: a population's client tokens (admin token).
//   issue POPULATION        POST /v1/populations/{p}/tokens: a new client token, printed on stdout
//                           (its id on stderr) or with --token-out FILE written there (mode 0600,
//                           an existing file refused before anything is sent) — once: the
//                           server keeps only its hash (no other token is ever printed);
//   revoke POPULATION ID    POST /v1/populations/{p}/tokens/{id}:revoke: claims and model:select
//                           under it get 403 from then on (the population's first token, id 0,
//                           too); leases it already holds may still report;
//   ls POPULATION           GET /v1/populations/{p}/tokens: id, created, state (never a token).
import { rmSync, writeFileSync } from 'node:fs';

import { formatTable } from './admin_list.js';
import { AdminUsageError } from './admin_usage_error.js';

export const TOKEN_FLAGS = {
  'token-out': { type: 'string', value: 'FILE', help: 'issue: write the new client token to FILE (created with mode ' +
    '0600) instead of stdout' },
  json: { type: 'boolean', default: false, help: "ls: print the server's answer as JSON" },
};

const ACTIONS = ['issue', 'revoke', 'ls'];

const when = (s) => new Date(s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

/** The rows of `token ls`: id, created, state (and when revoked). */
export function tokenRows(tokens) {
  return formatTable(['ID', 'CREATED', 'STATE'], tokens.map((t) => [String(t.id), when(t.created_at),
    t.revoked_at === null ? 'live' : `revoked ${when(t.revoked_at)}`]));
}

async function issue({ args, population, client, out, err }) {
  const tokenOut = args['token-out'];
  if (tokenOut !== undefined) {
    try {
      writeFileSync(tokenOut, '', { flag: 'wx', mode: 0o600 });
    } catch (error) {
      throw new AdminUsageError(`--token-out ${tokenOut}: ${error.code === 'EEXIST' ? 'the file exists' : error.code ?? error.message}`);
    }
  }
  let issued;
  try {
    issued = await client.issueClientToken(population);
  } catch (error) {
    if (tokenOut !== undefined) rmSync(tokenOut, { force: true });
    throw error;
  }
  if (tokenOut !== undefined) {
    writeFileSync(tokenOut, `${issued.client_token}\n`, { mode: 0o600 });
    err(`fedleaf-admin: client token ${issued.id} of ${population} is in ${tokenOut} (mode 0600)`);
  } else {
    out(issued.client_token);
    err(`fedleaf-admin: client token ${issued.id} of ${population} (the server keeps only its hash: keep it)`);
  }
  return 0;
}

/** token ACTION POPULATION [ID]. */
export async function tokenCommand({ args, positionals: [action, population, id], client, out, err }) {
  if (!ACTIONS.includes(action)) {
    throw new AdminUsageError(`unknown token action '${action}' (actions: ${ACTIONS.join(', ')})`);
  }
  if ((action === 'revoke') !== (id !== undefined)) {
    throw new AdminUsageError(action === 'revoke' ? 'missing ID (token revoke POPULATION ID)'
      : `unexpected argument '${id}'`);
  }
  if (action !== 'issue' && args['token-out'] !== undefined) throw new AdminUsageError('--token-out is for token issue');
  if (action !== 'ls' && args.json) throw new AdminUsageError('--json is for token ls');
  if (action === 'issue') return issue({ args, population, client, out, err });
  if (action === 'revoke') {
    if (!/^(0|[1-9]\d{0,8})$/.test(id)) throw new AdminUsageError(`ID must be a token id (0, 1, ...), got '${id}'`);
    const revoked = await client.revokeClientToken(population, Number(id));
    out(`client token ${revoked.id} of ${population}: revoked`);
    return 0;
  }
  const { tokens } = await client.listClientTokens(population);
  if (args.json) out(JSON.stringify({ tokens }, null, 2));
  else for (const line of tokenRows(tokens)) out(line);
  return 0;
}
