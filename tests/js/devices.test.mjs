// A private population's devices against a real fedleaf-server (issue 39): fedleaf-leaf.js
// enrolls once, trains, and keeps its credential in --device-file (mode 0600), which a restart
// reuses (the same device, no second enrollment) until the device has taken max_participations
// rounds (403, exit 1 naming the rule); fedleaf-admin device ls shows it without its credential
// and device revoke makes its claims 403. Raw HTTP: a claim without Fedleaf-Device is 401
// device_required, a forged credential 403, an enrollment flood 429 past the hourly limit, and
// none of them changes the population's task counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ADMIN_TOKEN, adminClient, call, tempDir, withServer } from '../server/server_harness.mjs';
import { textPlan } from '../e2e/browser/executor_cases.mjs';
import { ProtocolClient } from '../../js_bindings/src/index.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../js_bindings/bin');
const PLAN = textPlan({ vocab: 4096, dim: 4, batchSize: 64, bias: false });

// Values that pass the privacy section's full validation too.
function privacy(overrides = {}) {
  return { mechanism: 'dp_ftrl_tree', noise_multiplier: 1.0, clip_norm: 1.0, delta: 1e-5, max_epsilon: 1000,
    max_participations: 2, min_separation: 0, ...overrides };
}

function node(script, args, env = {}) {
  return new Promise((resolve) => {
    execFile('node', [path.join(bin, script), ...args],
      { env: { PATH: process.env.PATH, HOME: tempDir('fedleaf-devices-home-'), ...env } },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }));
  });
}

test('fedleaf-leaf enrolls once, reuses its device file, and stops at max_participations', () => withServer(async (server) => {
  const admin = adminClient(server.url);
  const pop = await admin.createPopulation({ plan: PLAN, seed: 2, rounds: 4, clients_per_round: 1,
    privacy: privacy() });
  const deviceFile = path.join(tempDir('fedleaf-device-file-'), 'devices.json');
  const leaf = (extra = []) => node('fedleaf-leaf.js', ['--server', server.url, '--population', pop.id,
    `--token=${pop.client_token}`, '--shard', '3/16', '--device-file', deviceFile, '--max-tasks', '1', ...extra]);

  const first = await leaf();
  assert.equal(first.code, 0, first.stderr);
  const enrolled = /enrolled as device ([0-9a-f]+)/.exec(first.stdout);
  assert.ok(enrolled, first.stdout);
  assert.match(first.stdout, /uploaded .* → 201/);
  assert.equal(statSync(deviceFile).mode & 0o777, 0o600);
  const kept = Object.values(JSON.parse(readFileSync(deviceFile, 'utf8')));
  assert.equal(kept.length, 1);
  assert.equal(kept[0].deviceId, enrolled[1]);

  const second = await leaf();  // a restart: the same device, no enrollment
  assert.equal(second.code, 0, second.stderr);
  assert.doesNotMatch(second.stdout, /enrolled/);
  assert.match(second.stdout, /uploaded .* → 201/);

  const third = await leaf();  // two rounds taken: the most the population allows
  assert.equal(third.code, 1);
  assert.match(third.stderr, /claim failed with HTTP 403: max_participations: this device has taken part in 2 rounds/);
  const { devices } = await admin.listDevices(pop.id);
  assert.deepEqual(devices.map((d) => [d.id, d.participations, d.last_round, d.revoked]), [[enrolled[1], 2, 1, false]]);
  assert.equal((await admin.status(pop.id)).round, 2);
}));

