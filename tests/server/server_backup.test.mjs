// Online backup of a SQLite server (`fedleaf-server backup`, docs/deploy.md "Backups"): a backup
// taken while leaves claim and upload, then SIGKILL, restore the backup in place, restart: every
// report acknowledged before the backup began is in the restored database (the same bytes again
// get the first answer, 200), the population goes on to its end, and a lease the restored
// database never saw is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import {
  startServer, call, createPopulation, trainResult, randomTrainSpec, tempDir, SERVER_BIN,
} from './server_harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function runBackup(args) {
  return new Promise((resolve) => {
    const proc = spawn(SERVER_BIN, ['backup', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    proc.stdout.on('data', (d) => { stdout += d; });
    proc.stderr.on('data', (d) => { stderr += d; });
    proc.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

test('a backup taken mid-run restores every report acknowledged before it, and the run finishes', async (t) => {
  const dir = tempDir('fedleaf-backup-');
  const db = path.join(dir, 'tasks.db');
  const serverArgs = ['--keep-models', '2'];
  const ctx = { server: await startServer({ dir, args: serverArgs }) };
  const rounds = 6;
  const population = await createPopulation(ctx.server.url, {
    id: 'bk', rounds, clients_per_round: 12, over_selection: 2, lease_s: 600,
  });
  let seed = 4242;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };

  const acknowledged = [];  // {uploadUrl, leaseToken, body, at} of every 201
  const afterRestore = new Map();  // status -> count, uploads of leases claimed before the restore
  let restoredAt = Infinity;
  let done = false;
  async function answered(fn) {
    for (;;) {
      if (done) return null;
      try { return await fn(ctx.server.url); } catch { await sleep(10); }
    }
  }
  async function client() {
    while (!done) {
      const claim = await answered((url) => call(`${url}/v1/populations/bk/tasks:claim`,
                                                 { method: 'POST', token: population.client_token }));
      if (!claim) return;
      if (claim.headers.get('fedleaf-population-state') === 'finished') return;
      if (claim.status === 204) { await sleep(10); continue; }
      assert.equal(claim.status, 200, `claim: ${claim.status} ${claim.bytes}`);
      const claimedAt = performance.now();
      const body = trainResult(randomTrainSpec(random));
      await sleep(2 + random() * 10);
      const res = await answered((url) => call(`${url}${claim.json.upload_url}`,
                                               { method: 'PUT', token: claim.json.lease_token, body }));
      if (!res) return;
      if (claimedAt < restoredAt && performance.now() > restoredAt) {
        afterRestore.set(res.status, (afterRestore.get(res.status) ?? 0) + 1);
      }
      if (res.status === 201) {
        acknowledged.push({ uploadUrl: claim.json.upload_url, leaseToken: claim.json.lease_token, body,
                            at: performance.now() });
      } else {
        assert.ok([200, 403, 404, 409, 410].includes(res.status), `upload: ${res.status} ${res.bytes}`);
      }
    }
  }
  const status = async () => (await call(`${ctx.server.url}/v1/populations/bk`)).json;

  const clients = Array.from({ length: 8 }, () => client());
  let backup;
  let backupStartedAt;
  try {
    while ((await status()).round < 2) await sleep(20);
    backupStartedAt = performance.now();
    backup = await runBackup(['--db', db, '--to', path.join(dir, 'backup'), '--pages-per-step', '4']);
    assert.equal(backup.code, 0, backup.stderr);
    const inBackup = acknowledged.filter((a) => a.at < backupStartedAt).length;
    // Reports the backup may not hold, then the crash.
    while (acknowledged.length < inBackup + 20) await sleep(10);
    await ctx.server.kill();
    for (const f of ['tasks.db', 'tasks.db-wal', 'tasks.db-shm', 'tasks.db-models']) {
      rmSync(path.join(dir, f), { recursive: true, force: true });
    }
    cpSync(path.join(dir, 'backup', 'tasks.db'), db);
    cpSync(path.join(dir, 'backup', 'tasks.db-models'), path.join(dir, 'tasks.db-models'), { recursive: true });
    restoredAt = performance.now();
    ctx.server = await startServer({ dir, args: serverArgs });
    for (;;) {
      const s = await status();
      if (s.state === 'finished') break;
      await sleep(50);
    }
  } finally {
    done = true;
    await Promise.all(clients).catch(() => {});
  }

  try {
    assert.match(backup.stdout, /^backup of .*tasks\.db: .*backup\/tasks\.db \(\d+ pages.*\d+ model files/m);
    assert.match(backup.stderr, /^backup: database \d+\/\d+ pages \(100%\)$/m);
    assert.match(backup.stderr, /^backup: model files (\d+)\/\1 /m);
    const before = acknowledged.filter((a) => a.at < backupStartedAt);
    assert.ok(before.length >= 24, `only ${before.length} reports before the backup`);
    for (const a of before) {
      const again = await call(`${ctx.server.url}${a.uploadUrl}`, { method: 'PUT', token: a.leaseToken, body: a.body });
      assert.equal(again.status, 200, `report ${a.uploadUrl} acknowledged before the backup: ${again.status} ${again.bytes}`);
    }
    const final = await status();
    assert.equal(final.round, rounds);
    const trained = final.history.filter((r) => r.round < rounds);
    assert.equal(trained.length, rounds);
    for (const r of trained) assert.ok(r.reports >= 12, JSON.stringify(r));
    const model = await call(`${ctx.server.url}/v1/populations/bk/rounds/${rounds}/model`);
    assert.equal(model.status, 200);
    t.diagnostic(`backup: ${backup.stdout.trim()}; ${before.length} reports before it, ` +
                 `${acknowledged.length} in all; uploads of leases from before the restore, by status: ` +
                 JSON.stringify(Object.fromEntries(afterRestore)));
  } finally {
    await ctx.server.stop();
  }
});

test('backup refuses a bad --db or --to naming the path, writes nothing, exits non-zero', async () => {
  const dir = tempDir('fedleaf-backup-bad-');
  const server = await startServer({ dir });
  await server.stop();
  const to = path.join(dir, 'b');
  const cases = [
    [['--db', path.join(dir, 'absent.db'), '--to', to], 1, `no database at '${path.join(dir, 'absent.db')}'`],
    [['--db', path.join(dir, 'admin.token'), '--to', to], 1, `'${path.join(dir, 'admin.token')}': file is not a database`],
    [['--db', path.join(dir, 'tasks.db'), '--to', path.join(dir, 'no', 'b')], 1, `'${path.join(dir, 'no')}' (where`],
    [['--db', 'postgresql://u@h/db', '--to', to], 2, 'pg_dump'],
    [['--db', path.join(dir, 'tasks.db')], 'non-zero', '--to is required'],
  ];
  const listing = readdirSync(dir).sort();
  for (const [args, code, message] of cases) {
    const r = spawnSync(SERVER_BIN, ['backup', ...args], { encoding: 'utf8' });
    if (code === 'non-zero') assert.notEqual(r.status, 0);
    else assert.equal(r.status, code, `${args.join(' ')}: ${r.stderr}`);
    assert.ok(r.stderr.includes(message), `${args.join(' ')}: ${r.stderr}`);
    assert.deepEqual(readdirSync(dir).sort(), listing);
  }
  assert.ok(!existsSync(to));
  const help = spawnSync(SERVER_BIN, ['--help'], { encoding: 'utf8' });
  assert.match(help.stdout, /fedleaf-server backup --db FILE --to DIR/);
});
