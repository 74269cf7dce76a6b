// The demo-page checks shared by the Chromium (Playwright) and Firefox (Puppeteer) e2e tests:
// both drivers' pages offer evaluate(fn, arg), so everything here reads the page through it.
//
//   const { ownFile, shard2 } = writeOwnEmailsFile(webRoot, dir, SHARDS);
//   ... open TABS pages, tab 2 loads ownFile, every tab joins ...
//   await waitForDemoTabs(pages, { rounds: ROUNDS, waitFor, failure: (i, e, s) => ... });
//   await assertDemoTabs(pages, { rounds: ROUNDS, ownEmails: shard2.length });
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// Shard 2 of the staged corpus as a "### spam" / "### ham" text file (tab 2 reads it in the page).
export function writeOwnEmailsFile(webRoot, dir, shards) {
  const shard2 = JSON.parse(readFileSync(path.join(webRoot, 'data', 'spamassassin', `shard-2-of-${shards}.json`), 'utf8'));
  const ownFile = path.join(dir, 'my-emails.txt');
  writeFileSync(ownFile, shard2.map((r) => `### ${r.label ? 'spam' : 'ham'}\n${r.text}`).join('\n'));
  return { ownFile, shard2 };
}

// The page's state and log, for the message of a tab that did not finish.
export async function describeTab(page, i, error, errors, serverStderr) {
  const state = await page.evaluate(() => window.fedleafDemo.state).catch((e) => e.message);
  const log = await page.evaluate(() => document.querySelector('#log')?.textContent ?? '').catch(() => '');
  return new Error(`tab ${i}: ${error.message}\nstate: ${JSON.stringify(state)}\nlog: ${log}\n` +
    `errors: ${errors.join('\n')}\nserver: ${serverStderr}`);
}

// Every tab finished the population with one accuracy point per round, trained sparse, and tab 2
// trained on all `ownEmails` emails of its file.
export async function assertDemoTabs(pages, { rounds, ownEmails }) {
  for (const [i, page] of pages.entries()) {
    const demo = await page.evaluate(() => ({
      isolated: globalThis.crossOriginIsolated,
      points: globalThis.Chart.getChart(document.getElementById('accuracy-chart')).data.datasets[0].data,
      state: window.fedleafDemo.state,
      dataSummary: document.querySelector('#data-summary').textContent,
    }));
    assert.equal(demo.isolated, true, `tab ${i}: crossOriginIsolated`);
    assert.equal(demo.points.length, rounds, `tab ${i}: the accuracy chart has one point per round`);
    assert.ok(demo.points.every((p) => p > 50 && p <= 100), `tab ${i}: accuracies ${demo.points} are percentages above chance`);
    assert.equal(demo.state.uploads, rounds, `tab ${i} uploaded one update per round`);
    if (i === 2) {
      assert.equal(demo.state.examples, ownEmails, 'tab 2 trained on every email of its file');
      assert.match(demo.dataSummary, new RegExp(`my-emails\\.txt: ${ownEmails} emails in this tab`));
    }
    assert.ok(demo.state.plan.touchedRows > 0 && demo.state.plan.touchedRows < demo.state.plan.tableRows,
      `tab ${i}: touched ${demo.state.plan.touchedRows} of ${demo.state.plan.tableRows} rows`);
    assert.ok(demo.state.uploadedBytes < demo.state.uploads * demo.state.plan.denseUpdateBytes / 2,
      `tab ${i}: sparse uploads (${demo.state.uploadedBytes} B) are far below dense ones`);
  }
}
