// The version is stamped once, from CMake's project(VERSION): the npm package's package.json, the
// JS constant the protocol header is made from, and the wasm module must all say the same.
// After changing CMakeLists.txt, `node scripts/stamp_version.mjs` rewrites the first two; the
// wasm module takes it from the build (src/core/version.h.in).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

import { cmakeVersion } from '../../scripts/stamp_version.mjs';
import { createExecutor, PROTOCOL_VERSION, VERSION } from '../../js_bindings/src/index.js';

const packageJson = new URL('../../js_bindings/package.json', import.meta.url);

test('package.json of the npm package carries CMake\'s project version', async () => {
  const { version } = JSON.parse(await readFile(packageJson, 'utf8'));
  assert.equal(version, await cmakeVersion(), 'run node scripts/stamp_version.mjs');
});

test('the JS VERSION constant is CMake\'s project version and the header its major.minor', async () => {
  const cmake = await cmakeVersion();
  assert.equal(VERSION, cmake, 'run node scripts/stamp_version.mjs');
  assert.equal(PROTOCOL_VERSION, cmake.split('.').slice(0, 2).join('.'));
});

test('the wasm module reports the same version as the JS (a stale js_bindings/dist fails here)', async () => {
  const executor = await createExecutor();
  assert.equal(executor.version, VERSION, 'rebuild the wasm: scripts/build.sh --wasm');
});
