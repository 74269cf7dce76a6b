#!/usr/bin/env node
// scripts/screenshot_demo.mjs — docs/web_demo.png from the demo as it is: stages the web demo
// (scripts/stage_web.mjs), starts fedleaf-server on it, creates a population of the demo's plan
// (scripts/demo/spam_wide_deep_plan.json, what scripts/demo.sh runs), lets three tabs of Debian's
// Chromium train it for two rounds, classifies a pasted email in the first tab and screenshots
// that tab's page (1440 px wide, as README.md shows it).
//
//   node scripts/screenshot_demo.mjs [--out docs/web_demo.png] [--views DIR]
//
// --views DIR also writes the demo page and the operator dashboard at 1280 and 390 px wide, in
// Chromium and in Firefox (firefox-esr through puppeteer-core, as tests/e2e/firefox.test.mjs
// drives it): DIR/{chromium,firefox}_{demo,dashboard}_{1280,390}.png, to look at the layouts.
//
// Needs build/fedleaf-server (FEDLEAF_BUILD_DIR), the wasm module in js_bindings/dist,
// /usr/bin/chromium and node_modules/playwright-core (and for --views /usr/bin/firefox-esr and
// node_modules/puppeteer-core). The server listens on 127.0.0.1 (its default); it, the browsers and the
// temporary folder are removed however the script ends.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';

import { ProtocolClient } from '../js_bindings/src/protocol/protocol_client.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const serverBin = path.resolve(root, process.env.FEDLEAF_BUILD_DIR ?? 'build', 'fedleaf-server');
const requireHere = createRequire(path.join(root, 'package.json'));

const ADMIN_TOKEN = 'screenshot-admin-token-0123456789';
const TABS = 3;
const SHARDS = 8;
const ROUNDS = 2;
const PLAN = JSON.parse(readFileSync(path.join(root, 'scripts', 'demo', 'spam_wide_deep_plan.json'), 'utf8'));
const PASTED_EMAIL = ['From: Prize Team <claims@lucky-prizes.biz>', 'Reply-To: winner@payout-center.info',
  'Subject: URGENT winner! Claim your FREE prize money now', 'Content-Type: text/html', '',
  '<html>CLICK HERE http://lucky-prizes.biz/claim limited offer!!!</html>'].join('\n');
const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
const WIDTHS = [1280, 390];

const { values: options } = parseArgs({ options: {
  out: { type: 'string', default: path.join(root, 'docs', 'web_demo.png') },
  views: { type: 'string' },
} });

