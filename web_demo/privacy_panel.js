// What a private population promises, as the dashboard and the demo page show it: the server's
// status "privacy" section (the population's DP-FTRL settings, ε spent after the rounds released
// so far and ε at the end of the configured run, both at the population's δ, from the server's
// accountant; docs/design.md "Privacy") in words and numbers. Nothing here computes ε: a page
// shows what the server's accountant says, so the page, the status, /metrics and the calculator
// cannot disagree.

import { formatCount } from './format.js';

// ε as the pages write it: two decimals, more below 0.01.
export function formatEpsilon(epsilon) {
  if (!Number.isFinite(epsilon)) return '–';
  return epsilon >= 0.01 ? epsilon.toFixed(2) : epsilon.toPrecision(2);
}

// The sentence a person in a tab can read: the server's own ("guarantee"), else one made of the
// numbers it sent.
export function guaranteeText(privacy) {
  if (!privacy) return 'This population is not private: it makes no promise about what its model reveals.';
  if (typeof privacy.guarantee === 'string' && privacy.guarantee) return privacy.guarantee;
  return `Whether or not one device takes part changes the probability of any model this population ` +
    `publishes by at most a factor of e^${formatEpsilon(privacy.epsilon_at_end)}, except with ` +
    `probability ${privacy.delta}.`;
}

// The panel's stats: [label, value, title] for each fact, in the order the page shows them.
export function privacyFacts(privacy) {
  return [
    ['ε spent', `${formatEpsilon(privacy.epsilon_spent)} of ${formatEpsilon(privacy.max_epsilon)}`,
      `after the ${formatCount(privacy.rounds_released)} round(s) released so far, at δ = ${privacy.delta}`],
    ['ε at the end', formatEpsilon(privacy.epsilon_at_end), 'after every round the population is configured to run'],
    ['δ', String(privacy.delta), 'the probability with which the ε bound may fail'],
    ['Unit', privacy.unit ?? 'device', 'what the guarantee protects: all of one enrolled device’s updates'],
    ['Noise multiplier', String(privacy.noise_multiplier), 'noise standard deviation ÷ clip norm, on every coordinate'],
    ['Clip norm', String(privacy.clip_norm), 'L2 bound on one device’s whole update'],
    ['Participations', `at most ${privacy.max_participations}, ${privacy.min_separation} round(s) apart`,
      'max_participations, and min_separation rounds strictly between two rounds of one device'],
  ];
}

// ε after each released round (1-based): the server's epsilon_by_round.
export function epsilonSeries(privacy) {
  const series = Array.isArray(privacy?.epsilon_by_round) ? privacy.epsilon_by_round : [];
  return { labels: series.map((_, i) => String(i + 1)), values: series };
}

// The demo page's line for the person in the tab: what the population promises them and ε spent
// so far; hidden for a population that promises nothing.
export function renderGuarantee(el, privacy) {
  el.hidden = !privacy;
  if (!privacy) return;
  el.textContent = `Your privacy: ${guaranteeText(privacy)} ε spent so far: ` +
    `${formatEpsilon(privacy.epsilon_spent)} of at most ${formatEpsilon(privacy.max_epsilon)}.`;
}
