// The demo's privacy section (run_demo.mjs --privacy EPS): every leaf is a device taking part in
// every round, and the noise is the least that keeps ε ≤ EPS after the demo's rounds, from the
// accountant the server uses (planPrivacy over src/core/privacy).
import { planPrivacy } from '../../js_bindings/src/index.js';

export async function demoPrivacy({ maxEpsilon, delta, clipNorm, clients, rounds }) {
  if (!(maxEpsilon > 0)) throw new RangeError(`--privacy: ε must be a number > 0, got ${maxEpsilon}`);
  const plan = await planPrivacy({ devices: clients, perRound: clients, rounds, maxParticipations: rounds,
    minSeparation: 0, delta, targetEpsilon: maxEpsilon });
  return { mechanism: 'dp_ftrl_tree', noise_multiplier: plan.noiseMultiplier, clip_norm: clipNorm, delta,
    max_epsilon: maxEpsilon, max_participations: rounds, min_separation: 0 };
}
