// Test harness for the fedleaf-server binary: start/stop it on 127.0.0.1 (random port), talk the
// v1 protocol, and build/read safetensors the way a leaf does. Used by tests/server/*.test.mjs,
// tests/js/*, tests/package/* and the benchmarks' JS tools; not a library for leaves.
//
// Two ways to talk to the server: adminClient(url) is the package's ProtocolClient (what leaves,
// pages and operators use); call() is raw fetch, for tests of the server's HTTP answers
// themselves (wrong versions, bad bodies, missing tokens), which no client would send.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { textPlan } from '../e2e/browser/executor_cases.mjs';
import { ProtocolClient } from '../../js_bindings/src/protocol/protocol_client.js';
import { PROTOCOL_VERSION } from '../../js_bindings/src/protocol/version.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '..', '..');
const buildDir = process.env.FEDLEAF_BUILD_DIR ?? 'build';
export const SERVER_BIN = path.resolve(REPO_ROOT, buildDir, 'fedleaf-server');
export const ADMIN_TOKEN = 'integration-admin-token-0123456789';
export const PROTOCOL = PROTOCOL_VERSION;

// Directories made by tempDir(): removed when the test process exits with success; a failing
// process keeps them (databases, server logs) for whoever reads the failure.
const tempDirs = [];
process.on('exit', (code) => {
  if (code !== 0) return;
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix = 'fedleaf-server-test-') {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

// Starts fedleaf-server on a free port with a database in `dir` (or `db`: a postgresql:// URL).
// Resolves once it listens.
export async function startServer({ dir = tempDir(), args = [], port = 0, db } = {}) {
  if (!existsSync(SERVER_BIN)) {
    throw new Error(`${SERVER_BIN} does not exist: build it first (FEDLEAF_BUILD_DIR=${buildDir})`);
  }
  const tokenFile = path.join(dir, 'admin.token');
  writeFileSync(tokenFile, ADMIN_TOKEN + '\n');
  const proc = spawn(SERVER_BIN, ['--db', db ?? path.join(dir, 'tasks.db'), '--port', String(port),
                                  '--admin-token-file', tokenFile, '--log-level', 'warn', ...args],
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
    exited.then(({ code, signal }) =>
      reject(new Error(`fedleaf-server exited (${code ?? signal}) before listening: ${stderr}`)));
  });
  return {
    url, dir, proc, exited,
    get stderr() { return stderr; },
    async stop() { proc.kill('SIGTERM'); return exited; },
    async kill() { proc.kill('SIGKILL'); return exited; },
  };
}

// Runs fn(server) against a server started with `options` (startServer's) and stops the server
// however fn ends; resolves to what fn resolves to.
export async function withServer(fn, options) {
  const server = await startServer(options);
  try {
    return await fn(server);
  } finally {
    await server.stop();
  }
}

/** The package's protocol client for the server at `url`, holding the admin token. */
export function adminClient(url, options = {}) {
  return new ProtocolClient({ server: url, token: ADMIN_TOKEN, ...options });
}

// Raw fetch with the protocol header; `token` goes in Authorization: Bearer.
export async function call(url, { method = 'GET', token, body, headers = {} } = {}) {
  const h = { 'Fedleaf-Version': PROTOCOL, ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  const res = await fetch(url, { method, headers: h, body });
  const bytes = Buffer.from(await res.arrayBuffer());
  let json = null;
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) json = JSON.parse(bytes);
  return { status: res.status, headers: res.headers, bytes, json };
}

// ---- safetensors (the public format: 8-byte LE header length, JSON header, packed data)

const DTYPES = { F32: Float32Array, F64: Float64Array, I64: BigInt64Array, I32: Int32Array };

// tensors: [{name, dtype, shape, data: TypedArray}], metadata: {key: string}
export function encodeSafetensors(tensors, metadata = {}) {
  const header = {};
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  if (Object.keys(metadata).length) header.__metadata__ = metadata;
  let json = Buffer.from(JSON.stringify(header));
  const padded = Buffer.alloc(Math.ceil(json.length / 8) * 8, 0x20);
  json.copy(padded);
  const out = Buffer.alloc(8 + padded.length + offset);
  out.writeBigUInt64LE(BigInt(padded.length), 0);
  padded.copy(out, 8);
  let at = 8 + padded.length;
  for (const t of tensors) {
    Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).copy(out, at);
    at += t.data.byteLength;
  }
  return out;
}

export function decodeSafetensors(buf) {
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString());
  const tensors = {};
  for (const [name, e] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [b, end] = e.data_offsets;
    const raw = Uint8Array.prototype.slice.call(buf, 8 + n + b, 8 + n + end);
    tensors[name] = { dtype: e.dtype, shape: e.shape, data: new DTYPES[e.dtype](raw.buffer) };
  }
  return { tensors, metadata: header.__metadata__ ?? {} };
}

// ---- the test population: emb/weight [10, 2] row_sparse mean_over_contributors,
// out/weight [3, 2] dense weighted_mean, out/bias [2] carried over.

