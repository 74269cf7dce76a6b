// Chaos: leaf processes SIGKILLed at random points of a multi-round run (right after a claim,
// while training, while uploading: a kill lands wherever the process is) and replaced by fresh
// processes. Every round must still complete through lease expiry, and every accepted report must
// be counted exactly once: the server's 201 answers add up to the reports of its rounds. The same
// churn runs against a synchronous population and a buffered one (FedBuff: every version must
// be published with exactly buffer_size reports, a killed leaf's slot coming back when its lease
// ends).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startServer, adminClient } from '../server/server_harness.mjs';
import { seededRandom } from '../../js_bindings/src/node/seeded_random.js';
import { textPlan } from '../e2e/browser/executor_cases.mjs';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../js_bindings/bin');
const ROUNDS = 4;
const CLIENTS_PER_ROUND = 3;
const BUFFER_SIZE = 3;
const LEAVES = 5;
const MAX_KILLS = 6;

// Runs LEAVES leaf processes against a population created with `spec`, killing some at random
// points and replacing each killed one with a fresh process on the same shard, until the
// population finishes (or 150 s pass). Returns the final status, the kills and the server's count
// of 201 answers.
async function churnedRun(seed, spec) {
  const next = seededRandom(seed);
  const server = await startServer();
  const processes = new Set();
  try {
    const client = adminClient(server.url);
    const pop = await client.createPopulation({
      plan: textPlan({ vocab: 4096, dim: 4, batchSize: 32 }), seed: 3, rounds: ROUNDS, lease_s: 2, ...spec,
    });

    let kills = 0;
    let finished = false;
    const spawnLeaf = (shard) => {
      const child = spawn('node', [path.join(bin, 'fedleaf-leaf.js'), '--server', server.url,
        '--population', pop.id, `--token=${pop.client_token}`, '--shard', `${shard}/${LEAVES}`],
      { stdio: ['ignore', 'pipe', 'pipe'] });
      processes.add(child);
      let buffered = '';
      child.stdout.on('data', (chunk) => {
        buffered += chunk;
        let newline;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          // Kill some leaves right after a claim (a lease held, nothing uploaded) and others a
          // random moment later (training, uploading, or claiming ahead).
          if (/claimed task \d+ \(round \d+, train\)/.test(line) && kills < MAX_KILLS && next() < 0.5) {
            kills += 1;
            const delayMs = next() < 0.5 ? 0 : Math.floor(next() * 400);
            setTimeout(() => child.kill('SIGKILL'), delayMs);
          }
        }
      });
      child.on('exit', () => {
        processes.delete(child);
        if (!finished) spawnLeaf(shard);  // a new device with the same data takes its place
      });
    };
    for (let shard = 0; shard < LEAVES; shard++) spawnLeaf(shard);

    const deadline = Date.now() + 150_000;
    let status;
    do {
      await new Promise((r) => setTimeout(r, 250));
      status = await client.status(pop.id);
    } while (status.state !== 'finished' && Date.now() < deadline);
    finished = true;
    const metrics = await client.metrics();
    const accepted = Number(/fedleaf_uploads_total\{status="201"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    return { status, kills, accepted };
  } finally {
    for (const child of processes) child.kill('SIGKILL');
    await server.stop();
  }
}

test('leaves killed at random points cost only leases: every round closes, every 201 counted once', async () => {
  const seed = Number(process.env.FEDLEAF_CHAOS_SEED ?? Date.now() % 100000);
  const { status, kills, accepted } = await churnedRun(seed, {
    clients_per_round: CLIENTS_PER_ROUND, over_selection: 2, round_deadline_s: 600,
  });
  assert.equal(status.state, 'finished', `seed ${seed}: population did not finish (round ${status.round})`);
  assert.ok(kills >= 1, `seed ${seed}: no leaf was killed`);
  const trainRounds = status.history.filter((h) => h.round < ROUNDS);
  assert.equal(trainRounds.length, ROUNDS);
  for (const h of trainRounds) assert.equal(h.reports, CLIENTS_PER_ROUND, `seed ${seed}: round ${h.round}`);
  assert.equal(accepted, ROUNDS * CLIENTS_PER_ROUND, `seed ${seed}: 201 answers vs reports counted`);
});

test('buffered population: leaves killed at random points cost only their slots; every version is published, every 201 folded once', async () => {
  const seed = Number(process.env.FEDLEAF_CHAOS_SEED ?? Date.now() % 100000);
  const { status, kills, accepted } = await churnedRun(seed, {
    mode: 'buffered', buffer_size: BUFFER_SIZE, concurrency: LEAVES, max_staleness: 1000,
  });
  assert.equal(status.state, 'finished', `seed ${seed}: population did not finish (version ${status.round})`);
  assert.ok(kills >= 1, `seed ${seed}: no leaf was killed`);
  const versions = status.history.filter((h) => h.round < ROUNDS);
  assert.deepEqual(versions.map((h) => h.round), [...Array(ROUNDS).keys()], `seed ${seed}: versions published`);
  for (const h of versions) assert.equal(h.reports, BUFFER_SIZE, `seed ${seed}: version ${h.round}`);
  // Every 201 is in exactly one version: none lost after its answer, none folded twice.
  const folded = versions.reduce((n, h) => n + h.reports, 0);
  assert.equal(accepted, folded, `seed ${seed}: 201 answers vs reports folded into versions`);
});
