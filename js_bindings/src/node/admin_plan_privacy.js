// fedleaf-admin plan-privacy: the privacy calculator (planPrivacy, the C++ accountant through
// wasm) from the command line, both ways: the epsilon a setting reaches, or the noise multiplier a
// target epsilon needs. Needs no server.
import { planPrivacy } from '../privacy/plan_privacy.js';
import { AdminUsageError } from './admin_usage_error.js';

const number = (value, help) => ({ type: 'string', value, help });

export const PLAN_PRIVACY_FLAGS = {
  devices: number('N', 'enrolled devices (decides only whether the limits can be kept)'),
  'per-round': number('N', "devices per round, the round's target size"),
  rounds: number('N', 'rounds of the run'),
  'max-participations': number('N', 'rounds one device may take part in'),
  'min-separation': number('N', 'rounds strictly between two rounds of one device (0: consecutive allowed)'),
  delta: number('D', 'delta, in (0, 1); commonly below 1 / devices'),
  'noise-multiplier': number('Z', 'noise standard deviation over the clip norm: answers epsilon'),
  'target-epsilon': number('E', 'the epsilon to reach: answers the least noise multiplier'),
  json: { type: 'boolean', default: false, help: 'print the whole answer as JSON' },
};

const REQUIRED = ['devices', 'per-round', 'rounds', 'max-participations', 'min-separation', 'delta'];
const camel = (flag) => flag.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

function settingsFrom(args) {
  for (const flag of REQUIRED) {
    if (args[flag] === undefined) throw new AdminUsageError(`missing --${flag}`);
  }
  if ((args['noise-multiplier'] === undefined) === (args['target-epsilon'] === undefined)) {
    throw new AdminUsageError('give exactly one of --noise-multiplier and --target-epsilon');
  }
  const settings = {};
  for (const flag of [...REQUIRED, 'noise-multiplier', 'target-epsilon']) {
    if (args[flag] === undefined) continue;
    const value = Number(args[flag]);
    if (args[flag].trim() === '' || !Number.isFinite(value)) {
      throw new AdminUsageError(`--${flag}: expected a number, got '${args[flag]}'`);
    }
    settings[camel(flag)] = value;
  }
  return settings;
}

/** plan-privacy: one planPrivacy call; a setting the accountant refuses exits 2 with its message. */
export async function planPrivacyCommand({ args, out }) {
  const settings = settingsFrom(args);
  let plan;
  try {
    plan = await planPrivacy(settings);
  } catch (error) {
    if (error.code === 'InvalidInput') throw new AdminUsageError(error.message);
    throw error;
  }
  if (args.json) {
    out(JSON.stringify(plan, null, 2));
    return 0;
  }
  out(`epsilon ${plan.epsilon.toPrecision(4)} at delta ${plan.delta} per device (rho ${plan.rho.toPrecision(4)} zCDP), ` +
    `noise multiplier ${plan.noiseMultiplier.toPrecision(4)}`);
  out(`each device: at most ${plan.participationsPossible} rounds, ${settings.minSeparation} or more rounds apart`);
  out(plan.feasible
    ? `feasible: ${settings.devices} devices >= the ${plan.devicesNeeded} the limits need`
    : `NOT feasible: the limits need at least ${plan.devicesNeeded} devices, not ${settings.devices}`);
  return 0;
}
