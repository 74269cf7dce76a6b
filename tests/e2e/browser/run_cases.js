// Runs the shared executor cases in this page and publishes the outcome as
// window.executorTestResults = {done, passed, failed, simd, results: [{name, ok, error, ms}]}
// for tests/e2e/web_demo.test.mjs (and lists it for a person).
import { createExecutor, wasmSimdSupported } from '../fedleaf/src/index.js';
import { executorCases } from './executor_cases.mjs';

const summary = document.getElementById('summary');
const list = document.getElementById('results');
const state = { done: false, passed: 0, failed: 0, simd: wasmSimdSupported(), results: [] };
window.executorTestResults = state;

function show(result) {
  const item = document.createElement('li');
  item.className = result.ok ? 'pass' : 'fail';
  const mark = document.createElement('span');
  mark.className = 'mark';
  mark.textContent = result.ok ? 'pass' : 'fail';
  item.append(mark, ` ${result.name} `);
  const ms = document.createElement('span');
  ms.className = 'muted';
  ms.textContent = `${result.ms.toFixed(0)} ms`;
  item.append(ms);
  if (!result.ok) {
    const detail = document.createElement('pre');
    detail.textContent = result.error;
    item.append(detail);
  }
  list.append(item);
}

try {
  const { version } = await (await fetch('../fedleaf/package.json')).json();
  for (const { name, run } of executorCases({ createExecutor, wasmSimdSupported, version })) {
    const t0 = performance.now();
    const result = { name, ok: true, error: '', ms: 0 };
    try {
      await run();
    } catch (error) {
      result.ok = false;
      result.error = String(error?.stack ?? error);
    }
    result.ms = performance.now() - t0;
    state.results.push(result);
    if (result.ok) state.passed += 1; else state.failed += 1;
    show(result);
  }
} catch (error) {
  state.failed += 1;
  state.results.push({ name: 'loading the test cases', ok: false, error: String(error?.stack ?? error), ms: 0 });
}
state.done = true;
summary.textContent = `${state.passed} passed, ${state.failed} failed · wasm SIMD ${state.simd ? 'supported' : 'not supported'} in this browser`;
summary.classList.add(state.failed ? 'bad' : 'good');
