// What the consumer tests share (tests/package/consumer.test.mjs, bundlers.test.mjs): the packed
// tarball installed offline into an empty project, a page and its module Worker written as a web
// developer would, a static file server that records what was asked, and the check that a page
// trained with the SIMD and the baseline build to the same update bytes.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { REPO_ROOT } from '../server/server_harness.mjs';
import { textPlan } from '../e2e/browser/executor_cases.mjs';

export const run = promisify(execFile);
export const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
export const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'js_bindings', 'package.json'), 'utf8'));

export const PLAN = textPlan({ vocab: 4096, dim: 4, optimizer: { type: 'adam', learning_rate: 0.05 }, epochs: 3, batchSize: 4 });
export const TEXTS = ['win a free prize now', 'cheap meds online buy now', 'claim your cash prize',
  'meeting moved to thursday', 'notes from the design review', 'lunch with the team tomorrow'];
export const LABELS = [1, 1, 1, 0, 0, 0];

/**
 * `npm pack` of js_bindings/ installed offline into a new project.
 * @returns {Promise<{dir: string, app: string, tarball: object}>} dir: the temporary folder (the
 *   caller removes it), app: the project, tarball: npm pack's JSON for the tarball
 */
export async function installPackage(prefix) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir],
    { cwd: path.join(REPO_ROOT, 'js_bindings') });
  const [tarball] = JSON.parse(stdout);
  const app = path.join(dir, 'app');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(dir, tarball.filename)], { cwd: app });
  return { dir, app, tarball };
}

// The page and its worker, written as a consumer would. `fedleafUrl` is what the worker imports:
// the installed file's path (no bundler: a worker has no import map) or 'fedleaf' (bundled);
// `distUrl`, when given, is passed to createExecutor.
export function writeSite(folder, { fedleafUrl, distUrl }) {
  mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, 'page.js'), `
import { VERSION, wasmSimdSupported } from 'fedleaf';
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
worker.onmessage = ({ data }) => { window.result = { page: { VERSION, simd: wasmSimdSupported() }, ...data }; };
worker.onerror = (event) => { window.result = { error: event.message ?? 'worker failed to load' }; };
worker.postMessage({ plan: ${JSON.stringify(PLAN)}, texts: ${JSON.stringify(TEXTS)}, labels: ${JSON.stringify(LABELS)} });
`);
  const options = distUrl === undefined ? '{ simd }' : `{ simd, distUrl: ${JSON.stringify(distUrl)} }`;
  writeFileSync(path.join(folder, 'worker.js'), `
import { createExecutor } from '${fedleafUrl}';
self.onmessage = async ({ data: { plan, texts, labels } }) => {
  try {
    const builds = [];
    for (const simd of ['auto', false]) {  // the SIMD build where the engine has SIMD, then the baseline
      const executor = await createExecutor(${options});
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

// A static file server over `root` that records the paths asked for. A missing file is a 404, or
// what fallback(pathname) returns when it returns a page (as dev servers answer unknown paths).
export async function serveStatic(root, { fallback = () => undefined } = {}) {
  const requested = [];
  const server = createServer((req, res) => {
    const pathname = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    requested.push(pathname);
    const file = path.join(root, path.normalize(pathname));
    if (!file.startsWith(root) || !existsSync(file)) {
      const page = fallback(pathname);
      if (page === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'Content-Type': 'text/html' }).end(page);
      return;
    }
    res.writeHead(200, { 'Content-Type': CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, requested, close: () => server.close() };
}

/**
 * Opens `url` and waits for the page's window.result; `browser` is playwright-core's (Chromium) or
 * puppeteer-core's (Firefox), whose waitForFunction take their options in another place.
 */
export async function resultOf(browser, url, { puppeteer = false } = {}) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  await page.goto(url);
  const done = () => window.result !== undefined;
  if (puppeteer) await page.waitForFunction(done, { timeout: 60_000 });
  else await page.waitForFunction(done, null, { timeout: 60_000 });
  const result = await page.evaluate(() => window.result);
  await page.close();
  return { result, errors };
}

export function checkTrained({ result, errors }, label) {
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
