// src/core/aggregation/ is in folders by concept whose includes go one way (docs/design.md,
// Layout): no folder includes, directly or through others, a folder that includes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../src/core/aggregation/', import.meta.url));
const includePattern = /^#include "core\/aggregation\/([^"]+)"/gm;

// folder -> the other aggregation folders its files include; a file at the root is its own folder '.'.
function folderGraph() {
  const graph = new Map();
  for (const entry of readdirSync(root, { recursive: true })) {
    if (!/\.(h|cc)$/.test(entry)) continue;
    const parts = entry.split(/[\\/]/);
    const from = parts.length > 1 ? parts[0] : '.';
    if (!graph.has(from)) graph.set(from, new Set());
    for (const [, path] of readFileSync(join(root, entry), 'utf8').matchAll(includePattern)) {
      const to = path.includes('/') ? path.split('/')[0] : '.';
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

test('aggregation has no source at its root and its folders include one another without a loop', () => {
  const graph = folderGraph();
  assert.ok(!graph.has('.'), 'a source file at src/core/aggregation/ itself');
  for (const folder of ['robust', 'operators', 'updates', 'accumulator', 'round', 'server_optimizer']) {
    assert.ok(graph.has(folder), `folder ${folder}/`);
  }
  for (const folder of graph.keys()) {
    const loop = loopThrough(graph, folder);
    assert.equal(loop, null, `include loop ${loop?.join(' -> ')}`);
  }
});

test('the folder walk finds a loop when one folder includes back up', () => {
  const graph = new Map([
    ['round', new Set(['updates'])],
    ['updates', new Set(['robust'])],
    ['robust', new Set(['round'])],
  ]);
  assert.deepEqual(loopThrough(graph, 'robust'), ['robust', 'round', 'updates', 'robust']);
  graph.get('robust').clear();
  assert.equal(loopThrough(graph, 'round'), null);
});
