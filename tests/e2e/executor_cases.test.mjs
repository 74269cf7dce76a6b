// The executor cases shared with browsers (tests/e2e/browser/executor_cases.mjs), under Node.
// tests/e2e/web_demo.test.mjs runs the same cases in headless Chromium.
import { test } from 'node:test';
import { readFileSync } from 'node:fs';

import { createExecutor, wasmSimdSupported } from '../../js_bindings/src/index.js';
import { executorCases } from './browser/executor_cases.mjs';

const { version } = JSON.parse(readFileSync(new URL('../../js_bindings/package.json', import.meta.url), 'utf8'));

for (const { name, run } of executorCases({ createExecutor, wasmSimdSupported, version })) {
  test(name, run);
}
