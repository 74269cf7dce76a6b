// fedleaf-admin (js_bindings/bin/fedleaf-admin.js) against a real fedleaf-server: create from a
// plan file and a spec file, ls, status (screen and JSON), a model download byte-equal to the
// server's GET, status --watch of a population fedleaf-simulate trains to its end, then its
// final model exported with --tfjs, loaded by TF.js and predicting as fedleaf does. Bad input:
// no admin token, a wrong one (403: message, exit 1, the token never printed), a plan the server
// refuses (400 naming the field), an unknown population (404), bad flags and configuration (exit
// 2, nothing sent); where the URL and token come from (flag > environment > config file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { ADMIN_TOKEN, REPO_ROOT, adminClient, tempDir, withServer } from '../server/server_harness.mjs';
import { textPlan } from '../e2e/browser/executor_cases.mjs';
import { COMMANDS } from '../../js_bindings/src/node/admin_cli.js';
import { progressBar, statusScreen, watchStatus } from '../../js_bindings/src/node/admin_status.js';
import { ProtocolError } from '../../js_bindings/src/protocol/protocol_error.js';
import { formatTable } from '../../js_bindings/src/node/admin_list.js';
import { createExecutor } from '../../js_bindings/src/index.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../js_bindings/bin');
const ADMIN = path.join(bin, 'fedleaf-admin.js');
// mean, not the default sqrtn: the TF.js export needs a combiner TF.js has.
const PLAN = textPlan({ vocab: 4096, dim: 4, batchSize: 64, bias: false, combiner: 'mean' });

// Runs fedleaf-admin with only `env` beyond PATH (HOME: an empty folder, so no config file of
// the machine is read); resolves to {code, stdout, stderr} whatever the exit status.
function admin(args, env = {}) {
  const home = tempDir('fedleaf-admin-home-');
  return new Promise((resolve) => {
    execFile('node', [ADMIN, ...args], { env: { PATH: process.env.PATH, HOME: home, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }));
  });
}

// A file holding `text` with `mode`.
function file(dir, name, text, mode = 0o600) {
  const at = path.join(dir, name);
  writeFileSync(at, text);
  chmodSync(at, mode);
  return at;
}

async function closedPort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

test('--help lists every command of the table, and each command\'s --help every flag it takes', async () => {
  const top = await admin(['--help']);
  assert.equal(top.code, 0);
  assert.match(top.stdout, /^usage: fedleaf-admin COMMAND/);
  const listed = top.stdout.split('\n').filter((line) => /^ {2}[a-z]/.test(line)).map((line) => line.trim().split(/\s+/)[0]);
  assert.deepEqual(listed, Object.keys(COMMANDS));
  assert.match(top.stdout, /FEDLEAF_SERVER, FEDLEAF_ADMIN_TOKEN\), the\s+config\s+file/);
  for (const name of Object.keys(COMMANDS)) {
    const { code, stdout, stderr } = await admin([name, '--help']);
    assert.equal(code, 0);
    assert.equal(stderr, '');
    const lines = stdout.split('\n');
    assert.equal(lines[0], `usage: fedleaf-admin ${COMMANDS[name].usage}`);
    const described = lines.filter((line) => /^ {2}-/.test(line)).map((line) => /^ {2}(?:-h, )?--([a-z-]+)/.exec(line)[1]);
    assert.deepEqual(described, [...Object.keys(COMMANDS[name].flags), 'server', 'admin-token-file', 'help'], name);
    assert.match(stdout, /exit status: 0 done .* 1 the server refused .* 2 bad flags/s);
    assert.ok(lines.every((line) => line.length <= 100 || line.startsWith('usage: ')), `${name}: lines fit 100 columns`);
  }
});

