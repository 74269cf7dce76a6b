// deploy/haproxy-tls.cfg, as shipped, in front of a real fedleaf-server: a self-signed
// certificate for 127.0.0.1 made with the openssl CLI, haproxy started with the file and its
// addresses in the environment (every one on 127.0.0.1, free ports). Over HTTPS, with the test's
// certificate trusted through NODE_EXTRA_CA_CERTS, child processes get /healthz and claim a task
// with the package's ProtocolClient, and fedleaf-admin creates and shows a population; without
// the certificate trusted, the same request fails verification. Plain HTTP to the TLS port gets
// no answer; the plain-HTTP port answers only a redirect to https, and ACME challenges (certbot). Needs Debian's haproxy and
// openssl: skipped without them, except under CI=true where that is a failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

import { ADMIN_TOKEN, REPO_ROOT, tempDir, withServer } from '../server/server_harness.mjs';
import { textPlan } from '../e2e/browser/executor_cases.mjs';

const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));
const OPENSSL = ['/usr/bin/openssl'].find((p) => existsSync(p));
const missing = !HAPROXY ? 'haproxy is not installed' : !OPENSSL ? 'openssl is not installed' : null;
if (missing && process.env.CI === 'true') throw new Error(`CI=true but ${missing}`);

const CONFIG = path.join(REPO_ROOT, 'deploy', 'haproxy-tls.cfg');
const ADMIN = path.join(REPO_ROOT, 'js_bindings', 'bin', 'fedleaf-admin.js');
const PROTOCOL_CLIENT = pathToFileURL(path.join(REPO_ROOT, 'js_bindings', 'src', 'protocol', 'protocol_client.js')).href;

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// A self-signed certificate for 127.0.0.1 (its own CA) and haproxy's PEM: chain then key.
function makeCertificate(dir) {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync(OPENSSL, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert],
  { stdio: 'ignore' });
  const pem = path.join(dir, 'haproxy.pem');
  writeFileSync(pem, readFileSync(cert, 'utf8') + readFileSync(key, 'utf8'), { mode: 0o600 });
  return { cert, pem };
}

// GET over https trusting `ca` only; resolves to {status, body}.
function httpsGet(url, ca) {
  return new Promise((resolve, reject) => {
    https.get(url, { ca }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject);
  });
}

async function startHaproxy(env, httpsUrl, ca) {
  const proc = spawn(HAPROXY, ['-db', '-f', CONFIG], { env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  for (let i = 0; i < 200 && proc.exitCode === null; i++) {
    const answer = await httpsGet(`${httpsUrl}/healthz`, ca).catch(() => null);
    if (answer?.status === 200) return { proc, exited };
    await sleep(50);
  }
  proc.kill('SIGKILL');
  throw new Error(`haproxy did not serve ${httpsUrl}/healthz: ${stderr}`);
}

function node(args, env) {
  return new Promise((resolve) => {
    execFile('node', args, { env: { PATH: process.env.PATH, HOME: tempDir('fedleaf-tls-home-'), ...env } },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }));
  });
}

// A child process's script: /healthz, then a claim through ProtocolClient, printed as JSON.
const CLAIM_SCRIPT = `
const { ProtocolClient } = await import(process.env.PROTOCOL_CLIENT);
const [server, population, token] = process.argv.slice(1);
const health = await (await fetch(server + '/healthz')).json();
const claim = await new ProtocolClient({ server, token }).claim(population);
console.log(JSON.stringify({ health, claim: claim.kind, round: claim.task?.round }));
`;

