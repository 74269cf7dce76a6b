// End to end in headless Chromium: fedleaf-server serves the staged demo site; three tabs join one
// population of the demo's wide & deep plan (scripts/demo/spam_wide_deep_plan.json: the emails as
// records of fields) and train it for two rounds in their Web Workers; "try the model" classifies
// a pasted email with its headers; the operator dashboard shows it; the shared executor cases pass
// in the browser, with SIMD and with the baseline fallback. Then two tabs train a buffered
// population ("mode": "buffered") and the dashboard shows its versions and their staleness; and
// the dashboard shows a private population's ε per round and its guarantee. (The Firefox test
// runs a text plan.)
//
// Needs FEDLEAF_BUILD_DIR/fedleaf-server (default build/), the wasm module in js_bindings/dist,
// /usr/bin/chromium and node_modules/playwright-core (the repository's tools manifest, package.json). Screenshots go to
// FEDLEAF_BUILD_DIR/e2e/. Every step has a time limit; the server, the browser and the temporary
// folders are removed whatever happens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { assertDemoTabs, describeTab, writeOwnEmailsFile } from './demo_tabs.mjs';
import { assertExecutorPage } from './executor_page.mjs';
import { ProtocolClient } from '../../js_bindings/src/protocol/protocol_client.js';
import {
  call, PLAN as TEXT_PLAN, initialModel, trainResult,
} from '../server/server_harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const buildDir = path.resolve(root, process.env.FEDLEAF_BUILD_DIR ?? 'build');
const serverBin = path.join(buildDir, 'fedleaf-server');
const screenshotDir = path.join(buildDir, 'e2e');
const chromiumPath = '/usr/bin/chromium';
const { chromium } = createRequire(path.join(root, 'package.json'))('playwright-core');
const { version } = JSON.parse(readFileSync(path.join(root, 'js_bindings', 'package.json'), 'utf8'));

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const TABS = 3;
const SHARDS = 8;  // the tabs take shards 0, 1 and 2 of 8
const ROUNDS = 2;

// What scripts/demo.sh creates: every tab featurizes its emails as records with the plan's inputs.
const PLAN = JSON.parse(readFileSync(path.join(root, 'scripts', 'demo', 'spam_wide_deep_plan.json'), 'utf8'));
// A pasted email, headers then body, as "try the model" takes it.
const PASTED_EMAIL = ['From: Prize Team <claims@lucky-prizes.biz>', 'Reply-To: winner@payout-center.info',
  'Subject: URGENT winner! Claim your FREE prize money now', 'X-Mailer: Bulk Mailer Pro 5.1',
  'Content-Type: text/html', '', '<html>CLICK HERE http://lucky-prizes.biz/claim limited offer!!!</html>'].join('\n');

const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];

