// A visitor's own training data, pasted or read from a file, parsed in the browser (nothing here
// is uploaded: only the model update that training produces leaves the tab).
//
//   const data = parseLocalData(text, 'mail.txt');
//   // {format: 'emails', texts: [...], labels: [1, 0, ...]}   or
//   // {format: 'svmlight', svmlight: text, examples: 120}
//
// Formats:
//   emails    plain text; each email starts with a line "### spam" or "### ham" (case-insensitive)
//             and runs to the next such line. Text before the first marker is an error.
//   json      [{"text": "...", "label": 1 | 0 | "spam" | "ham"}, ...], or one such object per line
//   svmlight  "label index:value ..." per line (labels 1/+1 spam, 0/-1 ham; 1-based indices)
// Errors are Errors whose message says which email or line is wrong and how to fix it.

const MARKER = /^###[ \t]*(spam|ham)[ \t]*$/i;
const SVMLIGHT_LINE = /^[+-]?\d+(\.0*)?([ \t]+(qid:\d+|\d+:[^\s#]+))*[ \t]*(#.*)?$/;

function labelOf(value, where) {
  if (value === 1 || value === '1' || value === 'spam' || value === true) return 1;
  if (value === 0 || value === '0' || value === 'ham' || value === false) return 0;
  throw new Error(`${where}: label must be 1 or "spam", 0 or "ham", got ${JSON.stringify(value)}`);
}

/** Emails headed by "### spam" / "### ham" lines. */
export function parseLabeledEmails(text) {
  const texts = [];
  const labels = [];
  let current = null;
  const lines = String(text).split(/\r?\n/);
  lines.forEach((line, i) => {
    const marker = MARKER.exec(line);
    if (marker) {
      if (current) texts.push(current.lines.join('\n'));
      current = { lines: [] };
      labels.push(marker[1].toLowerCase() === 'spam' ? 1 : 0);
    } else if (current) {
      current.lines.push(line);
    } else if (line.trim() !== '') {
      throw new Error(`line ${i + 1}: start each email with a line "### spam" or "### ham"`);
    }
  });
  if (current) texts.push(current.lines.join('\n'));
  texts.forEach((t, i) => {
    if (t.trim() === '') throw new Error(`email ${i + 1} is empty`);
  });
  return { texts, labels };
}

/** A JSON array of {text, label}, or JSON lines of such objects. */
export function parseJsonEmails(text) {
  const trimmed = String(text).trim();
  let items;
  if (trimmed.startsWith('[')) {
    items = JSON.parse(trimmed);
  } else {
    items = trimmed.split(/\r?\n/).filter((l) => l.trim() !== '').map((l, i) => {
      try {
        return JSON.parse(l);
      } catch (e) {
        throw new Error(`line ${i + 1}: not JSON (${e.message})`);
      }
    });
  }
  const texts = [];
  const labels = [];
  items.forEach((item, i) => {
    if (!item || typeof item.text !== 'string') throw new Error(`email ${i + 1}: needs a string "text"`);
    texts.push(item.text);
    labels.push(labelOf(item.label, `email ${i + 1}`));
  });
  return { texts, labels };
}

/** Which format the text is in: 'svmlight', 'json' or 'emails'. */
export function detectFormat(text, fileName = '') {
  const name = fileName.toLowerCase();
  if (/\.(svm|svmlight|libsvm)$/.test(name)) return 'svmlight';
  if (/\.(json|jsonl)$/.test(name)) return 'json';
  const trimmed = String(text).trim();
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) return 'json';
  const all = trimmed.split(/\r?\n/);
  if (all.some((l) => MARKER.test(l))) return 'emails';
  const lines = all.filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  if (lines.length > 0 && lines.every((l) => SVMLIGHT_LINE.test(l.trim()))) return 'svmlight';
  return 'emails';
}

/**
 * Parses pasted or uploaded data. Throws an Error saying what to fix.
 * @returns {{format: 'emails'|'json', texts: string[], labels: number[]}
 *          | {format: 'svmlight', svmlight: string, examples: number}}
 */
export function parseLocalData(text, fileName = '') {
  if (String(text).trim() === '') throw new Error('no data: paste emails or choose a file');
  const format = detectFormat(text, fileName);
  if (format === 'svmlight') {
    const examples = String(text).split(/\r?\n/)
      .filter((l) => l.trim() !== '' && !l.trim().startsWith('#')).length;
    return { format, svmlight: String(text), examples };
  }
  const { texts, labels } = format === 'json' ? parseJsonEmails(text) : parseLabeledEmails(text);
  if (texts.length === 0) throw new Error('no emails found');
  return { format, texts, labels };
}
