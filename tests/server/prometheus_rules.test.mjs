// deploy/prometheus/fedleaf.rules.yml against a live server: every fedleaf_* metric an alert
// selects is in the server's /metrics (after a round, a refused upload and a closed round, so
// the labelled families have samples), with every label the selector matches on; every alert
// has a duration, a severity, a summary and a runbook entry in docs/deploy.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { withServer, call, createPopulation, trainResult, REPO_ROOT } from './server_harness.mjs';

const RULES = path.join(REPO_ROOT, 'deploy', 'prometheus', 'fedleaf.rules.yml');
// Labels Prometheus attaches to every scraped series (the scrape target's), not the server's.
const TARGET_LABELS = new Set(['job', 'instance']);
// Series Prometheus records itself for every target.
const SCRAPE_SERIES = new Set(['up']);

// The alerts of the rules file: [{name, expr, body}] (body: the alert's lines), read line by
// line (the file keeps to block YAML: `expr:` on one line, or folded with `>-` and indented).
function readAlerts(text) {
  const lines = text.split('\n');
  const alerts = [];
  for (let i = 0; i < lines.length; i++) {
    const m = lines[i].match(/^(\s*)- alert: (\S+)\s*$/);
    if (!m) continue;
    const alert = { name: m[2], expr: '', body: [] };
    for (let j = i + 1; j < lines.length && !/^\s*- alert:/.test(lines[j]); j++) {
      alert.body.push(lines[j]);
      const e = lines[j].match(/^(\s*)expr: (.*)$/);
      if (!e) continue;
      if (e[2] !== '>-') { alert.expr = e[2]; continue; }
      const indent = e[1].length;
      for (let k = j + 1; k < lines.length && lines[k].match(/^(\s*)/)[1].length > indent; k++) {
        alert.expr += ` ${lines[k].trim()}`;
      }
    }
    alerts.push(alert);
  }
  return alerts;
}

// {metric: Set(label keys)} of a Prometheus text exposition.
function readMetrics(text) {
  const samples = new Map();
  for (const line of text.split('\n')) {
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? \S+$/);
    if (!m) continue;
    const keys = samples.get(m[1]) ?? new Set();
    for (const pair of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="/g)) keys.add(pair[1]);
    samples.set(m[1], keys);
  }
  return samples;
}

// [{metric, labels: [keys]}] of every selector of a metric in `expr`.
function selectors(expr) {
  const out = [];
  for (const m of expr.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?/g)) {
    if (!m[1].startsWith('fedleaf_') && !SCRAPE_SERIES.has(m[1])) continue;
    const labels = [...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1]);
    out.push({ metric: m[1], labels });
  }
  return out;
}

test('every metric and label the alerting rules select is in a live server\'s /metrics', async () => {
  const alerts = readAlerts(readFileSync(RULES, 'utf8'));
  assert.ok(alerts.length >= 6, `${alerts.length} alerts read from ${RULES}`);
  const metrics = await withServer(async ({ url }) => {
    const p = await createPopulation(url, { id: 'rules', rounds: 1, clients_per_round: 1 });
    const claim = await call(`${url}/v1/populations/rules/tasks:claim`, { method: 'POST', token: p.client_token });
    assert.equal(claim.status, 200);
    const refused = await call(`${url}${claim.json.upload_url}`,
                               { method: 'PUT', token: claim.json.lease_token, body: Buffer.from('not safetensors') });
    assert.equal(refused.status, 400);
    const body = trainResult({ rows: [1, 2], rowValue: 0.5, denseValue: 0.25, numExamples: 3 });
    const accepted = await call(`${url}${claim.json.upload_url}`, { method: 'PUT', token: claim.json.lease_token, body });
    assert.equal(accepted.status, 201);
    for (;;) {  // the close runs off the request path
      if ((await call(`${url}/v1/populations/rules`)).json.state === 'finished') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    return readMetrics((await call(`${url}/metrics`)).bytes.toString());
  });

  let checked = 0;
  for (const alert of alerts) {
    const used = selectors(alert.expr);
    assert.ok(used.length > 0, `${alert.name}: no metric in '${alert.expr}'`);
    for (const { metric, labels } of used) {
      if (SCRAPE_SERIES.has(metric)) continue;
      assert.ok(metrics.has(metric), `${alert.name}: ${metric} is not in /metrics (${[...metrics.keys()].join(', ')})`);
      for (const label of labels.filter((l) => !TARGET_LABELS.has(l))) {
        assert.ok(metrics.get(metric).has(label), `${alert.name}: ${metric} has no label '${label}'`);
      }
      checked += 1;
    }
  }
  assert.ok(checked >= 10, `only ${checked} selectors checked`);
});

test('every alert has a duration, a severity, a summary and a runbook entry in docs/deploy.md', () => {
  const alerts = readAlerts(readFileSync(RULES, 'utf8'));
  const deploy = readFileSync(path.join(REPO_ROOT, 'docs', 'deploy.md'), 'utf8');
  const runbook = deploy.slice(deploy.indexOf('\n## Runbook'));
  assert.ok(runbook.length > 1, 'docs/deploy.md has no "## Runbook" section');
  for (const alert of alerts) {
    const body = alert.body.join('\n');
    assert.match(body, /^\s*for: \d+[smh]$/m, `${alert.name}: no 'for:'`);
    assert.match(body, /^\s*severity: (page|ticket)$/m, `${alert.name}: no severity`);
    assert.match(body, /^\s*summary: "/m, `${alert.name}: no summary`);
    assert.match(body, new RegExp(`^\\s*runbook: "docs/deploy.md#runbook: ${alert.name}"$`, 'm'), `${alert.name}: no runbook link`);
    assert.ok(runbook.includes(`**\`${alert.name}\`**`), `${alert.name} is not in the runbook of docs/deploy.md`);
  }
});
