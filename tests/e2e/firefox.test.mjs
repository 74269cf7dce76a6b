// End to end in headless Firefox (Debian's firefox-esr, driven by puppeteer-core over WebDriver
// BiDi): fedleaf-server serves the staged demo site; three tabs join one population and train it
// for two rounds in their Web Workers (tab 2 on its own emails from a file); the shared executor
// cases pass in the page, with SIMD and with the baseline fallback. tests/e2e/web_demo.test.mjs
// does the same in Chromium (and checks the dashboard and the requests' origins).
//
// Needs FEDLEAF_BUILD_DIR/fedleaf-server (default build/), the wasm module in js_bindings/dist,
// /usr/bin/firefox-esr and node_modules/puppeteer-core (both installed by scripts/setup.sh).
// Screenshots go to FEDLEAF_BUILD_DIR/e2e/firefox_*.png. Every step has a time limit; the server,
// the browser and the temporary folders are removed whatever happens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';

import { textPlan } from './browser/executor_cases.mjs';
import { assertDemoTabs, describeTab, writeOwnEmailsFile } from './demo_tabs.mjs';
import { assertExecutorPage } from './executor_page.mjs';
import { REPO_ROOT, SERVER_BIN, adminClient, startServer, tempDir } from '../server/server_harness.mjs';

const firefoxPath = '/usr/bin/firefox-esr';
const screenshotDir = path.join(path.dirname(SERVER_BIN), 'e2e');
const puppeteer = createRequire(path.join(REPO_ROOT, 'package.json'))('puppeteer-core');
const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'js_bindings', 'package.json'), 'utf8'));

const TABS = 3;
const SHARDS = 8;
const ROUNDS = 2;
const PLAN = textPlan({ vocab: 262144, dim: 8, optimizer: { type: 'adam', learning_rate: 0.01 } });

// Runs in the page: whether the chart on canvas #id has at least n points in its first dataset.
const chartHasPoints = (id, n) => {
  const chart = globalThis.Chart?.getChart(document.getElementById(id));
  return (chart ? chart.data.datasets[0].data.filter((v) => v != null).length : 0) >= n;
};

test('three tabs train a population for two rounds and the executor cases pass in headless Firefox',
  { timeout: 240_000 }, async (t) => {
    assert.ok(existsSync(SERVER_BIN), `${SERVER_BIN} is missing: build the fedleaf-server target`);
    assert.ok(existsSync(firefoxPath), `${firefoxPath} is missing: run scripts/setup.sh (apt-get install firefox-esr)`);
    const dir = tempDir('fedleaf-firefox-');
    const webRoot = path.join(dir, 'web');
    let server;
    let browser;
    t.after(async () => {
      await browser?.close().catch(() => {});
      if (server && server.proc.exitCode === null) {
        const timer = setTimeout(() => server.kill(), 5000);
        await server.stop();
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    });

    await promisify(execFile)(process.execPath, [path.join(REPO_ROOT, 'scripts', 'stage_web.mjs'), webRoot,
      '--clients', String(SHARDS)], { timeout: 60_000 });
    server = await startServer({ dir, args: ['--web-root', webRoot] });
    const origin = server.url;
    const admin = adminClient(origin);
    const { id, client_token: clientToken } = await admin.createPopulation({ id: 'spam-firefox', plan: PLAN, seed: 1,
      rounds: ROUNDS, clients_per_round: TABS, min_reports: TABS, round_deadline_s: 120, lease_s: 20 });

    browser = await puppeteer.launch({ browser: 'firefox', executablePath: firefoxPath, headless: true,
      defaultViewport: { width: 1440, height: 1000 }, protocolTimeout: 120_000 });
    const errors = [];
    const watch = (page) => {
      page.setDefaultTimeout(60_000);
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(`console error in ${page.url()}: ${message.text()}`);
      });
      page.on('pageerror', (error) => errors.push(`page error in ${page.url()}: ${error.message}`));
      return page;
    };

    const { ownFile, shard2 } = writeOwnEmailsFile(webRoot, dir, SHARDS);
    const pages = [];
    for (let i = 0; i < TABS; i++) {
      const page = watch(await browser.newPage());
      await page.goto(`${origin}/?population=${id}&token=${encodeURIComponent(clientToken)}&shard=${i}`);
      pages.push(page);
    }
    await pages[2].click('input[name="data-kind"][value="own"]');
    const fileInput = await pages[2].waitForSelector('#own-file');
    await fileInput.uploadFile(ownFile);
    for (const page of pages) {
      await page.waitForSelector('#join:not([disabled])');
      await page.click('#join');
    }
    for (const [i, page] of pages.entries()) {
      try {
        await page.waitForFunction(() => window.fedleafDemo.state.status?.state === 'finished', { timeout: 150_000 });
        await page.waitForFunction(chartHasPoints, { timeout: 30_000 }, 'accuracy-chart', ROUNDS);
      } catch (error) {
        throw await describeTab(page, i, error, errors, server.stderr);
      }
    }
    await assertDemoTabs(pages, { rounds: ROUNDS, ownEmails: shard2.length });
    const status = await admin.status(id);
    assert.equal(status.state, 'finished');
    assert.deepEqual(status.history.filter((r) => r.round < ROUNDS).map((r) => r.reports), [TABS, TABS]);

    // Input goes to the tab in front (the others are background tabs to Firefox).
    const first = pages[0];
    await first.bringToFront();
    await first.waitForSelector('#try-button:not([disabled])');
    await first.type('#try-text', 'Subject: URGENT winner! Claim your FREE prize money now, click here!!!');
    await first.click('#try-button');
    await first.waitForSelector('#verdict:not([hidden])', { timeout: 90_000 }).catch(async (error) => {
      const note = await first.$eval('#try-note', (e) => e.textContent).catch(() => '');
      throw new Error(`${error.message}; try-note: ${note}; errors: ${errors.join('\n')}`);
    });
    assert.match(await first.$eval('#verdict-round', (e) => e.textContent), new RegExp(`model after round ${ROUNDS}`));
    mkdirSync(screenshotDir, { recursive: true });
    await first.evaluate(() => window.scrollTo(0, 0));
    await first.screenshot({ path: path.join(screenshotDir, 'firefox_web_demo.png'), fullPage: true });

    // The executor cases: with SIMD, then with SIMD hidden (the baseline fallback).
    for (const simd of [true, false]) {
      const page = watch(await browser.newPage());
      if (!simd) await page.evaluateOnNewDocument(() => { WebAssembly.validate = () => false; });
      await page.goto(`${origin}/tests/`);
      await page.waitForFunction(() => window.executorTestResults?.done, { timeout: 90_000 });
      await assertExecutorPage(page, { simd, version, browser: 'Firefox' });
      if (simd) await page.screenshot({ path: path.join(screenshotDir, 'firefox_executor_tests.png'), fullPage: true });
      await page.close();
    }
    assert.deepEqual(errors, [], 'no console errors');
  });
