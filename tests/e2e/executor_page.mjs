// The check of the executor-cases page (web_demo/tests/) shared by the Chromium (Playwright) and
// Firefox (Puppeteer) e2e tests; both drivers' pages offer evaluate(fn), so it reads the page
// through that.
//
//   await page.goto(`${origin}/tests/`);  ... wait for window.executorTestResults?.done ...
//   await assertExecutorPage(page, { simd, version, browser: 'Firefox' });
import assert from 'node:assert/strict';

import { executorCases } from './browser/executor_cases.mjs';

// Every shared executor case ran on the page, in order, and passed, with the SIMD support the
// page was given.
export async function assertExecutorPage(page, { simd, version, browser }) {
  const results = await page.evaluate(() => window.executorTestResults);
  const expected = executorCases({ createExecutor: null, wasmSimdSupported: () => simd, version }).map((c) => c.name);
  assert.equal(results.simd, simd, 'the page saw the SIMD support it was given');
  assert.deepEqual(results.results.filter((r) => !r.ok), [], `executor cases failed in ${browser} (simd ${simd})`);
  assert.deepEqual(results.results.map((r) => r.name), expected, 'the page ran every shared case');
}
