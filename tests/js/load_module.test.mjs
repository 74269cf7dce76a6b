// Where createExecutor finds its wasm and what it says when the file there is not one: a missing,
// truncated or foreign .wasm throws one Error naming the URL, what was found and the README
// section, instead of the engine's CompileError; a distUrl is resolved at run time, not against
// the package's own location (issue 27). The browser side (a 404, a dev
// server's index.html) runs in tests/package/consumer.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createExecutor } from '../../js_bindings/src/index.js';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../js_bindings/dist');

// A folder with the baseline glue and, as its .wasm, `wasm` (bytes) or nothing (undefined).
function distFolder(t, wasm) {
  const dir = mkdtempSync(path.join(tmpdir(), 'fedleaf-dist-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  copyFileSync(path.join(dist, 'fedleaf_core.js'), path.join(dir, 'fedleaf_core.js'));
  if (wasm !== undefined) writeFileSync(path.join(dir, 'fedleaf_core.wasm'), wasm);
  return dir;
}

function rejectsNaming(promise, url, problem) {
  return assert.rejects(promise, (error) => {
    assert.equal(error.name, 'WasmLoadError', error.stack);
    assert.equal(error.url, url);
    assert.ok(error.message.includes(url), error.message);
    assert.match(error.message, problem);
    assert.ok(error.message.includes('"Serving the .wasm files"'), error.message);
    return true;
  });
}

test('a distUrl folder holding a working copy of the build loads from it', async (t) => {
  const dir = distFolder(t, readFileSync(path.join(dist, 'fedleaf_core.wasm')));
  const executor = await createExecutor({ simd: false, distUrl: pathToFileURL(`${dir}/`) });
  assert.equal(executor.simd, false);
  assert.equal(typeof executor.version, 'string');
});

test('a missing .wasm is an Error naming its URL and the README section', async (t) => {
  const dir = distFolder(t);
  await rejectsNaming(createExecutor({ simd: false, distUrl: pathToFileURL(`${dir}/`) }),
    pathToFileURL(path.join(dir, 'fedleaf_core.wasm')).href, /no such file/);
});

test('a page served where the .wasm should be is named with its first bytes, not a CompileError', async (t) => {
  const dir = distFolder(t, '<!doctype html><title>app</title>');
  await rejectsNaming(createExecutor({ simd: false, distUrl: pathToFileURL(`${dir}/`) }),
    pathToFileURL(path.join(dir, 'fedleaf_core.wasm')).href,
    /not WebAssembly \(33 bytes starting 3c 21 64 6f: "<!doctype html>.*a \.wasm starts 00 61 73 6d/);
});

test('a truncated .wasm is named with the engine\'s reason', async (t) => {
  const dir = distFolder(t, readFileSync(path.join(dist, 'fedleaf_core.wasm')).subarray(0, 1000));
  await rejectsNaming(createExecutor({ simd: false, distUrl: pathToFileURL(`${dir}/`) }),
    pathToFileURL(path.join(dir, 'fedleaf_core.wasm')).href, /does not compile \(.+\)/);
});

test('a distUrl is a folder with or without its final slash; a relative one is resolved against the current directory', async (t) => {
  const dir = distFolder(t, readFileSync(path.join(dist, 'fedleaf_core.wasm')));
  assert.equal((await createExecutor({ simd: false, distUrl: pathToFileURL(dir).href })).simd, false);
  const cwd = process.cwd();
  process.chdir(path.dirname(dir));
  t.after(() => process.chdir(cwd));
  assert.equal((await createExecutor({ simd: false, distUrl: path.basename(dir) })).simd, false);
  await assert.rejects(createExecutor({ simd: false, distUrl: `${path.basename(dir)}/missing/` }),
    (error) => error.message.includes(path.join(dir, 'missing', 'fedleaf_core.js')));
});
