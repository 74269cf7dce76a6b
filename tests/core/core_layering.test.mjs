// src/core is in folders by concept whose includes go one way (docs/design.md, Layout): no folder
// includes, directly or through others, a folder that includes it, and the model package never
// includes the training code that uses it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { folderGraph as graphOf, loopThrough } from './include_graph.mjs';

const root = fileURLToPath(new URL('../../src/core/', import.meta.url));
const folderGraph = () => {
  const graph = graphOf(root, 'core/');
  graph.delete('.');
  return graph;
};

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
