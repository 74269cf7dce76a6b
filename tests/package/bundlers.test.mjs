// The installed tarball (tests/package/consumer_site.mjs) under the bundlers web developers use,
// each page training in a module Worker with the SIMD and the baseline build to the same bytes:
//   - webpack 5 (its Node API, production mode): no warning, no path of the build machine in the
//     bundle, the .wasm emitted as assets; and createExecutor({distUrl}) loading from a folder
//     the page serves.
// Needs js_bindings/dist (scripts/build.sh), /usr/bin/chromium and the repository's tools
// (webpack, playwright-core: package.json).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import { REPO_ROOT } from '../server/server_harness.mjs';
import { CHROMIUM_FLAGS, checkTrained, installPackage, resultOf, serveStatic, writeSite } from './consumer_site.mjs';

const requireTool = createRequire(path.join(REPO_ROOT, 'package.json'));
const { chromium } = requireTool('playwright-core');
const webpack = requireTool('webpack');

let dir;
let app;
let browser;

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
