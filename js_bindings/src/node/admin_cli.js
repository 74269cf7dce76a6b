// fedleaf-admin: the operator's CLI over the task repository's admin API (src/server/README.md,
// "HTTP API"). COMMANDS is the one table of its commands: each entry's usage line, description,
// positional arguments, flags (with their help), what it needs (`needs`: 'admin' the server and
// the admin token, 'server' the server only, 'none' neither) and the function that runs it.
// --help is generated from the table; adding a command is one entry and one function
// ({args, positionals, client, out, err} => exit status).
//
// Every request goes through the package's ProtocolClient. Exit status: 0 done; 1 the server
// refused (4xx/5xx: the message is the server's, which names its rule), could not be reached, or a
// file could not be written; 2 bad flags, files or configuration, before any request. A token is
// never printed (admin_config.js).
import { parseArgs } from 'node:util';

import { resolveConnection } from './admin_config.js';
import { CONTROL_FLAGS, FINISH_FLAGS, controlCommand } from './admin_control.js';
import { CREATE_FLAGS, createCommand } from './admin_create.js';
import { LIST_FLAGS, listCommand } from './admin_list.js';
import { MODEL_FLAGS, modelCommand } from './admin_model.js';
import { PLAN_PRIVACY_FLAGS, planPrivacyCommand } from './admin_plan_privacy.js';
import { STATUS_FLAGS, statusCommand } from './admin_status.js';
import { DEVICE_FLAGS, deviceCommand } from './admin_devices.js';
import { TOKEN_FLAGS, tokenCommand } from './admin_tokens.js';
import { AdminUsageError } from './admin_usage_error.js';
import { helpText } from './leaf_cli.js';
import { ProtocolClient } from '../protocol/protocol_client.js';
import { ProtocolError } from '../protocol/protocol_error.js';
import { networkErrorMessage } from '../protocol/network_error.js';

const PROGRAM = 'fedleaf-admin';

// Flags every command takes.
const GLOBAL_FLAGS = {
  server: { type: 'string', value: 'URL', help: 'the task repository, an http: or https: URL (else FEDLEAF_SERVER, ' +
    'else "server" in the config file)' },
  'admin-token-file': { type: 'string', value: 'FILE', help: 'file holding the admin token (else FEDLEAF_ADMIN_TOKEN, ' +
    'else "admin_token_file" or "admin_token" in the config file)' },
  help: { type: 'boolean', short: 'h', default: false, help: 'print this help and exit' },
};

