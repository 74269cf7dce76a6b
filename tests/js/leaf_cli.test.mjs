// The Node leaf CLIs against a real fedleaf-server: fedleaf-leaf.js and fedleaf-simulate.js finish
// a population; bad options exit with status 2 and the usage line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { withServer, adminClient } from '../server/server_harness.mjs';
import { textPlan } from '../e2e/browser/executor_cases.mjs';

const run = promisify(execFile);
const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../js_bindings/bin');

const PLAN = textPlan({ vocab: 4096, dim: 4, batchSize: 64, bias: false });

async function population(server, clients) {
  return adminClient(server.url).createPopulation({ plan: PLAN, seed: 2, rounds: 1, clients_per_round: clients });
}

test('fedleaf-leaf.js trains its shard and stops when the population finishes', () => withServer(async (server) => {
  const pop = await population(server, 1);
  const { stdout } = await run('node', [path.join(bin, 'fedleaf-leaf.js'), '--server', server.url,
    '--population', pop.id, `--token=${pop.client_token}`, '--shard', '3/16', '--non-iid']);
  assert.match(stdout, /shard 3\/16 \(non-IID\): \d+ train emails/);
  assert.match(stdout, /uploaded .* → 201/);
  assert.match(stdout, /fedleaf-leaf: 1 uploaded, 0 dropped \(finished\)/);
}));

test('fedleaf-simulate.js runs N leaves in worker threads until the population finishes', () => withServer(async (server) => {
  const pop = await population(server, 3);
  const { stdout } = await run('node', [path.join(bin, 'fedleaf-simulate.js'), '--server', server.url,
    '--population', pop.id, `--token=${pop.client_token}`, '--clients', '3']);
  assert.match(stdout, /fedleaf-simulate: 3 leaves stopped: 3 uploads, 0 dropped/);
  const status = await adminClient(server.url).status(pop.id);
  assert.equal(status.state, 'finished');
}));

test('bad options exit with status 2 and the usage line', async () => {
  for (const [script, args, message] of [
    ['fedleaf-leaf.js', ['--server', 'http://x'], /missing --population/],
    ['fedleaf-leaf.js', ['--server', 'http://x', '--population', 'p', '--token', 't', '--shard', '5/4'], /--shard must be I\/N/],
    ['fedleaf-leaf.js', ['--server', 'http://x', '--population', 'p', '--token', 't', '--dataset', 'mnist'], /unknown --dataset 'mnist'/],
    ['fedleaf-simulate.js', ['--server', 'http://x', '--population', 'p', '--token', 't', '--clients', '0'], /--clients must be an integer >= 1/],
    ['fedleaf-simulate.js', ['--bogus'], /Unknown option '--bogus'/],
  ]) {
    await assert.rejects(run('node', [path.join(bin, script), ...args]), (e) => {
      assert.equal(e.code, 2, `${script} ${args.join(' ')}`);
      assert.match(e.stderr, message);
      assert.match(e.stderr, /usage: /);
      return true;
    });
  }
});