test('fedleaf-admin device ls and revoke: no credential shown, a revoked device gets 403', () => withServer(async (server) => {
  const admin = adminClient(server.url);
  const pop = await admin.createPopulation({ plan: PLAN, seed: 2, rounds: 4, clients_per_round: 2,
    privacy: privacy({ min_separation: 1 }) });
  const leaf = new ProtocolClient({ server: server.url, token: pop.client_token });
  const device = await leaf.enrollDevice(pop.id);
  assert.equal((await leaf.claim(pop.id, { device: device.credential })).kind, 'task');
  const env = { FEDLEAF_SERVER: server.url, FEDLEAF_ADMIN_TOKEN: ADMIN_TOKEN };

  const ls = await node('fedleaf-admin.js', ['device', 'ls', pop.id], env);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /^ID\s+ENROLLED\s+ROUNDS\s+LAST\s+STATE\n/);
  assert.match(ls.stdout, new RegExp(`\\n${device.device_id}\\s+\\S+Z\\s+1\\s+0\\s+live\\n`));
  assert.ok(!ls.stdout.includes(device.credential));
  const json = await node('fedleaf-admin.js', ['device', 'ls', pop.id, '--json'], env);
  assert.equal(JSON.parse(json.stdout).devices[0].participations, 1);

  // The same round again: 429 min_separation with the round it may return at.
  const again = await call(`${server.url}/v1/populations/${pop.id}/tasks:claim`,
    { method: 'POST', token: pop.client_token, body: '{}', headers: { 'Fedleaf-Device': device.credential } });
  assert.equal(again.status, 429);
  const refusal = again.json;
  assert.equal(refusal.error.code, 'min_separation');
  assert.equal(refusal.error.retry_round, 2);

  const revoked = await node('fedleaf-admin.js', ['device', 'revoke', pop.id, device.device_id], env);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal(revoked.stdout, `device ${device.device_id} of ${pop.id}: revoked\n`);
  await assert.rejects(leaf.claim(pop.id, { device: device.credential }), { status: 403, message: /is revoked/ });
  const twice = await node('fedleaf-admin.js', ['device', 'revoke', pop.id, device.device_id], env);
  assert.equal(twice.code, 1);
  assert.match(twice.stderr, /revoked already/);
  const help = await node('fedleaf-admin.js', ['device', '--help'], env);
  assert.match(help.stdout, /^usage: fedleaf-admin device ls POPULATION \[--json\] \| device revoke POPULATION ID/);
}));

test('no credential, a forged one and an enrollment flood get their 4xx and change nothing', () => withServer(async (server) => {
  const admin = adminClient(server.url);
  const pop = await admin.createPopulation({ plan: PLAN, seed: 2, rounds: 4, clients_per_round: 2,
    privacy: privacy({ enrollments_per_token_per_hour: 2 }) });
  const claimUrl = `${server.url}/v1/populations/${pop.id}/tasks:claim`;

  const missing = await call(claimUrl, { method: 'POST', token: pop.client_token, body: '{}' });
  assert.equal(missing.status, 401);
  const body = missing.json;
  assert.equal(body.error.code, 'device_required');
  assert.match(body.error.message, /Fedleaf-Device .* enroll first/);
  const forged = await call(claimUrl, { method: 'POST', token: pop.client_token, body: '{}',
    headers: { 'Fedleaf-Device': 'A'.repeat(43) } });
  assert.equal(forged.status, 403);

  const leaf = new ProtocolClient({ server: server.url, token: pop.client_token });
  await leaf.enrollDevice(pop.id);
  await leaf.enrollDevice(pop.id);
  await assert.rejects(leaf.enrollDevice(pop.id),
    { status: 429, message: /^enrollments_per_token_per_hour: this client token enrolled 2 devices/ });
  assert.equal((await admin.listDevices(pop.id)).devices.length, 2);
  // No task was leased to any of them.
  assert.doesNotMatch(await admin.metrics(), /fedleaf_claims_total\{outcome="task"\} [1-9]/);

  const open = await admin.createPopulation({ plan: PLAN, seed: 2, rounds: 1, clients_per_round: 1 });
  await assert.rejects(new ProtocolClient({ server: server.url, token: open.client_token }).enrollDevice(open.id),
    { status: 409, message: /no privacy section/ });
}));
