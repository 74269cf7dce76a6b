// The Node leaf CLIs against a real fedleaf-server: fedleaf-leaf.js and fedleaf-simulate.js finish
// a population (fedleaf-leaf.js also one of the wide & deep records plan); bad options (flags, a shard with no emails) exit with status 2 and the usage line
// before any claim; SIGINT / SIGTERM exit 130 / 143 after the clean shutdown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { withServer, adminClient } from '../server/server_harness.mjs';
import { textPlan } from '../e2e/browser/executor_cases.mjs';
import { helpText } from '../../js_bindings/src/node/leaf_cli.js';
import { smallWideDeepPlan } from './small_wide_deep_plan.mjs';

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

test('fedleaf-leaf.js trains its emails as records for a wide & deep plan', () => withServer(async (server) => {
  const pop = await adminClient(server.url).createPopulation({ plan: smallWideDeepPlan(), seed: 2, rounds: 1,
    clients_per_round: 1 });
  const { stdout } = await run('node', [path.join(bin, 'fedleaf-leaf.js'), '--server', server.url,
    '--population', pop.id, `--token=${pop.client_token}`, '--shard', '3/16', '--non-iid']);
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

// Every flag a CLI takes, as --help must describe it.
const FLAGS = {
  'fedleaf-leaf.js': ['--server URL', '--population P', '--token T', '--dataset NAME', '--shard I/N', '--device-file PATH', '--non-iid',
    '--prefetch K', '--max-tasks N', '--baseline', '-h, --help'],
  'fedleaf-simulate.js': ['--server URL', '--population P', '--token T', '--clients N', '--slow-fraction F',
    '--slow-factor X', '--churn P', '--churn-away A', '--seed N', '--non-iid', '--prefetch K', '--max-tasks N',
    '--baseline', '-h, --help'],
};

test('--help prints the usage, what the command does, every flag with its meaning, and the exit statuses', async () => {
  for (const [script, flags] of Object.entries(FLAGS)) {
    for (const option of ['--help', '-h']) {
      const { stdout, stderr } = await run('node', [path.join(bin, script), option]);
      assert.equal(stderr, '');
      const lines = stdout.split('\n');
      assert.match(lines[0], new RegExp(`^usage: ${script} `));
      const described = lines.filter((line) => /^ {2}-/.test(line)).map((line) => /^ {2}(\S.*?)(?: {2,}|$)/.exec(line)[1]);
      assert.deepEqual(described, flags, `${script} ${option}`);
      for (const flag of flags) {
        const at = lines.findIndex((line) => line.startsWith(`  ${flag} `) || line === `  ${flag}`);
        const text = `${lines[at].slice(22)} ${lines[at + 1].startsWith(' '.repeat(22)) ? lines[at + 1].trim() : ''}`;
        assert.ok(text.trim().split(' ').length >= 4, `${script}: ${flag} is described: '${text.trim()}'`);
      }
      assert.match(stdout, /exit status: 0 finished .* 2 bad flags .* 130 \/ 143/s);
      assert.ok(lines.every((line) => line.length <= 100 || line.startsWith('usage: ')), 'lines fit 100 columns');
    }
  }
});

test('helpText refuses a flag without help text', () => {
  assert.throws(() => helpText({ usage: 'usage: x', description: 'x', flags: { quiet: { type: 'boolean' } } }),
    /flag --quiet has no help text/);
  assert.equal(helpText({ usage: 'usage: x', description: 'Does x.', flags: { quiet: { type: 'boolean', help: 'say less' } } })
    .split('\n')[5], '  --quiet             say less');
});

// A URL where nothing listens (a port just freed): a leaf that got past its checks would retry
// there forever, so these tests end only if the CLI refuses at start.
async function closedPort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

test('bad options exit with status 2 and the usage line', { timeout: 120_000 }, async () => {
  const nowhere = await closedPort();
  const leaf = ['--server', nowhere, '--population', 'p', '--token', 't'];
  for (const [script, args, message] of [
    ['fedleaf-leaf.js', ['--server', 'http://x'], /missing --population/],
    ['fedleaf-leaf.js', ['--server', 'http://x', '--population', 'p', '--token', 't', '--shard', '5/4'], /--shard must be I\/N/],
    ['fedleaf-leaf.js', ['--server', 'http://x', '--population', 'p', '--token', 't', '--dataset', 'mnist'], /unknown --dataset 'mnist'/],
    ['fedleaf-simulate.js', ['--server', 'http://x', '--population', 'p', '--token', 't', '--clients', '0'], /--clients must be an integer >= 1/],
    ['fedleaf-simulate.js', ['--bogus'], /Unknown option '--bogus'/],
    // heterogeneous leaves: each bad value names its flag, before any leaf starts
    ['fedleaf-simulate.js', [...leaf, '--slow-fraction', '2'], /--slow-fraction: expected a number in \[0, 1\], got 2/],
    ['fedleaf-simulate.js', [...leaf, '--slow-factor', '0.5'], /--slow-factor: expected a number >= 1, got 0\.5/],
    ['fedleaf-simulate.js', [...leaf, '--churn', 'often'], /--churn: expected a number in \[0, 1\], got NaN/],
    ['fedleaf-simulate.js', [...leaf, '--seed', '1.5'], /--seed: expected an integer, got 1\.5/],
    // --server: an http: or https: URL, checked before anything loads
    ['fedleaf-leaf.js', ['--server', 'ftp://127.0.0.1:21', '--population', 'p', '--token', 't'],
      /--server must be an http: or https: URL, got 'ftp:\/\/127\.0\.0\.1:21'/],
    ['fedleaf-leaf.js', ['--server', 'not-a-url', '--population', 'p', '--token', 't'],
      /--server must be an http: or https: URL, got 'not-a-url'/],
    ['fedleaf-leaf.js', ['--server', 'http//127.0.0.1:8080', '--population', 'p', '--token', 't'],
      /--server must be an http: or https: URL, got 'http\/\/127\.0\.0\.1:8080'/],
    ['fedleaf-simulate.js', ['--server', 'file:///tmp/x', '--population', 'p', '--token', 't'],
      /--server must be an http: or https: URL, got 'file:\/\/\/tmp\/x'/],
    // integer flags: decimal digits only
    ['fedleaf-leaf.js', [...leaf, '--prefetch='], /--prefetch must be an integer >= 0, got ''/],
    ['fedleaf-leaf.js', [...leaf, '--prefetch', '0x2'], /--prefetch must be an integer >= 0, got '0x2'/],
    ['fedleaf-leaf.js', [...leaf, '--prefetch', ' 1'], /--prefetch must be an integer >= 0, got ' 1'/],
    ['fedleaf-leaf.js', [...leaf, '--max-tasks= 1'], /--max-tasks must be an integer >= 1, got ' 1'/],
    ['fedleaf-leaf.js', [...leaf, '--max-tasks', '1e1'], /--max-tasks must be an integer >= 1, got '1e1'/],
    ['fedleaf-simulate.js', [...leaf, '--prefetch='], /--prefetch must be an integer >= 0, got ''/],
    ['fedleaf-simulate.js', [...leaf, '--clients', '2.0'], /--clients must be an integer >= 1, got '2.0'/],
    ['fedleaf-simulate.js', [...leaf, '--clients='], /--clients must be an integer >= 1, got ''/],
    // a shard with no emails: refused before any claim, naming the shard and the limit
    ['fedleaf-leaf.js', [...leaf, '--shard', '5/100000'],
      /shard 5\/100000 of the SpamAssassin train split has no emails: the split has (\d+), so it supports at most \1 shards/],
    ['fedleaf-leaf.js', [...leaf, '--shard', '0/50000', '--non-iid'],
      /shard 0\/50000 \(non-IID\) of the SpamAssassin train split has no emails: the split has \d+/],
    ['fedleaf-simulate.js', [...leaf, '--clients', '100000'],
      /--clients 100000: 100000 shards of the SpamAssassin train split \((\d+) emails\): at most \1 shards can each hold an email/],
  ]) {
    await assert.rejects(run('node', [path.join(bin, script), ...args], { timeout: 60_000 }), (e) => {
      assert.equal(e.code, 2, `${script} ${args.join(' ')}`);
      assert.match(e.stderr, message);
      assert.match(e.stderr, /usage: /);
      return true;
    });
  }
});

// Starts a CLI, sends `signal` once it has printed `ready`, and resolves to its exit code and output.
function interrupt(script, args, ready, signal) {
  return new Promise((resolve, reject) => {
    const child = spawn('node', [path.join(bin, script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let sent = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (!sent && ready.test(stdout)) {
        sent = true;
        child.kill(signal);
      }
    });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.on('error', reject);
    child.on('exit', (code, killedBy) => {
      clearTimeout(timer);
      resolve({ code, killedBy, stdout, stderr });
    });
  });
}

test('SIGINT and SIGTERM stop the CLIs cleanly and exit 130 and 143, not 0', { timeout: 240_000 }, async () => {
  const nowhere = await closedPort();
  const common = ['--server', nowhere, '--population', 'p', '--token', 't'];
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]]) {
    const leaf = await interrupt('fedleaf-leaf.js', common, /train emails/, signal);
    assert.equal(leaf.code, code, `fedleaf-leaf ${signal}: ${leaf.stdout}${leaf.stderr}`);
    assert.match(leaf.stdout, /fedleaf-leaf: 0 uploaded, 0 dropped \(aborted\)/, 'the clean shutdown ran');
  }
  const simulate = await interrupt('fedleaf-simulate.js', [...common, '--clients', '2'], /leaves: /, 'SIGINT');
  assert.equal(simulate.code, 130, `fedleaf-simulate: ${simulate.stdout}${simulate.stderr}`);
  assert.match(simulate.stdout, /stopping leaves \(Ctrl-C\)/);
  assert.match(simulate.stdout, /fedleaf-simulate: 2 leaves stopped: 0 uploads, 0 dropped/);
});
