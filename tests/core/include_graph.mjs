// The include graph of a source tree's folders, and the loop finder the layering tests share
// (tests/core/core_layering.test.mjs, tests/core/aggregation/folder_layering.test.mjs).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

// folder -> the other folders under `root` its files include, for includes spelled
// `#include "<prefix><folder>/..."`; a file at the root itself is its own folder '.', and so is
// an include of a file at the root.
export function folderGraph(root, prefix) {
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const includePattern = new RegExp(`^#include "${escaped}([^"]+)"`, 'gm');
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
export function loopThrough(graph, start) {
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
