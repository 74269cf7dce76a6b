// What the Node leaf CLIs (bin/fedleaf-leaf.js, bin/fedleaf-simulate.js) share: option parsing,
// --help (the usage line, what the command does, every flag with its meaning and default, the exit
// statuses), and checks that exit with status 2 and the usage line on bad input; loading the corpus
// they shard (exit 1 when it cannot); the exit status of a run stopped by a signal (128 + its
// number: 130 for SIGINT, 143 for SIGTERM).
import { constants } from 'node:os';
import { parseArgs } from 'node:util';

import { loadSpamAssassin } from '../datasets/spamassassin.js';

// Flags both CLIs take: parseArgs's option (type, short, default), the value's name in --help
// (`value`) and what the flag means (`help`, required of every flag).
const COMMON_FLAGS = {
  server: { type: 'string', value: 'URL', help: 'the task repository, an http: or https: URL (required)' },
  population: { type: 'string', value: 'P', help: 'the population to train (required)' },
  token: { type: 'string', value: 'T', help: "the population's client token (required)" },
  'non-iid': { type: 'boolean', default: false,
    help: 'non-IID shards: the train split sorted by corpus group and sender domain and cut into ' +
      'contiguous runs, so most shards hold one group (all spam or all ham) and few senders ' +
      '(default: IID shards, emails hashed to shards)' },
  prefetch: { type: 'string', default: '1', value: 'K',
    help: 'tasks claimed and downloaded ahead of the one training, an integer >= 0 (default 1)' },
  'max-tasks': { type: 'string', value: 'N',
    help: 'stop after N claimed tasks, failed ones included, an integer >= 1 (default: until the ' +
      'population finishes)' },
  baseline: { type: 'boolean', default: false,
    help: 'load the baseline wasm build (default: the SIMD build where the engine supports it)' },
  help: { type: 'boolean', short: 'h', default: false, help: 'print this help and exit' },
};

const EXIT_STATUSES = 'exit status: 0 finished (or --max-tasks reached); 1 stopped by an error; 2 bad ' +
  'flags or data (before any task is claimed); 130 / 143 after Ctrl-C (SIGINT) / SIGTERM, which stop ' +
  'cleanly: leases are abandoned and the server reclaims them when they expire.';

const HELP_WIDTH = 100;
const FLAG_COLUMN = 22;

// `text` in lines of at most `width` characters (a longer word on a line of its own), each but
// the first indented by `indent` spaces.
function wrap(text, width, indent) {
  const lines = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  lines.push(line);
  return lines.join(`\n${' '.repeat(indent)}`);
}

// Rows of `label  text` in two columns, the text wrapped to the help's width (a label too wide
// for its column gets a line of its own).
function columnLines(rows) {
  return rows.map(([label, text]) => {
    const column = label.length + 4 > FLAG_COLUMN ? `  ${label}\n${' '.repeat(FLAG_COLUMN)}` : `  ${label.padEnd(FLAG_COLUMN - 2)}`;
    return column + wrap(text, HELP_WIDTH - FLAG_COLUMN, FLAG_COLUMN);
  });
}

/**
 * What --help prints: the usage line, the description, any sections (e.g. a CLI's commands, as
 * rows of name and meaning), every flag (its value's name and what it means) and the exit
 * statuses (default: the leaf CLIs'). Throws when a flag has no `help` text.
 * @param {{usage: string, description: string, flags: Object<string, {help: string, value?: string,
 *          short?: string}>, sections?: {title: string, rows: string[][]}[], exitStatuses?: string}} command
 * @returns {string}
 */
export function helpText({ usage, description, flags, sections = [], exitStatuses = EXIT_STATUSES }) {
  const rows = Object.entries(flags).map(([name, flag]) => {
    if (!flag.help) throw new Error(`flag --${name} has no help text`);
    return [`${flag.short ? `-${flag.short}, ` : ''}--${name}${flag.value ? ` ${flag.value}` : ''}`, flag.help];
  });
  const listed = sections.flatMap(({ title, rows: sectionRows }) => [`${title}:`, ...columnLines(sectionRows), '']);
  return [usage, '', wrap(description, HELP_WIDTH, 0), '', ...listed, 'flags:', ...columnLines(rows), '',
    wrap(exitStatuses, HELP_WIDTH, 0)].join('\n');
}

