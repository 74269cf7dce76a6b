#!/usr/bin/env node
// Stamps CMake's project(VERSION) into the npm package: js_bindings/package.json "version" and
// js_bindings/src/protocol/version.js (the constant the protocol header is made from). Run after changing
// the version in CMakeLists.txt; tests/package/version.test.mjs fails until then.
//
//   node scripts/stamp_version.mjs [--check]    (--check: exit 1 instead of writing)
import { readFile, writeFile } from 'node:fs/promises';

const root = new URL('../', import.meta.url);

/** The VERSION of project(...) in CMakeLists.txt. */
export async function cmakeVersion() {
  const text = await readFile(new URL('CMakeLists.txt', root), 'utf8');
  const match = /project\(\s*fedleaf\b[^)]*\bVERSION\s+(\d+\.\d+\.\d+)/.exec(text);
  if (!match) throw new Error('CMakeLists.txt: no project(fedleaf VERSION X.Y.Z)');
  return match[1];
}

const files = [
  {
    url: new URL('js_bindings/package.json', root),
    stamp: (text, version) => text.replace(/^(\s*"version":\s*")[^"]*(")/m, `$1${version}$2`),
  },
  {
    url: new URL('js_bindings/src/protocol/version.js', root),
    stamp: (text, version) => text.replace(/^(export const VERSION = ')[^']*(';)$/m, `$1${version}$2`),
  },
];

async function main() {
  const check = process.argv.includes('--check');
  const version = await cmakeVersion();
  let stale = 0;
  for (const { url, stamp } of files) {
    const text = await readFile(url, 'utf8');
    const stamped = stamp(text, version);
    if (stamped === text) continue;
    stale += 1;
    if (check) {
      console.error(`stamp_version: ${url.pathname} does not say ${version}`);
    } else {
      await writeFile(url, stamped);
      console.log(`stamp_version: ${url.pathname} → ${version}`);
    }
  }
  if (check && stale > 0) process.exit(1);
}

if (import.meta.url === new URL(process.argv[1], 'file://').href) await main();
