// Command-line options shared by the Node leaf CLIs (bin/fedleaf-leaf.js, bin/fedleaf-simulate.js):
// parsing, --help, and checks that exit with status 2 and the usage line on bad input.
import { parseArgs } from 'node:util';

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
 * @param {string} program  e.g. 'fedleaf-leaf'
 * @param {string} usage    the usage line
 * @param {object} extraOptions  parseArgs options beyond the common ones
 * @returns {{args: object, fail: (message: string) => never, prefetch: number,
 *            maxTasks: number|undefined, simd: 'auto'|false}}
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
  const prefetch = Number(args.prefetch);
  if (!Number.isInteger(prefetch) || prefetch < 0) fail('--prefetch must be an integer >= 0');
  let maxTasks;
  if (args['max-tasks'] !== undefined) {
    maxTasks = Number(args['max-tasks']);
    if (!Number.isInteger(maxTasks) || maxTasks < 1) fail('--max-tasks must be an integer >= 1');
  }
  return { args, fail, prefetch, maxTasks, simd: args.baseline ? false : 'auto' };
}