test('haproxy-tls.cfg terminates TLS for fedleaf-server: leaves and fedleaf-admin over https, plain HTTP refused',
  { skip: missing ?? false, timeout: 120_000 }, () => withServer(async (server) => {
    const dir = tempDir('fedleaf-tls-');
    const { cert, pem } = makeCertificate(dir);
    const ca = readFileSync(cert);
    const [tlsPort, httpPort] = [await freePort(), await freePort()];
    const httpsUrl = `https://127.0.0.1:${tlsPort}`;
    // certbot's standalone server during a renewal: answers the challenge it was given.
    const acme = http.createServer((req, res) => res.end(`acme ${req.url}`));
    await new Promise((resolve) => acme.listen(0, '127.0.0.1', resolve));
    const lb = await startHaproxy({
      FEDLEAF_TLS_BIND: `127.0.0.1:${tlsPort}`, FEDLEAF_HTTP_BIND: `127.0.0.1:${httpPort}`, FEDLEAF_TLS_PEM: pem,
      FEDLEAF_BACKEND: new URL(server.url).host, FEDLEAF_ACME_BACKEND: `127.0.0.1:${acme.address().port}`,
      // haproxy can change users only as root; run by another user it keeps its own.
      ...(process.getuid() === 0 ? {} : { FEDLEAF_HAPROXY_KEEP_USER: '1' }),
    }, httpsUrl, ca);
    try {
      const trusted = { NODE_EXTRA_CA_CERTS: cert, FEDLEAF_SERVER: httpsUrl, FEDLEAF_ADMIN_TOKEN: ADMIN_TOKEN };
      const planFile = path.join(dir, 'plan.json');
      writeFileSync(planFile, JSON.stringify(textPlan({ vocab: 64, dim: 2, bias: false })));
      const created = await node([ADMIN, 'create', '--plan', planFile, '--id', 'tls', '--seed', '1', '--show-token'], trusted);
      assert.equal(created.code, 0, created.stderr);
      const [id, token] = created.stdout.trim().split('\n');
      assert.equal(id, 'tls');

      const claimed = await node(['--input-type=module', '-e', CLAIM_SCRIPT, httpsUrl, 'tls', token],
        { ...trusted, PROTOCOL_CLIENT });
      assert.equal(claimed.code, 0, claimed.stderr);
      const answer = JSON.parse(claimed.stdout);
      assert.equal(answer.health.status, 'ok');
      assert.deepEqual([answer.claim, answer.round], ['task', 0]);

      const status = await node([ADMIN, 'status', 'tls'], trusted);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /^population tls: running, round 0 of 1/);

      // Without the certificate trusted the same call fails verification: the TLS is real.
      const untrusted = await node([ADMIN, 'status', 'tls'], { FEDLEAF_SERVER: httpsUrl });
      assert.equal(untrusted.code, 1);
      assert.match(untrusted.stderr, /cannot reach https:\/\/127\.0\.0\.1:\d+: fetch failed \(self[- ]signed certificate/);

      // Plain HTTP to the TLS port: no HTTP answer, the connection is dropped.
      await assert.rejects(fetch(`http://127.0.0.1:${tlsPort}/healthz`), TypeError);
      // The plain-HTTP port redirects to https and passes nothing on.
      const redirect = await fetch(`http://127.0.0.1:${httpPort}/v1/populations/tls`, { redirect: 'manual' });
      assert.equal(redirect.status, 308);
      assert.match(redirect.headers.get('location'), /^https:\/\/127\.0\.0\.1:\d+\/v1\/populations\/tls$/);
      // ... except ACME challenges, which go to certbot.
      const challenge = await fetch(`http://127.0.0.1:${httpPort}/.well-known/acme-challenge/t0k3n`);
      assert.equal(await challenge.text(), 'acme /.well-known/acme-challenge/t0k3n');
      // HSTS on the HTTPS answers.
      const hsts = await new Promise((resolve, reject) => {
        https.get(`${httpsUrl}/healthz`, { ca }, (res) => { res.resume(); resolve(res.headers['strict-transport-security']); })
          .on('error', reject);
      });
      assert.equal(hsts, 'max-age=31536000');
    } finally {
      lb.proc.kill('SIGTERM');
      await lb.exited;
      acme.close();
    }
  }));
