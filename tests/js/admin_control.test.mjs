// fedleaf-admin pause | resume | finish against a real fedleaf-server: a paused population's
// claims answer 204 "paused" and its status and ls say so; resume hands out tasks again; finish
// ends it with its reason (claims told "finished"); the state holds across a server restart on
// the same database. Bad input: a transition the state does not allow (409 naming the rule,
// nothing changed), an unknown population (404), a wrong admin token (403) and none at all (401
// from the server, exit 2 from the CLI before sending), a reason the server refuses (400) — each
// exits non-zero with the server's message, and no token is ever printed. token issue | revoke |
// ls: an issued token claims, a revoked one (the first too) gets 403, ls shows no token or hash,
// and only `token issue` prints a token (stdout, or --token-out FILE with mode 0600).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ADMIN_TOKEN, adminClient, call, createPopulation, startServer, tempDir, withServer }
  from '../server/server_harness.mjs';

const ADMIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../js_bindings/bin/fedleaf-admin.js');

// Runs fedleaf-admin with the server and admin token in the environment (HOME an empty folder:
// no config file is read); resolves to {code, stdout, stderr}.
function admin(args, env) {
  return new Promise((resolve) => {
    execFile('node', [ADMIN, ...args], { env: { PATH: process.env.PATH, HOME: tempDir('fedleaf-admin-home-'), ...env } },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }));
  });
}

test('pause, resume and finish: claims, status and ls follow, and the state holds across a restart', async () => {
  const dir = tempDir();
  let server = await startServer({ dir });
  try {
    const env = { FEDLEAF_SERVER: server.url, FEDLEAF_ADMIN_TOKEN: ADMIN_TOKEN };
    const { client_token: token } = await createPopulation(server.url, { id: 'spam', clients_per_round: 2 });
    const client = adminClient(server.url);
    const claimed = await client.claim('spam', { token });
    assert.equal(claimed.kind, 'task');

    const paused = await admin(['pause', 'spam'], env);
    assert.equal(paused.code, 0, paused.stderr);
    assert.equal(paused.stdout, 'population spam: paused, round 0 of 2\n');
    const waiting = await client.claim('spam', { token, waitS: 5 });
    assert.deepEqual([waiting.kind, waiting.paused, waiting.finished, waiting.retryAfterMs], ['no_task', true, false, 10_000]);
    const raw = await call(`${server.url}/v1/populations/spam/tasks:claim`, { method: 'POST', token, body: '{}' });
    assert.equal(raw.status, 204);
    assert.equal(raw.headers.get('fedleaf-population-state'), 'paused');
    assert.equal(raw.headers.get('retry-after'), '10');
    const screen = await admin(['status', 'spam'], env);
    assert.match(screen.stdout, /^population spam: paused, round 0 of 2 \(synchronous\)\npaused: claims get no task until `fedleaf-admin resume spam`/);
    const ls = await admin(['ls'], env);
    assert.match(ls.stdout, /\nspam\s+paused\s+0\/2/);

    // A restart on the same database: still paused.
    await server.stop();
    server = await startServer({ dir });
    env.FEDLEAF_SERVER = server.url;
    const afterRestart = await adminClient(server.url).claim('spam', { token });
    assert.equal(afterRestart.paused, true);

    const resumed = await admin(['resume', 'spam', '--json'], env);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(JSON.parse(resumed.stdout).state, 'running');
    assert.equal((await adminClient(server.url).claim('spam', { token })).kind, 'task');

    const finished = await admin(['finish', 'spam', '--reason', 'the plan was wrong'], env);
    assert.equal(finished.code, 0, finished.stderr);
    assert.equal(finished.stdout, 'population spam: finished (the plan was wrong), round 0 of 2\n');
    const told = await adminClient(server.url).claim('spam', { token });
    assert.deepEqual([told.kind, told.finished], ['no_task', true]);
    const status = await adminClient(server.url).status('spam');
    assert.deepEqual([status.state, status.finish_reason], ['finished', 'the plan was wrong']);
    assert.match((await admin(['status', 'spam'], env)).stdout,
      /^population spam: finished, round 0 of 2 \(synchronous\)\nfinished early: the plan was wrong\n\[-{30}\] 0\/2 rounds\n/);
  } finally {
    await server.stop();
  }
});