test('create from a plan and a spec file, ls, status and a model download equal to the server\'s', () => withServer(async (server) => {
  const dir = tempDir('fedleaf-admin-');
  const tokenFile = file(dir, 'admin.token', `${ADMIN_TOKEN}\n`);
  const planFile = file(dir, 'plan.json', JSON.stringify(PLAN), 0o644);
  const specFile = file(dir, 'spec.json', JSON.stringify({ id: 'spam', rounds: 2, clients_per_round: 2, seed: 3 }), 0o644);
  const tokenOut = path.join(dir, 'spam.client-token');
  const auth = ['--server', server.url, '--admin-token-file', tokenFile];

  const created = await admin(['create', ...auth, '--plan', planFile, '--spec', specFile, '--rounds', '3',
    '--token-out', tokenOut]);
  assert.equal(created.code, 0, created.stderr);
  assert.equal(created.stdout, 'spam\n');
  const clientToken = readFileSync(tokenOut, 'utf8').trim();
  assert.equal(statSync(tokenOut).mode & 0o777, 0o600);
  assert.ok(!created.stdout.includes(clientToken) && !created.stderr.includes(clientToken), 'the token is not echoed');
  assert.ok(!created.stderr.includes(ADMIN_TOKEN));
  const client = adminClient(server.url);
  const status = await client.status('spam');
  assert.equal(status.rounds, 3, '--rounds overrides the spec file');
  assert.equal(status.clients_per_round, 2);
  assert.equal((await client.claim('spam', { token: clientToken })).kind, 'task', 'the written token is the client token');

  // The token in the environment and the server in the config file; --show-token prints it.
  const config = file(dir, 'admin.json', JSON.stringify({ server: server.url }), 0o644);
  const shown = await admin(['create', '--plan', planFile, '--id', 'other', '--seed', '1', '--show-token'],
    { FEDLEAF_ADMIN_TOKEN: ADMIN_TOKEN, FEDLEAF_ADMIN_CONFIG: config });
  assert.equal(shown.code, 0, shown.stderr);
  const [id, token] = shown.stdout.trim().split('\n');
  assert.equal(id, 'other');
  assert.equal((await client.claim('other', { token })).kind, 'task');

  const ls = await admin(['ls', ...auth]);
  assert.equal(ls.code, 0, ls.stderr);
  const [header, ...rows] = ls.stdout.trim().split('\n').map((line) => line.split(/\s+/));
  assert.deepEqual(header, ['ID', 'STATE', 'ROUND', 'CLIENTS', 'MODE']);
  assert.deepEqual(rows.sort((a, b) => a[0].localeCompare(b[0])), [['other', 'running', '0/1', '1', 'synchronous'],
    ['spam', 'running', '0/3', '2', 'synchronous']]);
  const lsJson = await admin(['ls', ...auth, '--json']);
  assert.deepEqual(JSON.parse(lsJson.stdout), await client.listPopulations());

  const screen = await admin(['status', 'spam', '--server', server.url]);
  assert.equal(screen.code, 0, screen.stderr);
  assert.match(screen.stdout, /^population spam: running, round 0 of 3 \(synchronous\)\n\[-{30}\] 0\/3 rounds\n/);
  assert.match(screen.stdout, /round 0 open \d+ s, deadline in \d+ min: 0 of 2 reports \(min 2\), 2 train tasks/);
  assert.match(screen.stdout, /rejections: none\nmodel: round 0, etag [0-9a-f]{64}\n$/);
  const json = await admin(['status', 'spam', '--json'], { FEDLEAF_SERVER: server.url });
  assert.deepEqual(JSON.parse(json.stdout), await client.status('spam'));

  const out = path.join(dir, 'spam.safetensors');
  const model = await admin(['model', 'spam', '--server', server.url, '--out', out]);
  assert.equal(model.code, 0, model.stderr);
  const fromServer = await client.downloadModel(client.modelUrl('spam', 0), { token: false });
  assert.deepEqual(new Uint8Array(readFileSync(out)), fromServer.bytes);
  const unpublished = await admin(['model', 'spam', '--server', server.url, '--round', '1', '--out', out]);
  assert.equal(unpublished.code, 1);
  assert.match(unpublished.stderr, /^fedleaf-admin: HTTP 404 not_found: .*round 1/);
}));

const requireFromRoot = createRequire(path.join(REPO_ROOT, 'package.json'));

