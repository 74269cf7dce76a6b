// The package's types name exactly what its module exports: a new export without a type (or a
// type left behind by a removed export) fails here; tsc over tests/types/usage.ts (scripts/test.sh)
// checks that the types fit the calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

import * as fedleaf from '../../js_bindings/src/index.js';

test('index.d.ts declares every export of src/index.js and nothing else', async () => {
  const types = await readFile(new URL('../../js_bindings/index.d.ts', import.meta.url), 'utf8');
  const declared = [...types.matchAll(/^export (?:declare )?(?:function|class|const) (\w+)/gm)].map((m) => m[1]);
  assert.deepEqual([...new Set(declared)].sort(), Object.keys(fedleaf).sort());
});

test('usage.ts imports every value export of the package', async () => {
  const usage = await readFile(new URL('../types/usage.ts', import.meta.url), 'utf8');
  const imported = /import \{([^}]*)\} from 'fedleaf'/.exec(usage)[1].split(',').map((s) => s.trim()).filter(Boolean);
  assert.deepEqual(imported.sort(), Object.keys(fedleaf).sort());
});
