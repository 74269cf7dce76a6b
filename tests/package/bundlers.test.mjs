// The installed tarball (tests/package/consumer_site.mjs) under the bundlers web developers use,
// each page training in a module Worker with the SIMD and the baseline build to the same bytes:
//   - webpack 5 (its Node API, production mode): no warning, no path of the build machine in the
//     bundle, the .wasm emitted as assets; and createExecutor({distUrl}) loading from a folder
//     the page serves;
//   - `vite build` and the dev server of Vite 6, with the two settings the package README gives
//     (worker.format 'es', optimizeDeps.exclude ['fedleaf']; without them the build stops and the
//     dev server answers the .wasm URL with its page), and of Vite 8, which needs none;
//   - headless Firefox (firefox-esr, puppeteer-core) on the webpack and the Vite builds.
// Needs js_bindings/dist (scripts/build.sh), /usr/bin/chromium, /usr/bin/firefox-esr and the
// repository's tools (webpack, vite6, vite8, playwright-core, puppeteer-core: package.json).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import { REPO_ROOT } from '../server/server_harness.mjs';
import { CHROMIUM_FLAGS, checkTrained, installPackage, resultOf, serveStatic, writeSite } from './consumer_site.mjs';

const requireTool = createRequire(path.join(REPO_ROOT, 'package.json'));
const { chromium } = requireTool('playwright-core');
const puppeteer = requireTool('puppeteer-core');
const webpack = requireTool('webpack');

let dir;
let app;
let browser;
const sites = {};  // label → folder of a built site, for Firefox

before(async () => {
  ({ dir, app } = await installPackage('fedleaf-bundlers-'));
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS });
});

after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

function filesUnder(folder) {
  return readdirSync(folder, { recursive: true }).map(String);
}

// Serves `folder` and checks that the page at `page` trains with both builds, loading only the
// site's own files; returns the paths asked for.
async function trainsIn(folder, label, page = '/index.html') {
  const server = await serveStatic(folder);
  try {
    checkTrained(await resultOf(browser, `${server.url}${page}`), label);
    assert.ok(server.requested.every((p) => !p.includes('node_modules')), `${label}: ${server.requested.join(' ')}`);
    return [...new Set(server.requested)];
  } finally {
    server.close();
  }
}

function webpackBuild(sources, out) {
  const config = {
    mode: 'production', context: sources, entry: './page.js', devtool: false,
    output: { path: out, filename: 'page.js', clean: true },
    performance: { hints: false },  // the size hint every 1 MB .wasm gets: the app's to set
    optimization: { minimize: false },  // terser takes most of the build's time and changes no URL
  };
  return new Promise((resolve, reject) => {
    webpack(config, (error, stats) => (error ? reject(error) : resolve(stats.toJson({ all: false, errors: true, warnings: true }))));
  });
}

const INDEX_HTML = '<!doctype html><meta charset="utf-8"><title>fedleaf</title><link rel="icon" href="data:,">' +
  '<script type="module" src="./page.js"></script>';

test('webpack 5: the page builds without warnings, emits both .wasm files and trains from them', async () => {
  const sources = path.join(app, 'webpack-src');
  writeSite(sources, { fedleafUrl: 'fedleaf' });
  const out = path.join(app, 'webpack-out');
  const stats = await webpackBuild(sources, out);
  assert.deepEqual([stats.errors, stats.warnings], [[], []], JSON.stringify(stats));
  writeFileSync(path.join(out, 'index.html'), INDEX_HTML);
  const files = filesUnder(out);
  assert.equal(files.filter((f) => f.endsWith('.wasm')).length, 2, files.join(' '));
  for (const file of files.filter((f) => f.endsWith('.js'))) {
    const text = readFileSync(path.join(out, file), 'utf8');
    assert.ok(!text.includes('file://') && !text.includes(app), `${file} holds a path of the build machine`);
  }
  const requested = await trainsIn(out, 'webpack');
  assert.equal(requested.filter((p) => p.endsWith('.wasm')).length, 2, requested.join(' '));
  sites.webpack = out;
});