test('status --watch follows a population fedleaf-simulate trains to its end; model --tfjs exports the final model',
  { timeout: 170_000 }, () => withServer(async (server) => {
    const dir = tempDir('fedleaf-admin-');
    const env = { FEDLEAF_SERVER: server.url, FEDLEAF_ADMIN_TOKEN: ADMIN_TOKEN };
    const planFile = file(dir, 'plan.json', JSON.stringify(PLAN));
    const created = await admin(['create', '--plan', planFile, '--id', 'watched', '--rounds', '2', '--clients-per-round',
      '2', '--seed', '5', '--show-token'], env);
    assert.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim().split('\n')[1];

    const watcher = spawn('node', [ADMIN, 'status', 'watched', '--watch', '0.2'],
      { env: { PATH: process.env.PATH, HOME: dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let watched = '';
    watcher.stdout.on('data', (d) => { watched += d; });
    watcher.stderr.on('data', (d) => { watched += d; });
    const watchEnded = new Promise((resolve) => watcher.on('exit', resolve));
    const simulate = await new Promise((resolve) => execFile('node', [path.join(bin, 'fedleaf-simulate.js'),
      '--server', server.url, '--population', 'watched', `--token=${token}`, '--clients', '2'],
    (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr })));
    assert.equal(simulate.code, 0, simulate.stderr);
    assert.equal(await watchEnded, 0, watched);
    assert.match(watched, /population watched: running, round 0 of 2/);
    const screens = watched.trim().split('\n\n');
    const last = screens[screens.length - 1];
    assert.match(last, /^population watched: finished, round 2 of 2 \(synchronous\)\n\[#{30}\] 2\/2 rounds\n/);
    assert.match(last, /round 1 closed in \d+ s: 2 reports, \d+ examples, train loss \d\.\d{4}, accuracy \d\.\d{4}/);
    assert.ok(!watched.includes(ADMIN_TOKEN) && !watched.includes(token));

    const tfjsDir = path.join(dir, 'tfjs');
    const exported = await admin(['model', 'watched', '--tfjs', tfjsDir, '--out', path.join(dir, 'final.safetensors')], env);
    assert.equal(exported.code, 0, exported.stderr);
    const finalModel = new Uint8Array(readFileSync(path.join(dir, 'final.safetensors')));
    const client = adminClient(server.url);
    assert.deepEqual(finalModel, (await client.downloadModel(client.modelUrl('watched', 2), { token: false })).bytes,
      'the default round of a finished population is its final model');

    const tf = await import(pathToFileURL(requireFromRoot.resolve('@tensorflow/tfjs')).href);
    await tf.setBackend('cpu');
    const modelJson = JSON.parse(readFileSync(path.join(tfjsDir, 'model.json'), 'utf8'));
    const files = { 'model.json': JSON.stringify(modelJson), 'weights.bin': readFileSync(path.join(tfjsDir, 'weights.bin')) };
    const fetchFunc = async (url) => new Response(files[path.basename(new URL(url).pathname)] ?? null);
    const loaded = await tf.loadLayersModel(tf.io.http('http://files.test/m/model.json', { fetchFunc }));
    const executor = await createExecutor();
    const texts = ['win a free prize now click here', 'notes from the design review attached'];
    const dataset = executor.datasetFromTexts(texts, [1, 0], PLAN);
    const fedleaf = Array.from(executor.predict(PLAN, finalModel, dataset));
    dataset.delete();
    texts.forEach((text, i) => {
      const one = executor.datasetFromTexts([text], [0], PLAN);
      const ids = Array.from(one.distinctIds());
      one.delete();
      const [p0, p1] = tf.tidy(() => loaded.predict(tf.tensor2d([ids], [1, ids.length], 'int32')).dataSync());
      assert.ok(Math.abs(p0 - fedleaf[2 * i]) < 1e-5 && Math.abs(p1 - fedleaf[2 * i + 1]) < 1e-5,
        `TF.js ${[p0, p1]} vs fedleaf ${fedleaf.slice(2 * i, 2 * i + 2)}`);
    });
  }));

test('bad tokens, plans, populations and flags: the server\'s message or the usage, the right exit status, no token printed',
  () => withServer(async (server) => {
    const dir = tempDir('fedleaf-admin-');
    const planFile = file(dir, 'plan.json', JSON.stringify(PLAN));
    const url = ['--server', server.url];
    const nowhere = await closedPort();

    const noToken = await admin(['ls', ...url]);
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /no admin token: give --admin-token-file FILE, set FEDLEAF_ADMIN_TOKEN, or put/);

    const wrong = 'not-the-admin-token-0123456789';
    for (const [args, env, source] of [
      [['--admin-token-file', file(dir, 'wrong.token', wrong)], {}, /admin token from --admin-token-file .*wrong\.token/],
      [[], { FEDLEAF_ADMIN_TOKEN: wrong }, /admin token from FEDLEAF_ADMIN_TOKEN/],
    ]) {
      const refused = await admin(['create', ...url, ...args, '--plan', planFile, '--seed', '1'], env);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /^fedleaf-admin: HTTP 403 forbidden: /);
      assert.match(refused.stderr, source);
      assert.ok(!refused.stderr.includes(wrong) && !refused.stdout.includes(wrong), 'the token is not printed');
    }
    const badHeader = await admin(['ls', ...url], { FEDLEAF_ADMIN_TOKEN: 'has a space in it 0123456789' });
    assert.equal(badHeader.code, 2);
    assert.match(badHeader.stderr, /the admin token in FEDLEAF_ADMIN_TOKEN is not 1 to 4096 visible ASCII characters/);
    assert.ok(!badHeader.stderr.includes('has a space'));

    const env = { FEDLEAF_ADMIN_TOKEN: ADMIN_TOKEN };
    const tokenOut = path.join(dir, 'never.token');
    const badPlan = await admin(['create', ...url, '--plan', file(dir, 'bad.json', JSON.stringify({ ...PLAN,
      train: { ...PLAN.train, epochs: 'three' } })), '--seed', '1', '--token-out', tokenOut], env);
    assert.equal(badPlan.code, 1);
    assert.match(badPlan.stderr, /^fedleaf-admin: HTTP 400 invalid_input: .*epochs/);
    assert.ok(!existsSync(tokenOut), 'a refused create leaves no token file');
    const unknownField = await admin(['create', ...url, '--spec', file(dir, 'typo.json', JSON.stringify({ plan: PLAN,
      seed: 1, clients_per_rnd: 2 }))], env);
    assert.equal(unknownField.code, 1);
    assert.match(unknownField.stderr, /HTTP 400 invalid_input: .*clients_per_rnd/);

    for (const args of [['status', 'nope'], ['model', 'nope', '--out', path.join(dir, 'x')]]) {
      const missing = await admin([...args, ...url]);
      assert.equal(missing.code, 1, args.join(' '));
      assert.match(missing.stderr, /^fedleaf-admin: HTTP 404 not_found: .*nope/);
    }
    const unreachable = await admin(['status', 'p', '--server', nowhere]);
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, new RegExp(`cannot reach ${nowhere}: fetch failed \\(connect ECONNREFUSED`));

    const existing = file(dir, 'existing.token', '');
    // Independent runs, at once: each starts a node process.
    await Promise.all([
      [['bogus'], new RegExp(`unknown command 'bogus' \\(commands: ${Object.keys(COMMANDS).join(', ')}\\)`)],
      [[], /missing COMMAND/],
      [['ls', ...url, '--bogus'], /Unknown option '--bogus'/],
      [['status', ...url], /missing POPULATION/],
      [['status', 'a', 'b', ...url], /unexpected argument 'b'/],
      [['status', 'p', ...url, '--watch=soon'], /--watch must be a number of seconds > 0, got 'soon'/],
      [['status', 'p', ...url, '--watch', '--json'], /--watch and --json: give one/],
      [['model', 'p', ...url], /model needs --out FILE or --tfjs DIR/],
      [['model', 'p', ...url, '--round=-1', '--out', 'x'], /--round must be an integer >= 0, got '-1'/],
      [['ls', '--server', 'ftp://127.0.0.1:21'], /--server must be an http: or https: URL, got 'ftp:\/\/127\.0\.0\.1:21'/],
      [['create', ...url, '--rounds', '2'], /no plan: give --plan FILE/],
      [['create', ...url, '--plan', planFile, '--rounds', '0'], /--rounds must be an integer >= 1, got '0'/],
      [['create', ...url, '--plan', planFile, '--lease-s', 'long'], /--lease-s must be a number of seconds > 0, got 'long'/],
      [['create', ...url, '--plan', path.join(dir, 'absent.json')], /cannot read the plan file .*absent\.json: ENOENT/],
      [['create', ...url, '--plan', file(dir, 'broken.json', '{"model": ')], /the plan file .*broken\.json is not JSON/],
      [['create', ...url, '--plan', planFile, '--seed', '1', '--token-out', existing], /--token-out .*: the file exists/],
    ].map(async ([args, message]) => {
      const bad = await admin(args, env);
      assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
      assert.match(bad.stderr, message);
      assert.match(bad.stderr, /\nusage: fedleaf-admin /);
    }));
    assert.deepEqual((await adminClient(server.url).listPopulations()).populations, [], 'nothing was created');
  }));

test('the server URL and token come from the flag, else the environment, else a config file others cannot change',
  () => withServer(async (server) => {
    const dir = tempDir('fedleaf-admin-');
    const nowhere = await closedPort();
    const right = file(dir, 'right.token', ADMIN_TOKEN);
    const config = (object, mode = 0o600) => file(dir, `config-${Math.random().toString(36).slice(2)}.json`,
      JSON.stringify(object), mode);

    // Server: flag > FEDLEAF_SERVER > config.
    const fromConfig = { FEDLEAF_ADMIN_CONFIG: config({ server: server.url, admin_token_file: right }) };
    assert.equal((await admin(['ls'], fromConfig)).code, 0);
    const envBeatsConfig = await admin(['ls'], { ...fromConfig, FEDLEAF_SERVER: nowhere });
    assert.match(envBeatsConfig.stderr, new RegExp(`cannot reach ${nowhere}`));
    assert.equal((await admin(['ls', '--server', server.url], { ...fromConfig, FEDLEAF_SERVER: nowhere })).code, 0);
    // Token: flag > FEDLEAF_ADMIN_TOKEN > config.
    const wrongEnv = { ...fromConfig, FEDLEAF_ADMIN_TOKEN: 'wrong-token-0123456789abcdef' };
    assert.match((await admin(['ls'], wrongEnv)).stderr, /HTTP 403 forbidden: .*\(admin token from FEDLEAF_ADMIN_TOKEN\)/);
    assert.equal((await admin(['ls', '--admin-token-file', right], wrongEnv)).code, 0);
    // The config file's own token, relative token files, and the default place (~/.config).
    assert.equal((await admin(['ls'], { FEDLEAF_ADMIN_CONFIG: config({ server: server.url, admin_token: ADMIN_TOKEN }) }))
      .code, 0);
    assert.equal((await admin(['ls'], { FEDLEAF_ADMIN_CONFIG: config({ server: server.url, admin_token_file: 'right.token' }) }))
      .code, 0);
    const xdg = path.join(dir, 'xdg');
    mkdirSync(path.join(xdg, 'fedleaf'), { recursive: true });
    file(path.join(xdg, 'fedleaf'), 'admin.json', JSON.stringify({ server: server.url, admin_token_file: right }));
    assert.equal((await admin(['ls'], { XDG_CONFIG_HOME: xdg })).code, 0);

    for (const [made, message] of [
      [config({ server: server.url, admin_token: ADMIN_TOKEN }, 0o644), /holds admin_token and is readable by group or others \(mode 0644\): chmod 600/],
      [config({ server: server.url, admin_token_file: right }, 0o664), /is writable by group or others \(mode 0664\): chmod go-w/],
      [config({ server: server.url, token: ADMIN_TOKEN }), /unknown key 'token' \(keys: server, admin_token_file, admin_token\)/],
      [config({ server: server.url, admin_token: ADMIN_TOKEN, admin_token_file: right }), /gives both admin_token and admin_token_file/],
      [file(dir, 'broken.json', `{"admin_token": "${ADMIN_TOKEN}" "server"}`), /is not JSON \(position \d+\)/],
      [path.join(dir, 'absent.json'), /cannot read the config file .*absent\.json \(FEDLEAF_ADMIN_CONFIG\): ENOENT/],
    ]) {
      const refused = await admin(['ls'], { FEDLEAF_ADMIN_CONFIG: made });
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, message);
      assert.ok(!refused.stderr.includes(ADMIN_TOKEN), 'the token is not printed');
    }
    // status needs no token: a config file without one is enough.
    assert.equal((await admin(['status', 'x'], { FEDLEAF_ADMIN_CONFIG: config({ server: server.url }) })).code, 1);
  }));