async function startServer(dir, webRoot) {
  const tokenFile = path.join(dir, 'admin.token');
  writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`);
  const proc = spawn(serverBin, ['--db', path.join(dir, 'tasks.db'), '--port', '0', '--web-root', webRoot,
    '--admin-token-file', tokenFile, '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
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
  return { url, proc, exited, stderr: () => stderr };
}

// Records what a page does that the test must assert on: console errors, page errors, requests.
function watch(context, origin) {
  const seen = { errors: [], requests: [] };
  context.on('request', (request) => seen.requests.push(request.url()));
  context.on('weberror', (error) => seen.errors.push(`page error: ${error.error().message}`));
  const watchPage = (page) => {
    page.on('console', (message) => {
      if (message.type() === 'error') seen.errors.push(`console error in ${page.url()}: ${message.text()}`);
    });
  };
  context.pages().forEach(watchPage);
  context.on('page', watchPage);
  seen.offOrigin = () => seen.requests.filter((u) => new URL(u).origin !== origin);
  return seen;
}

// Runs in the page: whether the chart on canvas #id has at least n points in its first dataset.
const chartHasPoints = ({ id, n }) => {
  const chart = globalThis.Chart?.getChart(document.getElementById(id));
  return (chart ? chart.data.datasets[0].data.filter((v) => v != null).length : 0) >= n;
};

// Stages the demo site, starts fedleaf-server on it and Chromium with a fresh profile; all three
// are removed when the test ends, however it ends.
async function openSite(t) {
  assert.ok(existsSync(serverBin), `${serverBin} is missing: build the fedleaf-server target`);
  assert.ok(existsSync(chromiumPath), `${chromiumPath} is missing: apt-get install chromium`);
  const dir = mkdtempSync(path.join(tmpdir(), 'fedleaf-e2e-'));
  const webRoot = path.join(dir, 'web');
  const site = { dir, webRoot };
  t.after(async () => {
    await site.context?.close().catch(() => {});
    const { server } = site;
    if (server && server.proc.exitCode === null) {
      server.proc.kill('SIGTERM');
      const timer = setTimeout(() => server.proc.kill('SIGKILL'), 5000);
      await server.exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  await promisify(execFile)(process.execPath, [path.join(root, 'scripts', 'stage_web.mjs'), webRoot, '--clients', String(SHARDS)],
    { timeout: 60_000 });
  site.server = await startServer(dir, webRoot);
  site.origin = site.server.url;
  site.admin = new ProtocolClient({ server: site.origin, token: ADMIN_TOKEN });
  site.context = await chromium.launchPersistentContext(path.join(dir, 'profile'), {
    executablePath: chromiumPath, headless: true, args: CHROMIUM_FLAGS,
    viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1,
  });
  site.context.setDefaultTimeout(60_000);
  site.seen = watch(site.context, site.origin);
  return site;
}

// Opens one demo tab per shard on population `created` (the first reuses the context's page).
async function openTabs(site, created, tabs) {
  const pages = [];
  for (let i = 0; i < tabs; i++) {
    const page = i === 0 && site.context.pages().length ? site.context.pages()[0] : await site.context.newPage();
    await page.goto(`${site.origin}/?population=${created.id}&token=${encodeURIComponent(created.client_token)}&shard=${i}`);
    pages.push(page);
  }
  return pages;
}

// Every tab trains until the population is finished, with an accuracy point per round (version).
async function waitForTabs(site, pages, rounds) {
  for (const [i, page] of pages.entries()) {
    try {
      await page.waitForFunction(() => window.fedleafDemo.state.status?.state === 'finished', null, { timeout: 90_000 });
      await page.waitForFunction(chartHasPoints, { id: 'accuracy-chart', n: rounds }, { timeout: 30_000 });
    } catch (error) {
      throw await describeTab(page, i, error, site.seen.errors, site.server.stderr());
    }
  }
}

// The dashboard, with the admin token typed into the page, showing population `id`.
async function openDashboard(site, id) {
  const dashboard = await site.context.newPage();
  await dashboard.goto(`${site.origin}/dashboard.html`);
  await dashboard.fill('#admin-token', ADMIN_TOKEN);
  await dashboard.click('#connect');
  await dashboard.locator('#populations button', { hasText: id }).waitFor();
  return dashboard;
}

test('three tabs train a population for two rounds in headless Chromium', { timeout: 180_000 }, async (t) => {
  const site = await openSite(t);
  const { origin, admin, context, seen, webRoot, dir } = site;
  const created = await admin.createPopulation({ id: 'spam-e2e', plan: PLAN, seed: 1, rounds: ROUNDS,
    clients_per_round: TABS, min_reports: TABS, round_deadline_s: 120, lease_s: 20 });

  // The demo: three tabs. Tabs 0 and 1 pick shards 0 and 1; tab 2 reads the emails of shard 2 from
  // a file in the "### spam" / "### ham" format (parsed in the page, never uploaded).
  const { ownFile, shard2 } = writeOwnEmailsFile(webRoot, dir, SHARDS);
  const pages = await openTabs(site, created, TABS);
  await pages[2].getByLabel('My own emails or an svmlight file').check();
  await pages[2].setInputFiles('#own-file', ownFile);
  for (const page of pages) {
    await page.locator('#join:not([disabled])').click();
  }
  await waitForTabs(site, pages, ROUNDS);
  await assertDemoTabs(pages, { rounds: ROUNDS, ownEmails: shard2.length });
  const status = await admin.status(created.id);
  assert.equal(status.state, 'finished');
  assert.deepEqual(status.history.filter((r) => r.round < ROUNDS).map((r) => r.reports), [TABS, TABS]);

  // Try the model in the first tab.
  const first = pages[0];
  await first.fill('#try-text', PASTED_EMAIL);
  await first.click('#try-button');
  await first.locator('#verdict:not([hidden])').waitFor();
  assert.match(await first.textContent('#verdict-label'), /^(Spam|Not spam) · \d+%$/);
  assert.match(await first.textContent('#verdict-round'), new RegExp(`model after round ${ROUNDS}`));

  mkdirSync(screenshotDir, { recursive: true });
  await first.bringToFront();
  await first.evaluate(() => window.scrollTo(0, 0));
  await first.screenshot({ path: path.join(screenshotDir, 'web_demo.png'), fullPage: true });

  const dashboard = await openDashboard(site, created.id);
  await dashboard.locator('#rounds tbody tr').nth(ROUNDS - 1).waitFor();
  assert.equal(await dashboard.locator('#rounds tbody tr').count(), ROUNDS);
  assert.match(await dashboard.textContent('#rejections'), /None: every upload was accepted/);
  // Closed rounds show their robust counts: reports clipped (rows clipped) / capped / withheld.
  const robustCells = await dashboard.locator('#rounds tbody tr td:nth-child(9)').allTextContents();
  assert.ok(robustCells.some((t) => /^[\d,]+ \([\d,]+\) \/ [\d,]+ \/ [\d,]+$/.test(t)), `robust counts: ${robustCells}`);
  await dashboard.waitForFunction(chartHasPoints, { id: 'reports-chart', n: ROUNDS });
  await dashboard.screenshot({ path: path.join(screenshotDir, 'dashboard.png'), fullPage: true });
  // The rounds table fits its card, scrolled by nothing: at 1280 px its clip bounds wrap, at a
  // phone's 390 px each round is a block of labelled lines (regression: the table was wider than
  // its card, 1540 px in a 312 px box at 390, its right part hidden behind a scroll).
  for (const width of [1280, 390]) {
    await dashboard.setViewportSize({ width, height: 900 });
    const fit = await dashboard.evaluate(() => {
      const table = document.getElementById('rounds');
      const card = table.closest('.card').getBoundingClientRect();
      const box = table.getBoundingClientRect();
      return { width: innerWidth, card: [card.left, card.right], table: [box.left, box.right],
        scroll: [table.parentElement.scrollWidth, table.parentElement.clientWidth],
        page: document.documentElement.scrollWidth };
    });
    const message = `at ${width} px: ${JSON.stringify(fit)}`;
    assert.ok(fit.table[0] >= fit.card[0] && fit.table[1] <= fit.card[1], `the table is inside its card ${message}`);
    assert.ok(fit.scroll[0] <= fit.scroll[1], `the table does not scroll ${message}`);
    assert.ok(fit.page <= fit.width, `the page is not wider than the window ${message}`);
  }
  await dashboard.setViewportSize({ width: 390, height: 900 });
  await dashboard.screenshot({ path: path.join(screenshotDir, 'dashboard_390.png'), fullPage: true });

  // The executor cases, in the browser: with SIMD, then with SIMD hidden (the baseline fallback).
  for (const simd of [true, false]) {
    const page = await context.newPage();
    if (!simd) await page.addInitScript(() => { WebAssembly.validate = () => false; });
    await page.goto(`${origin}/tests/`);
    await page.waitForFunction(() => window.executorTestResults?.done, null, { timeout: 60_000 });
    await assertExecutorPage(page, { simd, version, browser: 'Chromium' });
    if (simd) await page.screenshot({ path: path.join(screenshotDir, 'executor_tests.png'), fullPage: true });
    await page.close();
  }

  assert.deepEqual(seen.errors, [], 'no console errors');
  // The workers' requests are recorded too, so the origin check covers the leaves' traffic.
  for (const call of ['/tasks:claim', `/rounds/${ROUNDS}/model`, '/result', '/fedleaf/dist/fedleaf_core_simd.wasm']) {
    assert.ok(seen.requests.some((u) => u.includes(call)), `a request to ${call} was recorded`);
  }
  assert.deepEqual(seen.offOrigin(), [], 'no request left the origin');
});

// A buffered population (FedBuff) in the browser: two tabs, a version every 2 reports, 2 tasks out
// at once. Each tab trains once per version (min_round), so every version folds one report of each
// at staleness 0; the tabs say "version", and the dashboard shows the mode, the versions with
// their recorded staleness, the tasks out against the concurrency and the stale refusals.
test('two tabs train a buffered population in headless Chromium and the dashboard shows its versions',
  { timeout: 180_000 }, async (t) => {
    const site = await openSite(t);
    const tabs = 2;
    const created = await site.admin.createPopulation({ id: 'spam-buffered-e2e', plan: PLAN, seed: 1, rounds: ROUNDS,
      mode: 'buffered', buffer_size: tabs, concurrency: tabs, max_staleness: 1, lease_s: 20 });
    const pages = await openTabs(site, created, tabs);
    for (const page of pages) {
      await page.locator('#join:not([disabled])').click();
    }
    await waitForTabs(site, pages, ROUNDS);
    await assertDemoTabs(pages, { rounds: ROUNDS });
    for (const page of pages) {
      assert.match(await page.textContent('#round-label'), new RegExp(`^Finished · ${ROUNDS} versions published$`));
      assert.match(await page.textContent('#log'), /claimed train task #\d+ \(version 1\)/);
    }
    const status = await site.admin.status(created.id);
    assert.equal(status.mode, 'buffered');
    assert.deepEqual(status.history.filter((r) => r.round < ROUNDS).map((r) => [r.reports, r.staleness]),
      Array.from({ length: ROUNDS }, () => [tabs, { mean: 0, max: 0, counts: { 0: tabs } }]));

    const dashboard = await openDashboard(site, created.id);
    await dashboard.locator('#rounds tbody tr').nth(ROUNDS - 1).waitFor();
    const stats = await dashboard.textContent('#detail-stats');
    for (const want of ['Modebuffered', `Version${ROUNDS} of ${ROUNDS}`, `Train tasks out0 of ${tabs}`,
      'Max staleness1', 'Stale uploads refused (409)0']) {
      assert.ok(stats.includes(want), `dashboard stats "${stats}" include "${want}"`);
    }
    assert.match(await dashboard.locator('#detail-stats .stat', { hasText: 'Max staleness' }).getAttribute('title'),
      /weighed 1\/\(1\+s\)\^0\.5/);
    assert.equal(await dashboard.textContent('#rounds-title'), 'Versions');
    assert.equal(await dashboard.textContent('#rounds-unit'), 'Version');
    assert.deepEqual(await dashboard.locator('#rounds tbody tr td:first-child').allTextContents(),
      Array.from({ length: ROUNDS }, (_, v) => String(v)), 'versions as the server names them, from 0');
    assert.deepEqual(await dashboard.locator('#rounds tbody td.staleness').allTextContents(),
      Array.from({ length: ROUNDS }, () => '0.00 / 0'));
    assert.equal(await dashboard.locator('#rounds tbody td.staleness span').first().getAttribute('title'),
      `staleness 0: ${tabs} reports`);
    assert.ok(await dashboard.locator('#staleness-chart').isVisible(), 'the staleness chart is shown');
    await dashboard.waitForFunction(chartHasPoints, { id: 'staleness-chart', n: ROUNDS });
    assert.equal(await dashboard.textContent('#reports-title'), 'Reports per version');
    const listed = dashboard.locator('#populations tbody tr', { hasText: created.id });
    assert.deepEqual((await listed.locator('td').allTextContents()).slice(2),
      [`version ${ROUNDS} of ${ROUNDS}`, 'buffered'], 'the list counts its versions, not rounds');
    mkdirSync(screenshotDir, { recursive: true });
    await dashboard.screenshot({ path: path.join(screenshotDir, 'dashboard_buffered.png'), fullPage: true });

    // Back to a synchronous population's page: nothing of the buffered mode is left.
    const sync = await site.admin.createPopulation({ id: 'spam-sync-e2e', plan: PLAN, seed: 1, rounds: 1 });
    await dashboard.locator('#populations button', { hasText: sync.id }).click();
    await dashboard.waitForFunction(() => document.getElementById('rounds-unit').textContent === 'Round');
    assert.equal(await dashboard.locator('#staleness-chart').isVisible(), false);
    assert.equal(await dashboard.locator('#rounds thead th[data-buffered]').isVisible(), false);
    assert.ok(!(await dashboard.textContent('#detail-stats')).includes('Mode'));
    assert.deepEqual(site.seen.errors, [], 'no console errors');
  });

test('the dashboard shows a private population\'s ε per round and its guarantee', { timeout: 120_000 }, async (t) => {
  const site = await openSite(t);
  const rounds = 3;
  const created = await site.admin.createPopulation({
    id: 'private-e2e', plan: TEXT_PLAN, initial_model_b64: initialModel().toString('base64'), rounds,
    clients_per_round: 1,
    privacy: { mechanism: 'dp_ftrl_tree', noise_multiplier: 2, clip_norm: 0.5, delta: 1e-6, max_epsilon: 20,
               max_participations: 2, min_separation: 0 },
  });
  // One enrolled device (max_participations 2, min_separation 0) reports in rounds 0 and 1.
  const device = (await call(`${site.origin}/v1/populations/${created.id}/devices`,
    { method: 'POST', token: created.client_token })).json;
  for (let r = 0; r < 2; r++) {
    // The server closes a round in the background: a claim just after it may be told to retry.
    let task = null;
    for (let attempt = 0; !task?.upload_url && attempt < 100; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      task = (await call(`${site.origin}/v1/populations/${created.id}/tasks:claim`,
        { method: 'POST', token: created.client_token, body: JSON.stringify({ min_round: r }),
          headers: { 'Fedleaf-Device': device.credential } })).json;
    }
    const put = await call(`${site.origin}${task.upload_url}`, { method: 'PUT', token: task.lease_token,
      body: trainResult({ rows: [r], rowValue: 0.5, denseValue: 0.25, numExamples: 2 }) });
    assert.equal(put.status, 201);
  }
  const status = await site.admin.status(created.id);
  assert.equal(status.privacy.rounds_released, 2);

  const dashboard = await openDashboard(site, created.id);
  await dashboard.waitForFunction(chartHasPoints, { id: 'privacy-chart', n: 2 });
  assert.ok(await dashboard.locator('#privacy-chart').isVisible(), 'the ε chart is shown');
  assert.equal(await dashboard.textContent('#privacy-guarantee'), status.privacy.guarantee);
  const epsilons = await dashboard.evaluate(() =>
    globalThis.Chart.getChart(document.getElementById('privacy-chart')).data.datasets[0].data);
  assert.deepEqual(epsilons, [...status.privacy.epsilon_by_round, null], 'ε after each closed round; none for the open one');
  const stats = await dashboard.textContent('#detail-stats');
  const spent = `Privacy ε spent${status.privacy.epsilon_spent.toFixed(2)} of ${status.privacy.epsilon_at_end.toFixed(2)}`;
  assert.ok(stats.includes(spent), `dashboard stats "${stats}" include "${spent}"`);
  mkdirSync(screenshotDir, { recursive: true });
  await dashboard.screenshot({ path: path.join(screenshotDir, 'dashboard_private.png'), fullPage: true });

  // The demo page tells the person in the tab what the population promises them.
  const tab = await site.context.newPage();
  await tab.goto(`${site.origin}/?population=${created.id}&token=${encodeURIComponent(created.client_token)}`);
  await tab.waitForFunction(() => !document.getElementById('privacy-guarantee').hidden);
  const line = await tab.textContent('#privacy-guarantee');
  assert.ok(line.startsWith(`Your privacy: ${status.privacy.guarantee}`), line);
  assert.ok(line.includes(`ε spent so far: ${status.privacy.epsilon_spent.toFixed(2)} of at most 20.00`), line);
  await tab.close();

  // A population without privacy shows none of it.
  const plain = await site.admin.createPopulation({ id: 'plain-e2e', plan: TEXT_PLAN,
    initial_model_b64: initialModel().toString('base64'), rounds: 1 });
  await dashboard.locator('#populations button', { hasText: plain.id }).click();
  await dashboard.waitForFunction(() => document.getElementById('detail-title').textContent.includes('plain-e2e'));
  assert.equal(await dashboard.locator('#privacy-chart').isVisible(), false);
  assert.ok(!(await dashboard.textContent('#detail-stats')).includes('Privacy'));
  assert.deepEqual(site.seen.errors, [], 'no console errors');
});
