// scripts/demo.sh end to end, small: 2 leaves, 2 rounds, on a free port. The table must have a
// row per round and the run must end with the final accuracy and the demo page's link.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

test('scripts/demo.sh trains a small federation and prints one row per round', async () => {
  const port = await freePort();
  const { stdout } = await promisify(execFile)('bash',
    [path.join(root, 'scripts/demo.sh'), '--clients', '2', '--rounds', '2', '--port', String(port)],
    { cwd: root, maxBuffer: 16 << 20 });
  const rows = stdout.split('\n').filter((l) => /^\s+\d+\s+2\s+\d+\s+[\d.]+\s+[\d.]+%/.test(l));
  assert.equal(rows.length, 2, stdout);
  assert.match(stdout, /final eval accuracy \d+\.\d+% after 2 rounds \(2 leaves, non-IID\)/);
  assert.match(stdout, new RegExp(`demo page: http://127\\.0\\.0\\.1:${port}/\\?population=`));
});

// Every value is checked before the minutes of setup and build: a flag without its value stopped
// at "$2: unbound variable", and --port 70000 or --prefetch abc failed only after the build.
test('scripts/demo.sh rejects bad flags with status 2, naming the flag', async () => {
  for (const [args, message] of [
    [['--clients', 'x'], /--clients takes an integer in \[1, 256\], got 'x'/],
    [['--clients'], /--clients needs a value/],
    [['--port', '70000'], /--port takes an integer in \[1, 65000\], got '70000'/],
    [['--prefetch', '-3'], /--prefetch takes an integer in \[0, 16\], got '-3'/],
    [['--rounds', '99999999999999999999'], /--rounds takes an integer/],
    [['--store', 'postgres', '--servers', '0'], /--servers takes an integer in \[1, 16\]/],
    [['--bogus'], /unknown argument '--bogus'/],
    [['--mode', 'async'], /--mode is synchronous or buffered, got 'async'/],
    [['--buffer-size', '4'], /--buffer-size needs --mode buffered/],
    [['--mode', 'buffered', '--clients', '4', '--buffer-size', '5'], /--buffer-size takes an integer in \[1, 4\], got '5'/],
  ]) {
    await assert.rejects(promisify(execFile)('bash', [path.join(root, 'scripts/demo.sh'), ...args]),
      (e) => e.code === 2 && message.test(e.stderr), args.join(' '));
  }
});