test('statusScreen, progressBar and formatTable', () => {
  assert.equal(progressBar(3, 10, 'rounds', 10), '[###-------] 3/10 rounds');
  assert.equal(progressBar(0, 0, 'rounds', 4), '[----] 0/0 rounds');
  assert.deepEqual(formatTable(['ID', 'ROUND'], [['a', '1/10'], ['long-name', '10/10']]),
    ['ID         ROUND', 'a           1/10', 'long-name  10/10']);
  const buffered = {
    id: 'b', state: 'running', mode: 'buffered', round: 4, rounds: 8, reports: 1, tasks_out: 3, min_reports: 1,
    buffered: { buffer_size: 2, concurrency: 4, max_staleness: 3, staleness_weight: { weight: 'constant' } },
    eval_tasks_per_round: 0, model_etag: 'e', rejections: { stale: 2 },
    history: [
      { round: 3, status: 'closed', reports: 2, examples: 40, mean_train_loss: 0.5, mean_train_accuracy: 0.75,
        duration_s: 3, eval: { reports: 0 }, robust: { clipped: { 'emb/weight': 1 }, capped: 0, withheld_rows: {} },
        staleness: { mean: 0.5, max: 1, counts: { 0: 1, 1: 1 } } },
      { round: 4, status: 'open', reports: 1, started_at: 100, deadline: 700 },
    ],
  };
  assert.deepEqual(statusScreen(buffered, 110), [
    'population b: running, version 4 of 8 (buffered: 2 reports a version, concurrency 4, max staleness 3)',
    '[###############---------------] 4/8 versions',
    'version 4 open 10 s, deadline in 10 min: 1 of 2 reports in the buffer, 3 tasks out of 4',
    'version 3 closed in 3 s: 2 reports, 40 examples, train loss 0.5000, accuracy 0.7500',
    '  robust: clipped reports emb/weight 1',
    '  staleness: mean 0.50, max 1 (0 1, 1 1)',
    'rejections: stale 2',
    'model: version 4, etag e',
  ]);
  const privacy = { mechanism: 'dp_ftrl_tree', unit: 'device', noise_multiplier: 7, clip_norm: 0.5, delta: 1e-10,
    max_epsilon: 9, max_participations: 6, min_separation: 313, rounds_released: 3, epsilon_spent: 1.23456,
    epsilon_at_end: 8.898 };
  const finished = { id: 'p', state: 'finished', round: 3, rounds: 10, reports: 0, clients_per_round: 2, min_reports: 2,
    train_tasks_per_round: 2, eval_tasks_per_round: 0, model_etag: 'm', rejections: {}, history: [], privacy,
    finish_reason: 'the next round would spend ε 9.1 > max_epsilon 9' };
  assert.deepEqual(statusScreen(finished, 0).slice(0, 4), [
    'population p: finished, round 3 of 10 (synchronous)',
    'privacy: ε 1.235 spent of max 9 (8.898 at the end) at δ 1e-10, per device: noise 7 × clip 0.5, ≤ 6 rounds, 313 apart',
    'finished early: the next round would spend ε 9.1 > max_epsilon 9',
    '[#########---------------------] 3/10 rounds',
  ]);
});