export const COMMANDS = {
  create: {
    summary: 'create a population from a plan file and a spec file or flags; prints its id',
    usage: 'create --plan FILE [--spec FILE] [--id ID] [--rounds N] [--clients-per-round N] [--seed N | ' +
      '--initial-model FILE] [--show-token | --token-out FILE] [--json]',
    description: 'Creates a population (POST /v1/populations, admin token) from a plan file and a spec file (the ' +
      'population body: rounds, clients_per_round, seed or initial_model_b64, mode, server_optimizer, ...), ' +
      'flags overriding the spec\'s fields. Prints the population id. Its client token, which leaves need, is ' +
      'printed only with --show-token or written to --token-out FILE (mode 0600): the server keeps only its ' +
      'hash and cannot show it again.',
    positionals: [],
    needs: 'admin',
    flags: CREATE_FLAGS,
    run: createCommand,
  },
  ls: {
    summary: 'list the populations: id, state, round of rounds, clients per round, mode',
    usage: 'ls [--json]',
    description: 'Lists the populations (GET /v1/populations, admin token): id, state, round (a buffered ' +
      "population's version) of rounds, clients per round, mode.",
    positionals: [],
    needs: 'admin',
    flags: LIST_FLAGS,
    run: listCommand,
  },
  status: {
    summary: "one screen of a population's progress; --watch refreshes it until the population finishes",
    usage: 'status POPULATION [--watch [S]] [--json]',
    description: "Shows a population's status (GET /v1/populations/{p}, public: no admin token): state, round " +
      "(a buffered population's version) of rounds as a progress bar, the open round's reports and tasks, the " +
      'last closed round\'s reports, examples, train and eval loss and accuracy, robust aggregation, staleness, ' +
      'rejected uploads by reason and the current model. --watch refreshes it every S seconds (in place on a ' +
      'terminal) and exits 0 when the population finishes.',
    positionals: ['POPULATION'],
    needs: 'server',
    flags: STATUS_FLAGS,
    run: statusCommand,
  },
  model: {
    summary: "download a round's model as safetensors (--out) or a TF.js Layers model (--tfjs)",
    usage: 'model POPULATION [--round R] (--out FILE | --tfjs DIR) [--baseline]',
    description: "Downloads a round's published model (GET /v1/populations/{p}/rounds/{r}/model, public) and " +
      'writes it as the safetensors the server sends (--out FILE) and/or as a TF.js Layers model (--tfjs DIR: ' +
      'model.json and weights.bin, for tf.loadLayersModel).',
    positionals: ['POPULATION'],
    needs: 'server',
    flags: MODEL_FLAGS,
    run: modelCommand,
  },
  pause: {
    summary: 'pause a population: its claims get no task until it is resumed; reports in flight still count',
    usage: 'pause POPULATION [--json]',
    description: 'Pauses a running population (POST /v1/populations/{p}:pause, admin token): claims answer 204 ' +
      'with "Fedleaf-Population-State: paused" and leaves keep polling; leases in flight may still report and ' +
      'are folded, and rounds close by their rules (the round deadline keeps ticking while paused). Prints ' +
      'its new state.',
    positionals: ['POPULATION'],
    needs: 'admin',
    flags: CONTROL_FLAGS,
    run: controlCommand('pause'),
  },
  resume: {
    summary: 'resume a paused population: its claims get tasks again',
    usage: 'resume POPULATION [--json]',
    description: 'Resumes a paused population (POST /v1/populations/{p}:resume, admin token): claims get tasks ' +
      'again (a leaf polling sees it within 10 s). A population that is not paused is refused (409). Prints ' +
      'its new state.',
    positionals: ['POPULATION'],
    needs: 'admin',
    flags: CONTROL_FLAGS,
    run: controlCommand('resume'),
  },
  finish: {
    summary: 'finish a population now, with a reason: its open round closes without a next model',
    usage: 'finish POPULATION [--reason TEXT] [--json]',
    description: 'Finishes a running or paused population before its last round (POST ' +
      '/v1/populations/{p}:finish, admin token): its open round closes without publishing a next model (its ' +
      'reports are dropped; uploads to it get 410), its state becomes finished and the reason is kept in its ' +
      'status; leaves are told it is finished. The models published so far stay downloadable. Prints its new ' +
      'state.',
    positionals: ['POPULATION'],
    needs: 'admin',
    flags: FINISH_FLAGS,
    run: controlCommand('finish'),
  },
  token: {
    summary: "issue, revoke or list a population's client tokens (a new token is printed once, on stdout)",
    usage: 'token issue POPULATION [--token-out FILE] | token revoke POPULATION ID | token ls POPULATION [--json]',
    description: "Manages a population's client tokens (admin token). issue: a new client token (POST " +
      '/v1/populations/{p}/tokens), printed on stdout (its id on stderr) or written to --token-out FILE (mode ' +
      '0600), once: the server keeps only its hash. revoke: claims and model:select ' +
      'under token ID get 403 from then on (POST /v1/populations/{p}/tokens/{id}:revoke; the population\'s first ' +
      'token is ID 0); leases it holds may still report. ls: each token\'s id, creation time and state (GET ' +
      '/v1/populations/{p}/tokens), never a token.',
    positionals: ['ACTION', 'POPULATION', '[ID]'],
    needs: 'admin',
    flags: TOKEN_FLAGS,
    run: tokenCommand,
  },
  device: {
    summary: "list or revoke a private population's devices (never a credential)",
    usage: 'device ls POPULATION [--json] | device revoke POPULATION ID',
    description: "Manages a private population's devices (admin token). ls: each device's id, enrollment time, " +
      'the rounds it has taken part in, its last round and its state (GET /v1/populations/{p}/devices, every ' +
      'page), never a credential. revoke: claims under device ID get 403 from then on (POST ' +
      '/v1/populations/{p}/devices/{id}:revoke); leases it holds may still report.',
    positionals: ['ACTION', 'POPULATION', '[ID]'],
    needs: 'admin',
    flags: DEVICE_FLAGS,
    run: deviceCommand,
  },
  'plan-privacy': {
    summary: 'the epsilon a DP-FTRL setting reaches, or the noise multiplier a target epsilon needs',
    usage: 'plan-privacy --devices N --per-round N --rounds N --max-participations N --min-separation N ' +
      '--delta D (--noise-multiplier Z | --target-epsilon E) [--json]',
    description: 'The privacy calculator (planPrivacy: the accountant of src/core/privacy, DP-FTRL with tree ' +
      'aggregation under participation limits): the (epsilon, delta) per device a setting reaches, or the least ' +
      'noise multiplier reaching a target epsilon, and whether that many devices can keep the limits. Needs no ' +
      'server.',
    positionals: [],
    needs: 'none',
    flags: PLAN_PRIVACY_FLAGS,
    run: planPrivacyCommand,
  },
};

