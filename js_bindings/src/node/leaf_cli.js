// What the Node leaf CLIs (bin/fedleaf-leaf.js, bin/fedleaf-simulate.js) share: option parsing,
// --help, and checks that exit with status 2 and the usage line on bad input; loading the corpus
// they shard (exit 1 when it cannot); the exit status of a run stopped by a signal (128 + its
// number: 130 for SIGINT, 143 for SIGTERM).
import { constants } from 'node:os';
import { parseArgs } from 'node:util';

import { loadSpamAssassin } from '../datasets/spamassassin.js';

const COMMON_OPTIONS = {
  server: { type: 'string' },
  population: { type: 'string' },
  token: { type: 'string' },
  'non-iid': { type: 'boolean', default: false },
  prefetch: { type: 'string', default: '1' },
  'max-tasks': { type: 'string' },
  baseline: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
};

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
 * @param {string} usage    the usage line
 * @param {object} extraOptions  parseArgs options beyond the common ones
 * @returns {{args: object, fail: (message: string) => never, integer: (name: string, min: number) => number,
 *            prefetch: number, maxTasks: number|undefined, simd: 'auto'|false}}
 */
export function parseLeafCommandLine(program, usage, extraOptions = {}) {
  const fail = (message) => {
    console.error(`${program}: ${message}\n${usage}`);
    process.exit(2);
  };
  let args;
  try {
    ({ values: args } = parseArgs({ options: { ...COMMON_OPTIONS, ...extraOptions } }));
  } catch (error) {
    fail(error.message);
  }
  if (args.help) {
    console.log(usage);
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