test('watchStatus redraws in place on a terminal, polls through 503s and network errors, stops at a 404', async () => {
  const running = { id: 'w', state: 'running', round: 0, rounds: 1, reports: 0, clients_per_round: 1, min_reports: 1,
    train_tasks_per_round: 1, eval_tasks_per_round: 0, model_etag: 'e', rejections: {},
    history: [{ round: 0, status: 'open', reports: 0, started_at: 0, deadline: 1e12 }] };  // a line wider than 80
  const finished = { ...running, state: 'finished', round: 1,
    history: [{ round: 0, status: 'closed', reports: 1, examples: 9, mean_train_loss: 0.25, mean_train_accuracy: 1,
      duration_s: 1, eval: { reports: 0 }, robust: {} }, { round: 1, status: 'closed', reports: 0 }] };
  const unavailable = new ProtocolError({ status: 503, code: 'unavailable', message: 'store down', url: 'u' });
  const answers = [running, unavailable, new TypeError('fetch failed'), running, finished];
  const client = { status: async () => { const next = answers.shift(); if (next instanceof Error) throw next; return next; } };
  let written = '';
  const code = await watchStatus({ client, population: 'w', intervalS: 0.001, out: assert.fail,
    tty: { write: (text) => { written += text; }, columns: 80 } });
  assert.equal(code, 0);
  // ESC [ n F (up n lines) ESC [ J (clear below): the redraw.
  const redraw = new RegExp(`${String.fromCharCode(27)}\\[\\d+F${String.fromCharCode(27)}\\[J`);
  const frames = written.split(redraw);
  assert.equal(frames.length, 5, 'each poll redraws the screen in place');
  assert.match(frames[1], /\(no status: HTTP 503: store down; polling again every 0\.001 s\)\n$/);
  assert.match(frames[4], /^population w: finished, round 1 of 1 \(synchronous\)\n\[#{30}\] 1\/1 rounds\nround 0 closed/);
  const widest = Math.max(...frames.flatMap((frame) => frame.split('\n')).map((line) => line.length));
  assert.equal(widest, 79, 'lines cut to the terminal');

  const lines = [];
  const gone = { status: async () => { throw new ProtocolError({ status: 404, code: 'not_found', message: 'no w', url: 'u' }); } };
  await assert.rejects(watchStatus({ client: gone, population: 'w', intervalS: 0.001, out: (l) => lines.push(l) }), /no w/);
  assert.deepEqual(lines, []);
});
