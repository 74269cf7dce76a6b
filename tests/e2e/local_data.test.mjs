// The demo's parser of a visitor's own data (web_demo/local_data.js), under Node.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { detectFormat, parseJsonEmails, parseLabeledEmails, parseLocalData } from '../../web_demo/local_data.js';

test('labeled emails split at their "### spam" / "### ham" lines', () => {
  const text = '### spam\nSubject: win\n\nclaim now\n### HAM \r\nSubject: notes\nsee you\n';
  assert.deepEqual(parseLabeledEmails(text), {
    texts: ['Subject: win\n\nclaim now', 'Subject: notes\nsee you\n'],
    labels: [1, 0],
  });
});

test('labeled emails reject text before the first marker and empty emails', () => {
  assert.throws(() => parseLabeledEmails('\nhello\n### spam\nx'), { message: /line 2: start each email with a line "### spam" or "### ham"/ });
  assert.throws(() => parseLabeledEmails('### spam\nx\n### ham\n  \n'), { message: /email 2 is empty/ });
});

test('JSON emails accept an array or JSON lines with numeric or named labels', () => {
  const expected = { texts: ['a', 'b', 'c'], labels: [1, 0, 1] };
  assert.deepEqual(parseJsonEmails('[{"text": "a", "label": "spam"}, {"text": "b", "label": 0}, {"text": "c", "label": 1}]'), expected);
  assert.deepEqual(parseJsonEmails('{"text": "a", "label": 1}\n\n{"text": "b", "label": "ham"}\n{"text": "c", "label": true}\n'), expected);
  assert.throws(() => parseJsonEmails('[{"text": "a", "label": 2}]'), { message: /email 1: label must be 1 or "spam", 0 or "ham", got 2/ });
  assert.throws(() => parseJsonEmails('[{"body": "a", "label": 1}]'), { message: /email 1: needs a string "text"/ });
  assert.throws(() => parseJsonEmails('{"text": "a", "label": 1}\nnot json'), { message: /line 2: not JSON/ });
});

test('the format comes from the file name, else from the content', () => {
  assert.equal(detectFormat('anything', 'data.svmlight'), 'svmlight');
  assert.equal(detectFormat('anything', 'x.JSONL'), 'json');
  assert.equal(detectFormat('1 3:0.5 10:1\n-1 2:2  # comment\n# a comment line\n+1 qid:3 7:1\n'), 'svmlight');
  assert.equal(detectFormat('  [{"text": "a", "label": 1}]'), 'json');
  assert.equal(detectFormat('### spam\n1 2:3\n'), 'emails');
  assert.equal(detectFormat('Subject: 1 2:3 is not svmlight\n'), 'emails');
});

test('parseLocalData returns texts and labels, or svmlight text with its example count', () => {
  assert.deepEqual(parseLocalData('### ham\nhi'), { format: 'emails', texts: ['hi'], labels: [0] });
  assert.deepEqual(parseLocalData('1 1:1\n\n0 2:1\n'), { format: 'svmlight', svmlight: '1 1:1\n\n0 2:1\n', examples: 2 });
  assert.throws(() => parseLocalData('  \n'), { message: /no data: paste emails or choose a file/ });
  assert.throws(() => parseLocalData('[]'), { message: /no emails found/ });
});