/**
 * An integer flag's value: decimal digits only (no sign, blanks, exponent, hex or empty string),
 * at least `min`. Returns the number, or the message naming the flag and the value as given.
 * @returns {number|string}
 */
export function parseIntegerFlag(name, value, min) {
  const number = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(number) || number < min) {
    return `--${name} must be an integer >= ${min}, got ${JSON.stringify(value).replace(/^"|"$/g, "'")}`;
  }
  return number;
}

/** The message for a --server that is not an http: or https: URL, or null. */
export function serverProblem(server) {
  let url;
  try {
    url = new URL(server);
  } catch {
    url = null;
  }
  if (url && (url.protocol === 'http:' || url.protocol === 'https:') && url.host) return null;
  return `--server must be an http: or https: URL, got '${server}'`;
}

/**
 * The SpamAssassin records both CLIs shard, or exit 1 naming `program` and why they cannot load.
 * @param {string} program  e.g. 'fedleaf-leaf'
 */
export async function loadSpamAssassinOrExit(program) {
  try {
    return await loadSpamAssassin();
  } catch (error) {
    console.error(`${program}: ${error.message}`);
    process.exit(1);
  }
}

/**
 * @param {string} program  e.g. 'fedleaf-leaf'
 * @param {{usage: string, description: string, flags?: object}} command  the usage line, what the
 *   command does (for --help), and its flags beyond the common ones (as COMMON_FLAGS: each with
 *   its help)
 * @returns {{args: object, fail: (message: string) => never, integer: (name: string, min: number) => number,
 *            prefetch: number, maxTasks: number|undefined, simd: 'auto'|false}}
 */
export function parseLeafCommandLine(program, { usage, description, flags = {} }) {
  const { server, population, token, help: helpFlag, ...common } = COMMON_FLAGS;
  const allFlags = { server, population, token, ...flags, ...common, help: helpFlag };
  const help = helpText({ usage, description, flags: allFlags });
  const options = Object.fromEntries(Object.entries(allFlags).map(([name, { type, short, default: fallback }]) =>
    [name, { type, ...(short ? { short } : {}), ...(fallback !== undefined ? { default: fallback } : {}) }]));
  const fail = (message) => {
    console.error(`${program}: ${message}\n${usage}`);
    process.exit(2);
  };
  let args;
  try {
    ({ values: args } = parseArgs({ options }));
  } catch (error) {
    fail(error.message);
  }
  if (args.help) {
    console.log(help);
    process.exit(0);
  }
  for (const required of ['server', 'population', 'token']) {
    if (!args[required]) fail(`missing --${required}`);
  }
  const badServer = serverProblem(args.server);
  if (badServer) fail(badServer);
  // The value of integer flag --name (a string flag), or exit 2 naming it.
  const integer = (name, min) => {
    const parsed = parseIntegerFlag(name, args[name], min);
    if (typeof parsed === 'string') fail(parsed);
    return parsed;
  };
  const prefetch = integer('prefetch', 0);
  const maxTasks = args['max-tasks'] === undefined ? undefined : integer('max-tasks', 1);
  return { args, fail, integer, prefetch, maxTasks, simd: args.baseline ? false : 'auto' };
}

/**
 * On SIGINT or SIGTERM calls stop(signalName) once (a clean shutdown); a second signal exits at
 * once. exitCode() is then 128 + the signal's number (130, 143), else undefined: what the
 * command exits with after its clean shutdown, so scripts can tell an interrupted run from a
 * finished one.
 * @param {(signal: string) => void} stop
 * @returns {{exitCode: () => number|undefined, signal: () => string|undefined}}
 */
export function stopOnSignals(stop) {
  let received;
  const codeOf = (signal) => 128 + constants.signals[signal];
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      if (received) process.exit(codeOf(received));
      received = signal;
      stop(signal);
    });
  }
  return {
    exitCode: () => (received ? codeOf(received) : undefined),
    signal: () => received,
  };
}
