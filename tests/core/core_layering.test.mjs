// src/core is in folders by concept whose includes go one way (docs/design.md, Layout): no folder
// includes, directly or through others, a folder that includes it, and the model package never
// includes the training code that uses it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../src/core/', import.meta.url));
const includePattern = /^#include "core\/([^"/]+)\/[^"]+"/gm;

// folder -> the other src/core folders its files include.
function folderGraph() {
  const graph = new Map();
  for (const entry of readdirSync(root, { recursive: true })) {
    const parts = entry.split(/[\\/]/);
    if (!/\.(h|cc)$/.test(entry) || parts.length < 2) continue;
    const from = parts[0];
    if (!graph.has(from)) graph.set(from, new Set());
    for (const [, to] of readFileSync(join(root, entry), 'utf8').matchAll(includePattern)) {
      if (to !== from) graph.get(from).add(to);
    }
  }
  return graph;
}

// A loop through `start`, as the list of folders walked, or null.
function loopThrough(graph, start) {
  const walk = (folder, path, seen) => {
    for (const next of graph.get(folder) ?? []) {
      if (next === start) return [...path, next];
      if (seen.has(next)) continue;
      seen.add(next);
      const found = walk(next, [...path, next], seen);
      if (found) return found;
    }
    return null;
  };
  return walk(start, [start], new Set());
}

test('src/core folders include one another without a loop', () => {
  const graph = folderGraph();
  for (const folder of ['data', 'kernels', 'features', 'model', 'train', 'aggregation', 'wire']) {
    assert.ok(graph.has(folder), `folder ${folder}/`);
  }
  for (const folder of graph.keys()) {
    const loop = loopThrough(graph, folder);
    assert.equal(loop, null, `include loop ${loop?.join(' -> ')}`);
  }
});

test('the model package, data and kernels include nothing of train/', () => {
  const graph = folderGraph();
  for (const folder of ['model', 'data', 'kernels', 'features']) {
    assert.ok(!graph.get(folder).has('train'), `${folder}/ includes train/`);
  }
  assert.ok(!graph.get('data').has('model'), 'data/ includes model/');
  assert.ok(!graph.get('kernels').has('data'), 'kernels/ includes data/');
});
