// scripts/stage_web.mjs: the web root it assembles, its SpamAssassin files, and that it rewrites
// only what is missing or stale.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadSpamAssassin, shardRecords } from '../../js_bindings/src/datasets/spamassassin.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const stage = (out, clients) => execFileSync(process.execPath,
  [path.join(root, 'scripts', 'stage_web.mjs'), out, '--clients', String(clients)], { encoding: 'utf8' });
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));
const key = (r) => `${r.group}/${r.id}`;

test('stage_web assembles the web root and the documented SpamAssassin shards, once', { timeout: 60_000 }, async (t) => {
  const out = mkdtempSync(path.join(tmpdir(), 'fedleaf-stage-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));

  assert.match(stage(out, 2), /data files written/);

  for (const file of ['index.html', 'dashboard.html', 'leaf_worker.js', 'style.css', 'favicon.svg',
    'fedleaf/src/index.js', 'fedleaf/src/leaf/run_leaf.js', 'fedleaf/dist/fedleaf_core.wasm',
    'fedleaf/dist/fedleaf_core_simd.js', 'fedleaf/package.json', 'vendor/chart.umd.js',
    'tests/index.html', 'tests/executor_cases.mjs']) {
    assert.ok(existsSync(path.join(out, file)), `${file} is staged`);
  }
  assert.equal(existsSync(path.join(out, 'README.md')), false, 'the folder README is not served');

  const data = path.join(out, 'data', 'spamassassin');
  const index = readJson(path.join(data, 'index.json'));
  const records = await loadSpamAssassin();
  const train = records.filter((r) => r.split === 'train');
  const evalRecords = records.filter((r) => r.split === 'eval');
  assert.equal(index.shards.length, 4, 'two IID and two non-IID shards');
  for (const shard of index.shards) {
    const staged = readJson(path.join(data, shard.file));
    const expected = shardRecords(train, shard.index, 2, { nonIid: shard.non_iid });
    assert.deepEqual(staged.map(key), expected.map(key), `${shard.file} holds the documented shard`);
    assert.deepEqual(staged.map((r) => r.label), expected.map((r) => r.label), `${shard.file} labels`);
    assert.equal(staged[0].text, expected[0].text, `${shard.file} texts`);
    assert.equal(shard.examples, staged.length);
    assert.equal(shard.spam, staged.filter((r) => r.label === 1).length);
  }
  const evalStaged = readJson(path.join(data, 'eval.json'));
  assert.deepEqual(evalStaged.map(key), evalRecords.map(key), 'eval.json is the whole eval split');
  assert.equal(index.eval.examples, evalRecords.length);

  assert.match(stage(out, 2), /0 files copied, 0 data files written/, 'a second run rewrites nothing');

  unlinkSync(path.join(data, 'shard-1-of-2-noniid.json'));
  assert.match(stage(out, 2), /0 files copied, 6 data files written/, 'a missing shard regenerates the set');

  assert.match(stage(out, 3), /0 files copied, 8 data files written/, 'another client count regenerates');
  assert.equal(readJson(path.join(data, 'index.json')).shards.length, 6);
  assert.equal(existsSync(path.join(data, 'shard-0-of-2.json')), false, 'shards of the old count are removed');
});
