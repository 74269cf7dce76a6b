// scripts/demo/run_demo.mjs (what scripts/demo.sh runs once its server is up) against a real
// fedleaf-server, small: 2 leaves, 1 round, with its default plan (the wide & deep records plan)
// and with --plan scripts/demo/spam_plan.json (the single-input text plan). Each prints its plan's
// kind, one table row and the final accuracy, and writes its JSON. With heterogeneous leaves
// (--slow-fraction …) a slow leaf still reports; a bad such flag stops it before it creates anything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { ADMIN_TOKEN, call, tempDir, withServer } from '../server/server_harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function runDemo(server, planArgs) {
  const dir = tempDir('fedleaf-run-demo-');
  const tokenFile = path.join(dir, 'admin.token');
  writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`);
  const json = path.join(dir, 'run.json');
  const { stdout } = await promisify(execFile)(process.execPath,
    [path.join(root, 'scripts/demo/run_demo.mjs'), '--server', server.url, '--admin-token-file', tokenFile,
      '--clients', '2', '--rounds', '1', '--json', json, ...planArgs],
    { cwd: root, maxBuffer: 16 << 20, timeout: 240_000 });
  return { stdout, result: JSON.parse(readFileSync(json, 'utf8')) };
}

test('run_demo trains the wide & deep records plan by default', { timeout: 300_000 }, () => withServer(async (server) => {
  const { stdout, result } = await runDemo(server, []);
  assert.match(stdout, /^plan scripts\/demo\/spam_wide_deep_plan\.json \(records: 9 inputs\)$/m);
  assert.match(stdout, /^\s+1\s+2\s+4841\s+[\d.]+\s+[\d.]+%/m, stdout);
  assert.match(stdout, /final eval accuracy \d+\.\d+% after 1 rounds \(2 leaves, non-IID\)/);
  assert.equal(result.records, true);
  assert.equal(result.results.length, 1);
  assert.ok(result.results[0].eval_auc > 0.5, `eval AUC ${result.results[0].eval_auc}`);
}));

test('run_demo --plan scripts/demo/spam_plan.json trains the single-input text plan', { timeout: 300_000 }, () => withServer(async (server) => {
  const { stdout, result } = await runDemo(server, ['--plan', 'scripts/demo/spam_plan.json']);
  assert.match(stdout, /^plan scripts\/demo\/spam_plan\.json \(text\)$/m);
  assert.match(stdout, /^\s+1\s+2\s+4841\s+[\d.]+\s+[\d.]+%/m, stdout);
  assert.equal(result.records, false);
  assert.equal(result.plan, 'scripts/demo/spam_plan.json');
}));

test('run_demo --slow-fraction --slow-factor --seed runs heterogeneous leaves: the slow leaf waits, then uploads', { timeout: 300_000 }, () => withServer(async (server) => {
  const { stdout, result } = await runDemo(server, ['--plan', 'scripts/demo/spam_plan.json',
    '--slow-fraction', '0.5', '--slow-factor', '2', '--seed', '3']);
  assert.match(stdout, /^heterogeneous leaves \(seed 3\): 0\.5 of them 2× slower, churn 0 per task/m);
  assert.match(stdout, /^\s+1\s+2\s+4841\s+[\d.]+\s+[\d.]+%/m, stdout);  // both leaves reported
  assert.equal(result.results.length, 1);
}));

test('run_demo refuses a bad heterogeneity flag before it creates a population', { timeout: 60_000 }, () => withServer(async (server) => {
  await assert.rejects(runDemo(server, ['--slow-fraction', '1.5', '--slow-factor', '5']),
    (error) => /slow\.fraction: expected a number in \[0, 1\], got 1\.5/.test(error.stderr));
  const { json } = await call(`${server.url}/v1/populations`, { token: ADMIN_TOKEN });
  assert.deepEqual(json.populations, []);
}));