test('webpack 5: createExecutor({distUrl}) loads the glue and the .wasm from the folder it names', async () => {
  const sources = path.join(app, 'webpack-dist-src');
  writeSite(sources, { fedleafUrl: 'fedleaf', distUrl: 'fl' });  // relative: to the page
  const out = path.join(app, 'webpack-dist-out');
  const stats = await webpackBuild(sources, out);
  assert.deepEqual([stats.errors, stats.warnings], [[], []], JSON.stringify(stats));
  writeFileSync(path.join(out, 'index.html'), INDEX_HTML);
  cpSync(path.join(app, 'node_modules', 'fedleaf', 'dist'), path.join(out, 'fl'), { recursive: true });
  const requested = await trainsIn(out, 'webpack distUrl');
  for (const file of ['fedleaf_core.js', 'fedleaf_core.wasm', 'fedleaf_core_simd.js', 'fedleaf_core_simd.wasm']) {
    assert.ok(requested.includes(`/fl/${file}`), `${file} from distUrl: ${requested.join(' ')}`);
  }
  assert.deepEqual(requested.filter((p) => p.endsWith('.wasm') && !p.startsWith('/fl/')), [], 'no other .wasm');
});

// The settings js_bindings/README.md gives for Vite 6; Vite 8 needs none.
const VITE6_SETTINGS = { worker: { format: 'es' }, optimizeDeps: { exclude: ['fedleaf'] } };
const VITES = [['Vite 6', 'vite6', VITE6_SETTINGS], ['Vite 8', 'vite8', {}]];

// Vite's options for the site in app/<name>-src (written on first use), `settings` the app's own.
function viteOptions(name, settings, cache = name) {
  const root = path.join(app, `${name}-src`);
  if (!existsSync(path.join(root, 'index.html'))) {
    writeSite(root, { fedleafUrl: 'fedleaf' });
    writeFileSync(path.join(root, 'index.html'), INDEX_HTML);
  }
  return { root, configFile: false, logLevel: 'silent', cacheDir: path.join(app, `.vite-${cache}`), ...settings };
}

// The dev server over the site, listening on a free port; resolves to what `body(url)` returns.
async function withViteDevServer(name, options, body) {
  const server = await requireTool(name).createServer({ ...options, server: { host: '127.0.0.1', port: 0, hmr: false } });
  await server.listen();
  try {
    return await body(new URL('index.html', server.resolvedUrls.local[0]).href);
  } finally {
    await server.close();
  }
}

for (const [label, name, settings] of VITES) {
  const given = Object.keys(settings).length ? 'with the README\'s settings' : 'without settings';
  test(`${label} ${given}: vite build emits both .wasm files and the page trains from them`, async () => {
    const out = path.join(app, `${name}-out`);
    await requireTool(name).build({ ...viteOptions(name, settings), build: { outDir: out, emptyOutDir: true } });
    assert.equal(filesUnder(out).filter((f) => f.endsWith('.wasm')).length, 2, filesUnder(out).join(' '));
    const requested = await trainsIn(out, `${label} build`);
    assert.equal(requested.filter((p) => p.endsWith('.wasm')).length, 2, requested.join(' '));
    sites[label] = out;
  });

  test(`${label} ${given}: the page trains under the dev server`, () =>
    withViteDevServer(name, viteOptions(name, settings), async (url) => checkTrained(await resultOf(browser, url), `${label} dev`)));
}

test('Vite 6 without settings: vite build stops at worker.format, as the README says', async () => {
  await assert.rejects(requireTool('vite6').build({ ...viteOptions('vite6', {}, 'vite6-bare'),
    build: { outDir: path.join(app, 'vite6-bare-out') } }), /Invalid value "iife" for option "worker.format"/);
});

test('Vite 6 without optimizeDeps.exclude: the dev server answers the pre-bundled copy\'s .wasm URL with its page, and the loader says so', () =>
  withViteDevServer('vite6', viteOptions('vite6', { worker: { format: 'es' } }, 'vite6-bare'), async (url) => {
    const { result } = await resultOf(browser, url);
    assert.match(result.error ?? '', /^fedleaf: cannot load http:\/\/127\.0\.0\.1:\d+\/\S*\.vite-vite6-bare\/dist\/fedleaf_core_simd\.wasm: it is not WebAssembly \(text\/html, \d+ bytes starting 3c 21 64 6f: "<!doctype html>"/);
  }));

test('Firefox: the webpack and Vite builds train in a module Worker with both builds', { timeout: 120_000 }, async () => {
  const firefox = await puppeteer.launch({ browser: 'firefox', executablePath: '/usr/bin/firefox-esr', headless: true });
  try {
    for (const label of ['webpack', 'Vite 8']) {
      assert.ok(sites[label], `${label}: built by the test above`);
      const server = await serveStatic(sites[label]);
      try {
        checkTrained(await resultOf(firefox, `${server.url}/index.html`, { puppeteer: true }), `Firefox ${label}`);
      } finally {
        server.close();
      }
    }
  } finally {
    await firefox.close();
  }
});
