// src/core/aggregation/ is in folders by concept whose includes go one way (docs/design.md,
// Layout): no folder includes, directly or through others, a folder that includes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { folderGraph as graphOf, loopThrough } from '../include_graph.mjs';

const root = fileURLToPath(new URL('../../../src/core/aggregation/', import.meta.url));
const folderGraph = () => graphOf(root, 'core/aggregation/');

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