// The plan of tests/server/server_fixtures.h (kTestPlan), which the C++ tests share.
export const PLAN = textPlan({ vocab: 10, dim: 2, combiner: 'mean', batchSize: 4, features: false, bias: false });

export function initialModel() {
  const emb = Float32Array.from({ length: 20 }, (_, i) => 0.01 * i);
  const w = Float32Array.from({ length: 6 }, (_, i) => 0.1 * i);
  return encodeSafetensors([
    { name: 'emb/weight', dtype: 'F32', shape: [10, 2], data: emb },
    { name: 'out/bias', dtype: 'F32', shape: [2], data: Float32Array.from([0.5, 0.5]) },
    { name: 'out/weight', dtype: 'F32', shape: [3, 2], data: w },
  ]);
}

// A train result: rows of emb/weight filled with rowValue, out/weight filled with denseValue.
// `overrides` replace parts to build malformed results.
export function trainResult({ rows, rowValue, denseValue, numExamples, loss = 0.5 }, overrides = {}) {
  const values = new Float32Array(rows.length * 2).fill(rowValue);
  const tensors = [
    { name: 'emb/weight:indices', dtype: 'I64', shape: [rows.length], data: BigInt64Array.from(rows.map(BigInt)) },
    { name: 'emb/weight:values', dtype: 'F32', shape: [rows.length, 2], data: values },
    { name: 'emb/weight:dense_shape', dtype: 'I64', shape: [2], data: BigInt64Array.from([10n, 2n]) },
    { name: 'out/weight', dtype: 'F32', shape: overrides.denseShape ?? [3, 2],
      data: new Float32Array((overrides.denseShape ?? [3, 2]).reduce((a, b) => a * b)).fill(denseValue) },
  ];
  const metadata = { kind: 'train', num_examples: String(numExamples), loss: String(loss),
                     'emb/weight:encoding': 'row_sparse' };
  return encodeSafetensors(tensors, metadata);
}

// A random spec of trainResult for PLAN, drawn with `random` (a [0, 1) generator): two distinct
// rows of emb/weight in increasing order, values in [-1, 1), 1 to 9 examples.
export function randomTrainSpec(random) {
  const first = Math.floor(random() * 9);
  return { rows: [first, first + 1 + Math.floor(random() * (9 - first))],
           rowValue: random() * 2 - 1, denseValue: random() * 2 - 1,
           numExamples: 1 + Math.floor(random() * 9) };
}

// Dense reference of round 1's model after round 0's uploads (same rules as the C++ fixtures).
// The plan's default robust clip is adaptive (src/core/aggregation/updates/update_plan.h): in a
// population's first round it bounds the root mean square of each report's values per tensor by
// kDefaultClipRms = 0.01; a scripted report fills each tensor with one value, so the clip is a
// clamp of that value to [-0.01, 0.01]. (Later rounds clip at bounds the server adapts.)
const DEFAULT_CLIP_RMS = 0.01;
const clipped = (v) => Math.max(-DEFAULT_CLIP_RMS, Math.min(DEFAULT_CLIP_RMS, Math.fround(v)));
// The default min_contributors of mean_over_contributors (update_plan.h): a row fewer reports
// sent stays unchanged.
const MIN_CONTRIBUTORS = 2;

export function referenceNextModel(uploads) {
  const model = decodeSafetensors(initialModel()).tensors;
  const emb = Array.from(model['emb/weight'].data);
  const w = Array.from(model['out/weight'].data);
  let total = 0, denseSum = 0;
  const rowSum = new Array(10).fill(0), rowWeight = new Array(10).fill(0);
  const rowReports = new Array(10).fill(0);
  for (const u of uploads) {
    total += u.numExamples;
    denseSum += u.numExamples * clipped(u.denseValue);
    for (const r of u.rows) {
      rowSum[r] += u.numExamples * clipped(u.rowValue);
      rowWeight[r] += u.numExamples;
      rowReports[r] += 1;
    }
  }
  return {
    'emb/weight': emb.map((v, i) => (rowReports[i >> 1] >= MIN_CONTRIBUTORS
      ? v + rowSum[i >> 1] / rowWeight[i >> 1] : v)),
    'out/weight': w.map((v) => v + denseSum / total),
    'out/bias': [0.5, 0.5],
  };
}

export function maxAbsDifference(modelBytes, reference) {
  const { tensors } = decodeSafetensors(modelBytes);
  let worst = 0;
  for (const [name, values] of Object.entries(reference)) {
    const got = tensors[name].data;
    if (got.length !== values.length) return Infinity;
    for (let i = 0; i < values.length; i++) worst = Math.max(worst, Math.abs(got[i] - values[i]));
  }
  return worst;
}

export async function createPopulation(url, spec = {}) {
  return adminClient(url).createPopulation({ plan: PLAN, initial_model_b64: initialModel().toString('base64'),
                                             rounds: 2, clients_per_round: 3, ...spec });
}