async function startServer(dir, webRoot) {
  const tokenFile = path.join(dir, 'admin.token');
  writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`);
  const proc = spawn(serverBin, ['--db', path.join(dir, 'tasks.db'), '--port', '0',
    '--web-root', webRoot, '--admin-token-file', tokenFile, '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal)));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) resolve(m[1]);
    });
    exited.then((status) => reject(new Error(`fedleaf-server exited (${status}) before listening: ${stderr}`)));
  });
  return { url, proc, exited };
}

// Runs in the page: whether the chart on canvas #id has at least n points.
const chartHasPoints = ({ id, n }) => {
  const chart = globalThis.Chart?.getChart(document.getElementById(id));
  return (chart ? chart.data.datasets[0].data.filter((v) => v != null).length : 0) >= n;
};

// The dashboard of population `id` in a Playwright or Puppeteer page, connected with the token.
async function showDashboard(page, origin, id) {
  await page.goto(`${origin}/dashboard.html`);
  await page.waitForSelector('#admin-token');
  await page.type('#admin-token', ADMIN_TOKEN);
  await page.click('#connect');
  // Expressions as text: Playwright and Puppeteer pass a function's arguments differently.
  await page.waitForFunction(`[...document.querySelectorAll('#populations button')]
    .some((b) => b.textContent === ${JSON.stringify(id)})`);
  await page.evaluate((population) => [...document.querySelectorAll('#populations button')]
    .find((b) => b.textContent === population).click(), id);
  await page.waitForFunction(`document.querySelectorAll('#rounds tbody tr').length >= ${ROUNDS}`);
}

// The demo page (the population finished) and the dashboard at each width, in Firefox.
async function firefoxViews(origin, created, dir) {
  const puppeteer = requireHere('puppeteer-core');
  const browser = await puppeteer.launch({ browser: 'firefox', executablePath: '/usr/bin/firefox-esr', headless: true,
    protocolTimeout: 120_000 });
  try {
    for (const width of WIDTHS) {
      const page = await browser.newPage();
      page.setDefaultTimeout(60_000);
      await page.setViewport({ width, height: 900 });
      await page.goto(`${origin}/?population=${created.id}&token=${encodeURIComponent(created.client_token)}&shard=0`);
      await page.waitForSelector('#join:not([disabled])');
      await page.screenshot({ path: path.join(dir, `firefox_demo_${width}.png`), fullPage: true });
      await showDashboard(page, origin, created.id);
      await page.screenshot({ path: path.join(dir, `firefox_dashboard_${width}.png`), fullPage: true });
      await page.close();
    }
  } finally {
    await browser.close();
  }
}

async function main() {
  const { chromium } = requireHere('playwright-core');
  const dir = mkdtempSync(path.join(tmpdir(), 'fedleaf-screenshot-'));
  const webRoot = path.join(dir, 'web');
  let server;
  let context;
  try {
    await promisify(execFile)(process.execPath, [path.join(root, 'scripts', 'stage_web.mjs'), webRoot,
      '--clients', String(SHARDS)], { timeout: 120_000 });
    server = await startServer(dir, webRoot);
    const origin = server.url;
    const admin = new ProtocolClient({ server: origin, token: ADMIN_TOKEN });
    const created = await admin.createPopulation({ id: 'spam', plan: PLAN, seed: 1, rounds: ROUNDS,
      clients_per_round: TABS, min_reports: TABS, round_deadline_s: 300, lease_s: 60 });
    context = await chromium.launchPersistentContext(path.join(dir, 'profile'), {
      executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS,
      viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1,
    });
    context.setDefaultTimeout(120_000);
    const errors = [];
    context.on('weberror', (error) => errors.push(`page error: ${error.error().message}`));
    context.on('page', (page) => page.on('console', (message) => {
      if (message.type() === 'error') errors.push(`console error: ${message.text()}`);
    }));
    process.on('exit', () => { if (errors.length) console.error(errors.join('\n')); });
    const pages = [];
    for (let i = 0; i < TABS; i++) {
      const page = i === 0 ? context.pages()[0] ?? await context.newPage() : await context.newPage();
      await page.goto(`${origin}/?population=${created.id}&token=${encodeURIComponent(created.client_token)}&shard=${i}`);
      await page.locator('#join:not([disabled])').click();
      pages.push(page);
    }
    for (const page of pages) {
      await page.waitForFunction(() => window.fedleafDemo.state.status?.state === 'finished', null, { timeout: 300_000 });
      await page.waitForFunction(chartHasPoints, { id: 'accuracy-chart', n: ROUNDS });
    }
    const first = pages[0];
    await first.bringToFront();
    await first.fill('#try-text', PASTED_EMAIL);
    await first.click('#try-button');
    await first.locator('#verdict:not([hidden])').waitFor();
    await first.evaluate(() => {
      document.getElementById('try-text').scrollTop = 0;
      window.scrollTo(0, 0);
    });
    mkdirSync(path.dirname(options.out), { recursive: true });
    await first.screenshot({ path: options.out, fullPage: true });
    console.log(`screenshot_demo: wrote ${path.relative(process.cwd(), options.out)}`);

    if (options.views) {
      mkdirSync(options.views, { recursive: true });
      const dashboard = await context.newPage();
      await showDashboard(dashboard, origin, created.id);
      for (const width of WIDTHS) {
        for (const [name, page] of [['demo', first], ['dashboard', dashboard]]) {
          await page.setViewportSize({ width, height: 900 });
          await page.evaluate(() => window.scrollTo(0, 0));
          await page.screenshot({ path: path.join(options.views, `chromium_${name}_${width}.png`), fullPage: true });
        }
      }
      await firefoxViews(origin, created, options.views);
      console.log(`screenshot_demo: wrote the views to ${options.views}`);
    }
  } finally {
    await context?.close().catch(() => {});
    if (server && server.proc.exitCode === null) {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
