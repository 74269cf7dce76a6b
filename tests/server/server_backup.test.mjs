// Backups while serving (docs/deploy.md "Backups"): `fedleaf-server backup` of a SQLite server,
// and pg_dump of a PostgreSQL one (with FEDLEAF_TEST_PG_URL), taken while leaves claim and
// upload, then SIGKILL, the backup restored in place, restart: every report acknowledged before
// the backup began is in the restored database (the same bytes again get the first answer, 200),
// the population goes on to its end, and a lease the restored database never saw is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import {
  startServer, call, createPopulation, trainResult, randomTrainSpec, tempDir, SERVER_BIN,
} from './server_harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const PG_BIN = process.env.FEDLEAF_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const pgMissing = process.env.FEDLEAF_TEST_PG_URL ? null : 'FEDLEAF_TEST_PG_URL is not set';
if (pgMissing && process.env.CI === 'true') throw new Error(`CI=true but ${pgMissing}`);

// A fresh (dropped and created) database on the cluster of FEDLEAF_TEST_PG_URL; returns its URL.
function createDatabase(name) {
  const url = new URL(process.env.FEDLEAF_TEST_PG_URL);
  const args = ['-h', url.hostname, '-p', url.port || '5432', '-U', url.username || 'postgres'];
  const dropped = spawnSync(path.join(PG_BIN, 'dropdb'), [...args, '--force', '--if-exists', name], { encoding: 'utf8' });
  if (dropped.status !== 0) throw new Error(`dropdb ${name}: ${dropped.stderr}`);
  const made = spawnSync(path.join(PG_BIN, 'createdb'), [...args, name], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`createdb ${name}: ${made.stderr}`);
  url.pathname = `/${name}`;
  return url.toString();
}

function runBackup(args) { return run(SERVER_BIN, ['backup', ...args]); }
function runTool(name, args) { return run(path.join(PG_BIN, name), args); }

// Runs `command` without blocking the event loop (the leaves go on meanwhile).
function run(command, args) {
  return new Promise((resolve) => {
    const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    proc.stdout.on('data', (d) => { stdout += d; });
    proc.stderr.on('data', (d) => { stderr += d; });
    proc.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

// Leaves claim and upload on a server started with `args` (and `db`); once round 2 is open and
// 24 reports are acknowledged, `backup()` runs while they go on; after 20 more reports the server is SIGKILLed, `restore()`
// puts the backup in place and the server starts again. Checks that every report acknowledged
// before the backup began is there and that the population finishes. Resolves to what the
// diagnostic shows.
async function backupMidRun({ dir, db, args, backup, restore }) {
  const ctx = { server: await startServer({ dir, db, args }) };
  const rounds = 6;
  // Leases of 10 s: a task the backup has leased but whose report came after it (acknowledged,
  // then lost with the restore) stays leased in the restored database until its lease ends —
  // nobody uploads it again — and a round whose tasks are all so held waits that long.
  const population = await createPopulation(ctx.server.url, {
    id: 'bk', rounds, clients_per_round: 12, over_selection: 2, lease_s: 10,
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
      if (claim.status === 204 || claim.status === 503) { await sleep(10); continue; }
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
        assert.ok([200, 403, 404, 409, 410, 503].includes(res.status), `upload: ${res.status} ${res.bytes}`);
      }
    }
  }
  const status = async () => (await call(`${ctx.server.url}/v1/populations/bk`)).json;

  // A leaf that fails stops the wait at once (not the test's timeout) with its error.
  let leafError = null;
  const clients = Array.from({ length: 8 }, () => client().catch((e) => { leafError ??= e; }));
  async function until(what, condition) {
    for (const deadline = Date.now() + 120_000; !(await condition());) {
      if (leafError) throw leafError;
      if (Date.now() > deadline) throw new Error(`waited 120 s for ${what}`);
      await sleep(20);
    }
  }
  let backupStartedAt;
  let shown;
  try {
    // Round 2 open is not enough: the status can show it before this process has read the 201
    // of the upload that closed round 1 (24 reports acknowledged at the earliest).
    await until('round 2 and 24 reports acknowledged',
      async () => acknowledged.length >= 24 && (await status()).round >= 2);
    backupStartedAt = performance.now();
    shown = await backup();
    const inBackup = acknowledged.filter((a) => a.at < backupStartedAt).length;
    // Reports the backup may not hold, then the crash.
    await until('20 reports after the backup', () => acknowledged.length >= inBackup + 20);
    await ctx.server.kill();
    await restore();
    restoredAt = performance.now();
    ctx.server = await startServer({ dir, db, args });
    await until('the population to finish', async () => (await status()).state === 'finished');
  } finally {
    done = true;
    await Promise.all(clients);
  }
  if (leafError) throw leafError;

  try {
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
    return `${shown}; ${before.length} reports before it, ${acknowledged.length} in all; uploads of ` +
           `leases from before the restore, by status: ${JSON.stringify(Object.fromEntries(afterRestore))}`;
  } finally {
    await ctx.server.stop();
  }
}

test('a SQLite backup taken mid-run restores every report acknowledged before it, and the run finishes', async (t) => {
  const dir = tempDir('fedleaf-backup-');
  const db = path.join(dir, 'tasks.db');
  const backupDir = path.join(dir, 'backup');
  const diagnostic = await backupMidRun({
    dir, args: ['--keep-models', '2'],
    async backup() {
      const out = await runBackup(['--db', db, '--to', backupDir, '--pages-per-step', '4']);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /^backup of .*tasks\.db: .*backup\/tasks\.db \(\d+ pages.*\d+ model files/m);
      assert.match(out.stderr, /^backup: database \d+\/\d+ pages \(100%\)$/m);
      assert.match(out.stderr, /^backup: model files (\d+)\/\1 /m);
      return out.stdout.trim();
    },
    // docs/deploy.md "Backups": the database, its -wal and -shm and its model directory go; the
    // backup's database and model directory come back.
    async restore() {
      for (const f of ['tasks.db', 'tasks.db-wal', 'tasks.db-shm', 'tasks.db-models']) {
        rmSync(path.join(dir, f), { recursive: true, force: true });
      }
      cpSync(path.join(backupDir, 'tasks.db'), db);
      cpSync(path.join(backupDir, 'tasks.db-models'), path.join(dir, 'tasks.db-models'), { recursive: true });
    },
  });
  t.diagnostic(diagnostic);
});

// docs/deploy.md "Backups", PostgreSQL: pg_dump while the server serves, pg_restore into a new
// database of the same name.
test('a pg_dump taken mid-run restores every report acknowledged before it, and the run finishes',
     { skip: pgMissing ?? false }, async (t) => {
  const dir = tempDir('fedleaf-backup-pg-');
  const name = 'fedleaf_backup_test';
  const db = createDatabase(name);
  const dump = path.join(dir, 'fedleaf.dump');
  const diagnostic = await backupMidRun({
    dir, db, args: ['--keep-models', '2'],
    async backup() {
      const out = await runTool('pg_dump', ['-Fc', '-f', dump, db]);
      assert.equal(out.code, 0, out.stderr);
      return `pg_dump: ${statSync(dump).size} bytes`;
    },
    async restore() {
      createDatabase(name);
      const out = await runTool('pg_restore', ['--no-owner', '-d', db, dump]);
      assert.equal(out.code, 0, out.stderr);
    },
  });
  t.diagnostic(diagnostic);
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
