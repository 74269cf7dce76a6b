// fedleaf-admin create: a population body (POST /v1/populations, src/server/README.md
// "Population body") from a plan file, a spec file and flags, sent with the admin token. The
// server checks every field and names the one it refuses; this file only reads the files and
// flags. The client token the server answers with is shown only where asked (--show-token, or
// --token-out FILE written with mode 0600): the server keeps only its hash and cannot show it
// again.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

import { AdminUsageError } from './admin_usage_error.js';
import { parseIntegerFlag } from './leaf_cli.js';

// Flags for the common spec fields: each sets `field`, after the spec file (a flag wins).
// kind: 'integer' (decimal digits, >= min) or 'seconds' (a number > 0).
const SPEC_FLAGS = {
  id: { field: 'id', kind: 'string', value: 'ID',
    help: 'the population id, [A-Za-z0-9_-]{1,64} (default: the spec\'s, else one the server makes)' },
  rounds: { field: 'rounds', kind: 'integer', min: 1, value: 'N', help: 'training rounds (server default 1)' },
  'clients-per-round': { field: 'clients_per_round', kind: 'integer', min: 1, value: 'N',
    help: 'reports that close a round (server default 1)' },
  'min-reports': { field: 'min_reports', kind: 'integer', min: 1, value: 'N',
    help: 'reports a round needs by its deadline (server default: clients per round)' },
  seed: { field: 'seed', kind: 'integer', min: 0, value: 'N',
    help: 'initialize the model the plan declares with this seed (or give --initial-model)' },
  'round-deadline-s': { field: 'round_deadline_s', kind: 'seconds', value: 'S', help: 'round deadline (server default 600)' },
  'lease-s': { field: 'lease_s', kind: 'seconds', value: 'S', help: 'how long a leaf holds a task (server default 120)' },
  'eval-tasks-per-round': { field: 'eval_tasks_per_round', kind: 'integer', min: 0, value: 'N',
    help: 'evaluate tasks per round on its model (server default 0)' },
};

export const CREATE_FLAGS = {
  plan: { type: 'string', value: 'FILE', help: 'the plan, a JSON file (required unless the spec file has "plan")' },
  spec: { type: 'string', value: 'FILE',
    help: 'the population body as JSON (rounds, clients_per_round, seed, mode, server_optimizer, ...); the flags ' +
      'below override its fields' },
  ...Object.fromEntries(Object.entries(SPEC_FLAGS).map(([name, { value, help }]) => [name, { type: 'string', value, help }])),
  'initial-model': { type: 'string', value: 'FILE', help: 'the initial model, a safetensors file (instead of --seed)' },
  'show-token': { type: 'boolean', default: false,
    help: "print the population's client token (stdout, second line): the server cannot show it again" },
  'token-out': { type: 'string', value: 'FILE',
    help: "write the client token to FILE, created with mode 0600 (an existing FILE is refused)" },
  json: { type: 'boolean', default: false, help: "print the server's answer as JSON (client_token only with --show-token)" },
};

function readJson(file, what) {
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new AdminUsageError(`cannot read the ${what} ${file}: ${error.code ?? error.message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new AdminUsageError(`the ${what} ${file} is not JSON: ${error.message}`);
  }
}

function flagValue(name, { kind, min }, raw) {
  if (kind === 'string') return raw;
  if (kind === 'integer') {
    const parsed = parseIntegerFlag(name, raw, min);
    if (typeof parsed === 'string') throw new AdminUsageError(parsed);
    return parsed;
  }
  const seconds = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : NaN;
  if (!(seconds > 0)) throw new AdminUsageError(`--${name} must be a number of seconds > 0, got '${raw}'`);
  return seconds;
}

/**
 * The population body `create` sends: the spec file's object, its "plan" replaced by --plan's,
 * each spec flag's field set, --initial-model as initial_model_b64. Throws AdminUsageError for an
 * unreadable file, JSON that is not an object, a bad flag value, or no plan at all.
 * @param {object} args  the parsed flags (CREATE_FLAGS)
 * @returns {object}
 */
export function populationBody(args) {
  const body = args.spec === undefined ? {} : readJson(args.spec, 'spec file');
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new AdminUsageError(`the spec file ${args.spec} must hold a JSON object (the population body)`);
  }
  if (args.plan !== undefined) body.plan = readJson(args.plan, 'plan file');
  if (body.plan === undefined) throw new AdminUsageError('no plan: give --plan FILE (or "plan" in the spec file)');
  for (const [name, spec] of Object.entries(SPEC_FLAGS)) {
    if (args[name] !== undefined) body[spec.field] = flagValue(name, spec, args[name]);
  }
  if (args['initial-model'] !== undefined) {
    try {
      body.initial_model_b64 = readFileSync(args['initial-model']).toString('base64');
    } catch (error) {
      throw new AdminUsageError(`cannot read the initial model ${args['initial-model']}: ${error.code ?? error.message}`);
    }
  }
  return body;
}

/** create: POST /v1/populations; prints the id (and the token only where asked). */
export async function createCommand({ args, client, out, err }) {
  const body = populationBody(args);
  const tokenOut = args['token-out'];
  if (tokenOut !== undefined) {
    // Refused before the population exists: after, its token would have nowhere to go.
    try {
      writeFileSync(tokenOut, '', { flag: 'wx', mode: 0o600 });
    } catch (error) {
      throw new AdminUsageError(`--token-out ${tokenOut}: ${error.code === 'EEXIST' ? 'the file exists' : error.code ?? error.message}`);
    }
  }
  let created;
  try {
    created = await client.createPopulation(body);
  } catch (error) {
    if (tokenOut !== undefined) rmSync(tokenOut, { force: true });
    throw error;
  }
  if (tokenOut !== undefined) writeFileSync(tokenOut, `${created.client_token}\n`, { mode: 0o600 });
  if (args.json) {
    const { client_token: token, ...shown } = created;
    out(JSON.stringify(args['show-token'] ? created : shown, null, 2));
    if (!args['show-token'] && token && tokenOut === undefined) err(notShown(created.id));
    return 0;
  }
  out(created.id);
  if (args['show-token']) out(created.client_token);
  err(`fedleaf-admin: created population ${created.id} (round ${created.round} published, model etag ${created.model_etag})`);
  if (tokenOut !== undefined) err(`fedleaf-admin: its client token is in ${tokenOut} (mode 0600)`);
  else if (!args['show-token']) err(notShown(created.id));
  return 0;
}

function notShown(id) {
  return `fedleaf-admin: the client token of ${id} was not shown (--show-token or --token-out FILE show it; ` +
    'the server keeps only its hash and cannot show it again)';
}
