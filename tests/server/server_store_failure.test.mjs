// A store that refuses a commit (docs/deploy.md "Runbook", event group_commit_failed): the
// server is started with a file-size limit (`ulimit -f`, SIGXFSZ ignored, so a write past it
// fails with EFBIG the way a full disk fails with ENOSPC), leaves claim and upload until the
// store refuses a commit; the answer is 503, the server stops on its own and exits 3 (so that
// systemd's Restart=on-failure restarts it) after logging why; started again without the limit
// on the same files it serves /healthz 200 and every report acknowledged before the failure is
// there. The /healthz answer while failed (503 naming the failure) is
// tests/server/router_test.cc's router_healthz_is_503_naming_the_failure_after_a_failed_group_commit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  startServer, call, createPopulation, trainResult, tempDir, SERVER_BIN, ADMIN_TOKEN,
} from './server_harness.mjs';

// fedleaf-server whose files may not grow past `limitKb` KiB; resolves once it listens.
async function startLimited(dir, limitKb) {
  const tokenFile = path.join(dir, 'admin.token');
  writeFileSync(tokenFile, ADMIN_TOKEN + '\n');
  const proc = spawn('bash', ['-c', `trap '' XFSZ; ulimit -f ${limitKb}; exec "$0" "$@"`, SERVER_BIN,
                              '--db', path.join(dir, 'tasks.db'), '--port', '0', '--admin-token-file', tokenFile],
                     { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[\d.]+:\d+)/);
      if (m) resolve(m[1]);
    });
    exited.then(({ code, signal }) => reject(new Error(`exited (${code ?? signal}) before listening: ${stderr}`)));
  });
  return { url, exited, get stderr() { return stderr; }, kill: () => proc.kill('SIGKILL') };
}

test('a commit the store refuses: 503, the server exits 3 naming it, a restart serves every acknowledged report',
  { timeout: 60_000 }, async () => {
    const dir = tempDir('fedleaf-store-failure-');
    // 512 KiB: room for the schema and the population (it needs about 150), not for the WAL of
    // many reports (SQLite checkpoints it at 4 MB).
    const server = await startLimited(dir, 512);
    try {
      const population = await createPopulation(server.url, { id: 'full', rounds: 1000, clients_per_round: 50, lease_s: 600 });
      const acknowledged = [];
      let refused = null;
      for (let i = 0; i < 5000 && !refused; i++) {
        const claim = await call(`${server.url}/v1/populations/full/tasks:claim`,
                                 { method: 'POST', token: population.client_token });
        if (claim.status !== 200) { refused = { what: 'claim', status: claim.status, json: claim.json }; break; }
        const upload = { url: `${server.url}${claim.json.upload_url}`, token: claim.json.lease_token,
                         body: trainResult({ rows: [1 + (i % 9)], rowValue: 0.25, denseValue: 0.5, numExamples: 3 }) };
        const answer = await call(upload.url, { method: 'PUT', token: upload.token, body: upload.body });
        if (answer.status === 201) acknowledged.push(upload);
        else refused = { what: 'upload', status: answer.status, json: answer.json };
      }
      assert.ok(refused, 'the store never refused a commit: the file-size limit did not bite');
      assert.equal(refused.status, 503, JSON.stringify(refused));
      assert.equal(refused.json.error.code, 'unavailable');

      const exit = await Promise.race([server.exited, new Promise((r) => setTimeout(() => r('still running'), 20_000))]);
      assert.deepEqual(exit, { code: 3, signal: null }, server.stderr);
      assert.match(server.stderr, /level=critical event=group_commit_failed step=commit .*error="sqlite store: COMMIT: /);
      assert.match(server.stderr, /level=critical event=exit_after_group_commit_failed failure="commit failed: .*" exit_status=3/);
      assert.doesNotMatch(server.stderr, /event=shutdown_complete/);

      const again = await startServer({ dir });
      try {
        const health = await call(`${again.url}/healthz`);
        assert.equal(health.status, 200);
        assert.equal(health.json.status, 'ok');
        for (const upload of acknowledged) {
          const url = upload.url.replace(server.url, again.url);
          const answer = await call(url, { method: 'PUT', token: upload.token, body: upload.body });
          assert.equal(answer.status, 200, `an acknowledged report is lost: ${url} answered ${answer.status}`);
        }
        const status = await call(`${again.url}/v1/populations/full`);
        assert.equal(status.status, 200);
        assert.equal(status.json.state, 'running');
      } finally {
        await again.stop();
      }
    } finally {
      server.kill();
    }
  });
