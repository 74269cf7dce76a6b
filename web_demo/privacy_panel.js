// What a private population promises, as the demo page shows it to the person in the tab: the
// server's status "privacy" section (the population's DP-FTRL settings, ε spent after the rounds released
// so far and ε at the end of the configured run, both at the population's δ, from the server's
// accountant; docs/design.md "Privacy") in words and numbers. Nothing here computes ε: a page
// shows what the server's accountant says, so the page, the status, /metrics and the calculator
// cannot disagree.

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

// The demo page's line for the person in the tab: what the population promises them and ε spent
// so far; hidden for a population that promises nothing.
export function renderGuarantee(el, privacy) {
  el.hidden = !privacy;
  if (!privacy) return;
  el.textContent = `Your privacy: ${guaranteeText(privacy)} ε spent so far: ` +
    `${formatEpsilon(privacy.epsilon_spent)} of at most ${formatEpsilon(privacy.max_epsilon)}.`;
}
