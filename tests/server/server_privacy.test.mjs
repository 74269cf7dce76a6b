// A private population over HTTP against the real fedleaf-server: created with a privacy
// section, its status and /metrics show ε, a round publishes noise on every row, and broken
// privacy specs get 400 naming the field. Each report comes from a device enrolled for it
// (POST .../devices, its credential in Fedleaf-Device): a private population admits nothing else.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, call, createPopulation, trainResult, decodeSafetensors, ADMIN_TOKEN, PLAN, initialModel,
} from './server_harness.mjs';

let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

const PRIVACY = {
  mechanism: 'dp_ftrl_tree', noise_multiplier: 1.5, clip_norm: 0.5, delta: 1e-6, max_epsilon: 12,
  max_participations: 2, min_separation: 1,
};

function create(spec) {
  return call(`${server.url}/v1/populations`, {
    method: 'POST', token: ADMIN_TOKEN, headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ plan: PLAN, initial_model_b64: initialModel().toString('base64'), ...spec }),
  });
}

test('a private population shows its guarantee and ε, and its round noises every row', async () => {
  const population = await createPopulation(server.url, { id: 'private', rounds: 3, clients_per_round: 2,
                                                          privacy: PRIVACY });
  const before = (await call(`${server.url}/v1/populations/private`)).json;
  assert.equal(before.rounds, 3);
  assert.deepEqual(Object.keys(before.privacy).sort(), [
    'clip_norm', 'delta', 'enrollments_per_token_per_hour', 'epsilon_at_end', 'epsilon_by_round', 'epsilon_spent',
    'guarantee',
    'max_epsilon', 'max_participations', 'mechanism', 'min_separation', 'noise_multiplier',
    'rounds_released', 'unit']);
  assert.equal(before.privacy.mechanism, 'dp_ftrl_tree');
  assert.equal(before.privacy.unit, 'device');
  assert.equal(before.privacy.rounds_released, 0);
  assert.equal(before.privacy.epsilon_spent, 0);
  assert.ok(before.privacy.epsilon_at_end > 0 && before.privacy.epsilon_at_end <= 12);
  assert.match(before.privacy.guarantee, /^Any one device's participation changes the probability of any published model by at most a factor e\^ε \(ε = 0\.00 so far, \d+\.\d\d at the end\), except with probability δ = 1e-06\.$/);
  assert.doesNotMatch(JSON.stringify(before), /secret/);

  for (const u of [{ rows: [1], rowValue: 0.5, denseValue: 0.25, numExamples: 3 },
                   { rows: [2], rowValue: -1, denseValue: 1, numExamples: 1 }]) {
    const device = (await call(`${server.url}/v1/populations/private/devices`,
                               { method: 'POST', token: population.client_token })).json;
    const task = (await call(`${server.url}/v1/populations/private/tasks:claim`,
                             { method: 'POST', token: population.client_token,
                               headers: { 'Fedleaf-Device': device.credential } })).json;
    const put = await call(`${server.url}${task.upload_url}`, { method: 'PUT', token: task.lease_token,
                                                               body: trainResult(u) });
    assert.equal(put.status, 201);
  }
  const after = (await call(`${server.url}/v1/populations/private`)).json;
  assert.equal(after.round, 1);
  assert.equal(after.privacy.rounds_released, 1);
  assert.ok(after.privacy.epsilon_spent > 0 && after.privacy.epsilon_spent <= after.privacy.epsilon_at_end);
  assert.deepEqual(after.privacy.epsilon_by_round, [after.privacy.epsilon_spent]);
  // Row 7 of emb/weight was sent by no leaf: it moved all the same (noise on every row).
  const model0 = decodeSafetensors((await call(`${server.url}/v1/populations/private/rounds/0/model`)).bytes);
  const model1 = decodeSafetensors((await call(`${server.url}/v1/populations/private/rounds/1/model`)).bytes);
  const emb0 = model0.tensors['emb/weight'].data;
  const emb1 = model1.tensors['emb/weight'].data;
  assert.notEqual(emb1[14], emb0[14]);
  assert.deepEqual(Array.from(model1.tensors['out/bias'].data), Array.from(model0.tensors['out/bias'].data));

  const metrics = (await call(`${server.url}/metrics`)).bytes.toString();
  const gauge = (name) => Number(metrics.match(new RegExp(`^${name}\\{population="private"\\} (\\S+)$`, 'm'))?.[1]);
  assert.equal(gauge('fedleaf_privacy_epsilon_spent'), after.privacy.epsilon_spent);
  assert.equal(gauge('fedleaf_privacy_epsilon_planned'), after.privacy.epsilon_at_end);
});

test('a private population without rounds runs as many as its budget allows', async () => {
  const created = await create({ id: 'budgeted', clients_per_round: 2, privacy: PRIVACY });
  assert.equal(created.status, 201);
  const s = (await call(`${server.url}/v1/populations/budgeted`)).json;
  assert.ok(s.rounds >= 1);
  assert.ok(s.privacy.epsilon_at_end <= PRIVACY.max_epsilon);
  const more = await create({ id: 'too-long', clients_per_round: 2, rounds: s.rounds + 1, privacy: PRIVACY });
  assert.equal(more.status, 400);
  assert.match(more.json.error.message,
               new RegExp(`^population\\.rounds: ${s.rounds + 1} rounds would reach epsilon [0-9.]+, past population\\.privacy\\.max_epsilon 12`));
});

test('broken privacy specs get 400 naming the field and create nothing', async () => {
  const cases = [
    [{ ...PRIVACY, noise_multiplier: 0 }, /^population\.privacy\.noise_multiplier: must be a finite number > 0/],
    [{ ...PRIVACY, clip_norm: -1 }, /^population\.privacy\.clip_norm: must be a finite number > 0/],
    [{ ...PRIVACY, delta: 0.5 }, /^population\.privacy\.delta: must be a finite number > 0 and <= 0\.1/],
    [{ ...PRIVACY, max_epsilon: undefined }, /^population\.privacy\.max_epsilon: required/],
    [{ ...PRIVACY, max_participations: 0 }, /^population\.privacy\.max_participations: must be an integer in \[1, /],
    [{ ...PRIVACY, min_separation: -1 }, /^population\.privacy\.min_separation: must be an integer in \[0, /],
    [{ ...PRIVACY, mechanism: 'laplace' }, /^population\.privacy\.mechanism: must be "dp_ftrl_tree"/],
    [{ ...PRIVACY, typo: 1 }, /^population\.privacy: unknown field 'typo'/],
  ];
  for (const [privacy, message] of cases) {
    const refused = await create({ id: 'refused', rounds: 2, clients_per_round: 2, privacy });
    assert.equal(refused.status, 400, JSON.stringify(privacy));
    assert.equal(refused.json.error.code, 'invalid_input');
    assert.match(refused.json.error.message, message);
  }
  const buffered = await create({ id: 'refused', mode: 'buffered', buffer_size: 2, privacy: PRIVACY });
  assert.equal(buffered.status, 400);
  assert.match(buffered.json.error.message, /^population\.privacy: buffered private populations are not supported/);
  assert.equal((await call(`${server.url}/v1/populations/refused`)).status, 404);
});