const EXIT_STATUSES = 'exit status: 0 done (status --watch: the population finished); 1 the server refused (the ' +
  "message is the server's, naming its rule), could not be reached, or a file could not be written; 2 bad flags, " +
  'files or configuration (nothing was sent).';

const CONFIGURATION = 'The server URL and the admin token each come from the first of: the flags (--server, ' +
  '--admin-token-file), the environment (FEDLEAF_SERVER, FEDLEAF_ADMIN_TOKEN), the config file ' +
  '($FEDLEAF_ADMIN_CONFIG, else ~/.config/fedleaf/admin.json: {"server": URL, "admin_token_file": FILE}; one ' +
  'holding "admin_token" itself must be mode 600). No token is printed but a client token asked for ' +
  '(create --show-token, token issue).';

const TOP_USAGE = `usage: ${PROGRAM} COMMAND [flags]   (${PROGRAM} COMMAND --help for its flags)`;

/** The top-level --help: every command with its summary, the common flags, configuration, exit statuses. */
export function topHelp() {
  return helpText({
    usage: TOP_USAGE,
    description: `Operate a fedleaf task repository (fedleaf-server): create and list populations, watch their ` +
      `progress, download their models, pause, resume or finish them, manage their client tokens. ${CONFIGURATION}`,
    sections: [{ title: 'commands', rows: Object.entries(COMMANDS).map(([name, c]) => [name, c.summary]) }],
    flags: GLOBAL_FLAGS,
    exitStatuses: EXIT_STATUSES,
  });
}

function commandUsage(name) {
  return `usage: ${PROGRAM} ${COMMANDS[name].usage}`;
}

/** A command's --help: its usage, what it does, its flags and the common ones, exit statuses. */
export function commandHelp(name) {
  const command = COMMANDS[name];
  const { help, ...common } = GLOBAL_FLAGS;
  return helpText({
    usage: commandUsage(name),
    description: command.needs === 'admin' ? `${command.description} ${CONFIGURATION}` : command.description,
    flags: { ...command.flags, ...common, help },
    exitStatuses: EXIT_STATUSES,
  });
}

// A flag with `optionalValue` (status --watch [S]) takes the next argument only when it is a
// number; otherwise it gets that default. parseArgs has no optional values: rewritten to --flag=V.
function withOptionalValues(argv, flags) {
  const out = [];
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].startsWith('--') ? argv[i].slice(2) : null;
    const flag = name !== null ? flags[name] : undefined;
    if (flag?.optionalValue === undefined) {
      out.push(argv[i]);
    } else if (i + 1 < argv.length && /^\d+(\.\d+)?$/.test(argv[i + 1])) {
      out.push(`--${name}=${argv[++i]}`);
    } else {
      out.push(`--${name}=${flag.optionalValue}`);
    }
  }
  return out;
}

