// planPrivacy: the privacy calculator of DP-FTRL with tree aggregation, over the same C++
// accountant the server uses (src/core/privacy, through wasm/bind_privacy.cc).
//
//   const plan = await planPrivacy({ devices: 3e6, perRound: 6500, rounds: 2000,
//     maxParticipations: 6, minSeparation: 313, delta: 1e-10, noiseMultiplier: 7 });
//   plan.epsilon;           // 8.90 (and plan.rho 0.806)
//   (await planPrivacy({ ...settings, noiseMultiplier: undefined, targetEpsilon: 8 })).noiseMultiplier;
//
// Bad settings throw an Error with code 'InvalidInput' whose message names the field.

import { loadModule } from '../engine/load_module.js';

// The module loaded with the default options, shared by the calls that pass none: a calculator in
// a form is called on every keystroke, and compiling the module each time would dominate.
let defaultModule;

function moduleFor(options) {
  if (options !== undefined) return loadModule(options).then(({ module }) => module);
  defaultModule ??= loadModule().then(({ module }) => module, (error) => {
    defaultModule = undefined;
    throw error;
  });
  return defaultModule;
}

/**
 * @param {{devices: number, perRound: number, rounds: number, maxParticipations: number,
 *   minSeparation: number, delta: number, noiseMultiplier?: number, targetEpsilon?: number}} settings
 *   exactly one of noiseMultiplier and targetEpsilon; minSeparation counts the rounds strictly
 *   between two rounds of one device
 * @param {{simd?: 'auto'|boolean, distUrl?: string|URL}} [options] as createExecutor's
 */
export async function planPrivacy(settings, options) {
  const module = await moduleFor(options);
  return module.planPrivacy(settings);
}
