// The SpamAssassin emails as records for the wide & deep demo: the fields of one email exactly,
// and every email of the corpus featurized under scripts/demo/spam_wide_deep_plan.json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

import { createExecutor } from '../../js_bindings/src/index.js';
import {
  loadSpamAssassin, mailerFamily, spamAssassinEmailRecord, splitEmail, subjectTokens,
} from '../../js_bindings/src/datasets/spamassassin.js';

const PLAN_URL = new URL('../../scripts/demo/spam_wide_deep_plan.json', import.meta.url);
const plan = JSON.parse(await readFile(PLAN_URL, 'utf8'));

const EMAIL = [
  'From spammer@bulk.example.biz  Thu Aug 22 13:17:22 2002',
  'Received: from a (a [1.2.3.4])',
  '\tby b with SMTP',
  'Received: from c by d',
  'From: "Deals" <Deals@Bulk.Example.BIZ>',
  'Reply-To: collect@other.example.net',
  'Subject: WIN Cash now!! win',
  'X-Mailer: Microsoft Outlook Express 6.00.2600.0000',
  'Content-Type: text/html; charset="iso-8859-1"',
  '',
  '<html>CLICK http://a.example/x and HTTPS://b.example now!</html>',
].join('\n');

test('an email becomes a record of its fields', () => {
  const record = spamAssassinEmailRecord(EMAIL);
  assert.deepEqual({ ...record, body: undefined }, {
    body: undefined,
    subject: 'WIN Cash now!! win',
    subject_tokens: ['win', 'cash', 'now'],
    sender_domain: 'bulk.example.biz',
    x_mailer: 'microsoft outlook',
    content_type: 'text',
    reply_to_differs: true,
    received_hops: 2,
    length: new TextEncoder().encode(EMAIL).length,
    links: 2,
    caps_share: 10 / 45, // CLICK, HTTPS of html CLICK http a example x and HTTPS b example now html
    exclamations: 3,
    html: 1,
  });
  assert.equal(record.body, '<html>CLICK http://a.example/x and HTTPS://b.example now!</html>');
});

test('header parsing: folded lines, missing headers and defaults', () => {
  const { headers, body } = splitEmail('Subject: a\r\n  b\r\nX-Y: 1\r\n\r\nbody\r\n\r\nmore');
  assert.deepEqual(headers.get('subject'), ['a b']);
  assert.equal(body, 'body\r\n\r\nmore');
  const bare = spamAssassinEmailRecord('no headers at all');
  assert.equal(bare.subject, '');
  assert.deepEqual(bare.subject_tokens, []);
  assert.equal(bare.sender_domain, '');
  assert.equal(bare.x_mailer, 'none');
  assert.equal(bare.content_type, 'none');
  assert.equal(bare.reply_to_differs, false);
  assert.equal(bare.received_hops, 0);
  assert.equal(bare.caps_share, 0);
  assert.equal(mailerFamily('Mutt/1.3.28i'), 'mutt');
  assert.equal(mailerFamily(''), 'none');
  assert.equal(subjectTokens(Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ')).length, 32);
});

test('the wide & deep plan reads record fields the records have, into tables that hold their ids', () => {
  const record = spamAssassinEmailRecord(EMAIL);
  const layers = new Map(plan.model.layers.map((l) => [l.name, l]));
  for (const [name, input] of Object.entries(plan.model.inputs)) {
    const f = input.features;
    for (const field of [f.text, f.column, ...(f.cross ?? []), ...(f.numeric ?? []).map((e) => e.field)]) {
      if (field !== undefined) assert.ok(field in record, `${name} reads ${field}`);
    }
    const buckets = f.num_buckets ?? f.hash_buckets;
    for (const layer of plan.model.layers.filter((l) => l.input === name && l.type === 'embedding_bag')) {
      const table = layer.table ? layers.get(layer.table) : layer;
      assert.ok(buckets <= table.vocab, `${name}: ${buckets} buckets fit ${table.name}'s vocab ${table.vocab}`);
    }
  }
  // Every parameter has its updates entry: row_sparse + select for tables, dense for the rest.
  const params = plan.model.layers.flatMap((l) => {
    if (l.type === 'embedding_bag') return l.table ? [] : [[`${l.name}/weight`, 'row_sparse']];
    if (l.type === 'dense') return [[`${l.name}/weight`, 'dense'], [`${l.name}/bias`, 'dense']];
    return [];
  });
  assert.deepEqual(Object.keys(plan.updates).sort(), params.map(([n]) => n).sort());
  for (const [name, encoding] of params) {
    assert.equal(plan.updates[name].encoding, encoding, name);
    if (encoding === 'row_sparse') assert.equal(plan.updates[name].download, 'select', name);
  }
});

test('every email of the corpus featurizes under the wide & deep plan', async () => {
  const executor = await createExecutor();
  const emails = await loadSpamAssassin();
  const records = emails.map((e) => spamAssassinEmailRecord(e.text));
  const inputs = executor.featurizeRecords(records, plan);
  const featured = Object.entries(plan.model.inputs).filter(([, i]) => i.features).map(([n]) => n).sort();
  assert.deepEqual(inputs.map((c) => c.name), featured);
  for (const c of inputs) {
    if (c.kind === 'dense') {
      assert.equal(c.dense.length, records.length * c.width, c.name);
      assert.ok(c.dense.every(Number.isFinite), c.name);
    } else {
      assert.equal(c.offsets.length, records.length + 1, c.name);
      assert.ok(c.ids.every((id) => id < c.numFeatures), c.name);
    }
  }
  // Every email has body tokens and a sender-domain column; the cross fires where both exist.
  const byName = Object.fromEntries(inputs.map((c) => [c.name, c]));
  const empty = (c) => Array.from({ length: records.length }, (_, i) => c.offsets[i + 1] === c.offsets[i]);
  assert.ok(empty(byName.body).filter(Boolean).length < records.length / 100, 'bodies with no token');
  assert.ok(empty(byName.mailer).every((e) => !e), 'x_mailer is never missing (none)');
  assert.ok(empty(byName.hops).every((e) => !e), 'received_hops is always a category');
});