test('bad transitions, populations, tokens and reasons: the server\'s message, a non-zero exit, nothing changed', () =>
  withServer(async (server) => {
    const env = { FEDLEAF_SERVER: server.url, FEDLEAF_ADMIN_TOKEN: ADMIN_TOKEN };
    await createPopulation(server.url, { id: 'p' });
    const client = adminClient(server.url);

    const notPaused = await admin(['resume', 'p'], env);
    assert.equal(notPaused.code, 1);
    assert.equal(notPaused.stderr, 'fedleaf-admin: HTTP 409 conflict: population \'p\' is running, not paused: only a ' +
      'paused population can be resumed\n');
    assert.equal((await client.status('p')).state, 'running');
    assert.equal((await admin(['pause', 'p'], env)).code, 0);
    const twice = await admin(['pause', 'p'], env);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /^fedleaf-admin: HTTP 409 conflict: population 'p' is paused already: only a running/);

    const badReason = await admin(['finish', 'p', '--reason', 'two\nlines'], env);
    assert.equal(badReason.code, 1);
    assert.match(badReason.stderr, /^fedleaf-admin: HTTP 400 invalid_input: finish body: reason must not hold control/);
    assert.equal((await client.status('p')).state, 'paused');
    assert.equal((await admin(['finish', 'p'], env)).code, 0);
    for (const action of ['pause', 'resume', 'finish']) {
      const over = await admin([action, 'p'], env);
      assert.equal(over.code, 1, action);
      assert.match(over.stderr, /^fedleaf-admin: HTTP 409 conflict: population 'p' is finished: it cannot be/);
    }
    assert.equal((await client.status('p')).finish_reason, 'finished by an operator');

    for (const action of ['pause', 'resume', 'finish']) {
      const missing = await admin([action, 'nope'], env);
      assert.equal(missing.code, 1, action);
      assert.match(missing.stderr, /^fedleaf-admin: HTTP 404 not_found: population 'nope' does not exist/);
    }

    await createPopulation(server.url, { id: 'q' });
    const wrong = 'not-the-admin-token-0123456789';
    const forbidden = await admin(['pause', 'q'], { ...env, FEDLEAF_ADMIN_TOKEN: wrong });
    assert.equal(forbidden.code, 1);
    assert.match(forbidden.stderr, /^fedleaf-admin: HTTP 403 forbidden: the admin token does not match \(admin token from FEDLEAF_ADMIN_TOKEN\)/);
    assert.ok(!forbidden.stderr.includes(wrong) && !forbidden.stdout.includes(wrong));
    const noToken = await admin(['pause', 'q'], { FEDLEAF_SERVER: server.url });
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /no admin token/);
    const unauthorized = await call(`${server.url}/v1/populations/q:pause`, { method: 'POST' });
    assert.equal(unauthorized.status, 401);
    assert.match(unauthorized.json.error.message, /missing 'Authorization: Bearer <token>' header/);
    assert.equal((await client.status('q')).state, 'running', 'no refused call changed anything');
    const usage = await admin(['pause'], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /missing POPULATION\nusage: fedleaf-admin pause POPULATION/);
  }));