/**
 * Parses `argv` (after the program name) against the table: {name, command, args, positionals},
 * or {help: text} for --help. Throws AdminUsageError (with `usage`) on a bad command line.
 */
export function parseAdminCommandLine(argv) {
  const [name, ...rest] = argv;
  if (name === undefined) throw Object.assign(new AdminUsageError('missing COMMAND'), { usage: TOP_USAGE });
  if (name === '--help' || name === '-h' || name === 'help') return { help: topHelp() };
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    throw Object.assign(new AdminUsageError(`unknown command '${name}' (commands: ${Object.keys(COMMANDS).join(', ')})`),
      { usage: TOP_USAGE });
  }
  const flags = { ...command.flags, ...GLOBAL_FLAGS };
  const options = Object.fromEntries(Object.entries(flags).map(([flag, { type, short, default: fallback }]) =>
    [flag, { type, ...(short ? { short } : {}), ...(fallback !== undefined ? { default: fallback } : {}) }]));
  const usage = commandUsage(name);
  let parsed;
  try {
    parsed = parseArgs({ args: withOptionalValues(rest, flags), options, allowPositionals: true });
  } catch (error) {
    throw Object.assign(new AdminUsageError(error.message), { usage });
  }
  const { values: args, positionals } = parsed;
  if (args.help) return { help: commandHelp(name) };
  // Positionals named [LIKE_THIS] are optional (the command checks them).
  const required = command.positionals.filter((name) => !name.startsWith('[')).length;
  if (positionals.length < required) {
    throw Object.assign(new AdminUsageError(`missing ${command.positionals[positionals.length]}`), { usage });
  }
  if (positionals.length > command.positionals.length) {
    throw Object.assign(new AdminUsageError(`unexpected argument '${positionals[command.positionals.length]}'`), { usage });
  }
  return { name, command, args, positionals, usage };
}

/**
 * The message of a failed request: the server's own (it names the rule; for 401/403 also where the
 * admin token came from), or why the server was not reached; null for an error of another kind.
 */
export function failureText(error, { server, sources }) {
  if (error instanceof ProtocolError) {
    const from = (error.status === 401 || error.status === 403) && sources.token ? ` (admin token from ${sources.token})` : '';
    return `HTTP ${error.status} ${error.code}: ${error.message}${from}`;
  }
  if (error?.name === 'RequestTimeoutError' || (error instanceof TypeError && error.message === 'fetch failed')) {
    return `cannot reach ${server}: ${networkErrorMessage(error)}`;
  }
  return null;
}

/**
 * Runs fedleaf-admin with `argv`; resolves to its exit status. Output goes through out/err (one
 * line a call).
 */
export async function runAdmin(argv, { env = process.env, out = console.log, err = console.error } = {}) {
  let parsed;
  try {
    parsed = parseAdminCommandLine(argv);
  } catch (error) {
    err(`${PROGRAM}: ${error.message}\n${error.usage}`);
    return 2;
  }
  if (parsed.help) {
    out(parsed.help);
    return 0;
  }
  const { command, args, positionals, usage } = parsed;
  let connection;
  try {
    connection = command.needs === 'none' ? undefined
      : resolveConnection({ server: args.server, adminTokenFile: args['admin-token-file'] },
        { token: command.needs === 'admin' }, env);
  } catch (error) {
    if (!(error instanceof AdminUsageError)) throw error;
    err(`${PROGRAM}: ${error.message}\n${usage}`);
    return 2;
  }
  const client = connection && new ProtocolClient({ server: connection.server, token: connection.token });
  try {
    return await command.run({ args, positionals, client, out, err });
  } catch (error) {
    if (error instanceof AdminUsageError) {
      err(`${PROGRAM}: ${error.message}\n${usage}`);
      return 2;
    }
    err(`${PROGRAM}: ${(connection && failureText(error, connection)) ?? error.message}`);
    return 1;
  }
}