test('token issue, ls and revoke: an issued token claims, a revoked one gets 403, only issue prints a token', () =>
  withServer(async (server) => {
    const env = { FEDLEAF_SERVER: server.url, FEDLEAF_ADMIN_TOKEN: ADMIN_TOKEN };
    const { client_token: first } = await createPopulation(server.url, { id: 'spam' });
    const client = adminClient(server.url);

    const issued = await admin(['token', 'issue', 'spam'], env);
    assert.equal(issued.code, 0, issued.stderr);
    const token = issued.stdout.trim();
    assert.match(issued.stdout, /^[\x21-\x7e]+\n$/, 'stdout is the token alone');
    assert.match(issued.stderr, /client token 1 of spam/);
    assert.equal((await client.claim('spam', { token })).kind, 'task');
    const dir = tempDir('fedleaf-admin-');
    const out = path.join(dir, 'spam.token');
    const toFile = await admin(['token', 'issue', 'spam', '--token-out', out], env);
    assert.equal(toFile.code, 0, toFile.stderr);
    assert.equal(toFile.stdout, '');
    assert.equal(statSync(out).mode & 0o777, 0o600);
    assert.equal((await client.claim('spam', { token: readFileSync(out, 'utf8').trim() })).kind, 'task');

    const revoked = await admin(['token', 'revoke', 'spam', '0'], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal(revoked.stdout, 'client token 0 of spam: revoked\n');
    await assert.rejects(client.claim('spam', { token: first }), (error) => error.status === 403 &&
      /does not match a live token of population 'spam'/.test(error.message));
    assert.equal((await client.claim('spam', { token })).kind, 'task', 'the other tokens still claim');

    const ls = await admin(['token', 'ls', 'spam'], env);
    assert.equal(ls.code, 0, ls.stderr);
    const rows = ls.stdout.trim().split('\n').map((line) => line.trim().split(/\s+/));
    assert.deepEqual(rows.map((row) => [row[0], row[2]]), [['ID', 'STATE'], ['0', 'revoked'], ['1', 'live'], ['2', 'live']]);
    const listed = JSON.parse((await admin(['token', 'ls', 'spam', '--json'], env)).stdout);
    assert.deepEqual(listed.tokens.map((t) => t.revoked_at === null), [false, true, true]);
    for (const shown of [ls.stdout, JSON.stringify(listed), revoked.stdout, revoked.stderr, issued.stderr]) {
      for (const secret of [first, token, ADMIN_TOKEN]) {
        assert.ok(!shown.includes(secret), 'no token is printed but the one issued');
        assert.ok(!shown.includes(createHash('sha256').update(secret).digest('hex')), 'nor its hash');
      }
    }

    const twice = await admin(['token', 'revoke', 'spam', '0'], env);
    assert.equal(twice.code, 1);
    assert.equal(twice.stderr, 'fedleaf-admin: HTTP 409 conflict: client token 0 of population \'spam\' is revoked already\n');
    const unknown = await admin(['token', 'revoke', 'spam', '9'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^fedleaf-admin: HTTP 404 not_found: population 'spam' has no client token 9/);
    const nope = await admin(['token', 'issue', 'nope'], env);
    assert.equal(nope.code, 1);
    assert.match(nope.stderr, /^fedleaf-admin: HTTP 404 not_found: population 'nope' does not exist/);
    const forbidden = await admin(['token', 'issue', 'spam'], { ...env, FEDLEAF_ADMIN_TOKEN: first });
    assert.equal(forbidden.code, 1);
    assert.match(forbidden.stderr, /^fedleaf-admin: HTTP 403 forbidden: the admin token does not match/);
    assert.equal(forbidden.stdout, '');
    assert.ok(!forbidden.stderr.includes(first));
    for (const [args, message] of [
      [['token', 'bogus', 'spam'], /unknown token action 'bogus' \(actions: issue, revoke, ls\)/],
      [['token', 'revoke', 'spam'], /missing ID \(token revoke POPULATION ID\)/],
      [['token', 'revoke', 'spam', 'x'], /ID must be a token id \(0, 1, \.\.\.\), got 'x'/],
      [['token', 'ls', 'spam', '7'], /unexpected argument '7'/],
      [['token', 'issue'], /missing POPULATION/],
      [['token', 'ls', 'spam', '--token-out', out], /--token-out is for token issue/],
    ]) {
      const bad = await admin(args, env);
      assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
      assert.match(bad.stderr, message);
    }
    assert.equal((await client.listClientTokens('spam')).tokens.length, 3, 'no refused call issued a token');
  }));
