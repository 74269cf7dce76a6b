// The protocol's promise (docs/design.md, "Versions"): a leaf of the previous release trains a
// round with today's server on a plan it reads. The previous release is fedleaf 0.1.0, commit
// c46fe6a: its sources are taken from the repository's history (`git archive`) into a folder of
// their own, its baseline wasm module is built there (only that target, with ccache: the sources
// it shares with today's hit the cache), and two leaves of its own js_bindings/src train with
// today's fedleaf-server (FEDLEAF_BUILD_DIR) on a plan 0.1.0 reads. Needs the commit (CI clones
// the whole history), emcmake and the native build; skipped without the commit or emcmake,
// except under CI=true where that is a failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { PROTOCOL_VERSION } from '../../js_bindings/src/index.js';
import { SMALL_TEXT_PLAN } from '../e2e/browser/executor_cases.mjs';
import { adminClient, call, REPO_ROOT, tempDir, withServer } from '../server/server_harness.mjs';

const PREVIOUS = { commit: 'c46fe6a', version: '0.1.0', protocol: '0.1' };
const SOURCES = ['CMakeLists.txt', 'cmake', 'src', 'wasm', 'js_bindings'];

const hasCommit = spawnSync('git', ['-C', REPO_ROOT, 'cat-file', '-e', `${PREVIOUS.commit}^{commit}`]).status === 0;
const hasEmcmake = spawnSync('emcmake', ['--version']).error === undefined;
const missing = !hasCommit ? `commit ${PREVIOUS.commit} is not in this clone's history`
  : !hasEmcmake ? 'emcmake (Debian\'s emscripten) is not installed' : null;
if (missing && process.env.CI === 'true') throw new Error(`CI=true but ${missing}`);

// The previous release's js_bindings with its baseline wasm module in dist/; returns its root.
function buildPrevious() {
  const root = tempDir('fedleaf-previous-');
  const archive = spawnSync('git', ['-C', REPO_ROOT, 'archive', '--format=tar', PREVIOUS.commit, ...SOURCES],
                            { maxBuffer: 1 << 30 });
  assert.equal(archive.status, 0, `git archive: ${archive.stderr}`);
  execFileSync('tar', ['-x', '-C', root], { input: archive.stdout });
  const build = path.join(root, 'build-wasm');
  mkdirSync(build);
  // As scripts/build.sh: paths relative to the tree, so its objects share today's ccache entries.
  const env = {
    ...process.env, NODE_PATH: `/usr/share/nodejs${process.env.NODE_PATH ? `:${process.env.NODE_PATH}` : ''}`,
    CCACHE_BASEDIR: root, CCACHE_NOHASHDIR: '1',
  };
  const run = (command, args) => {
    const r = spawnSync(command, args, { env, encoding: 'utf8', maxBuffer: 1 << 26 });
    assert.equal(r.status, 0, `${command} ${args.join(' ')}:\n${r.stdout.slice(-2000)}${r.stderr.slice(-2000)}`);
  };
  const launcher = spawnSync('ccache', ['--version']).error === undefined ? ['-DCMAKE_CXX_COMPILER_LAUNCHER=ccache'] : [];
  run('emcmake', ['cmake', '-S', root, '-B', build, '-DCMAKE_BUILD_TYPE=Release', ...launcher,
    '-DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=BOTH', '-DFEDLEAF_BUILD_TESTS=OFF', '-DFEDLEAF_BUILD_BENCHES=OFF']);
  run('cmake', ['--build', build, '-j2', '--target', 'fedleaf_core_js']);
  return root;
}

test(`a leaf of fedleaf ${PREVIOUS.version} trains a round with today's server`,
  { skip: missing ?? false, timeout: 30 * 60 * 1000 }, async (t) => {
    const started = Date.now();
    const root = buildPrevious();
    t.diagnostic(`fedleaf ${PREVIOUS.version}'s wasm module built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const previous = await import(pathToFileURL(path.join(root, 'js_bindings/src/index.js')).href);
    assert.equal(previous.VERSION, PREVIOUS.version);
    assert.equal(previous.PROTOCOL_VERSION, PREVIOUS.protocol);
    assert.notEqual(previous.PROTOCOL_VERSION, PROTOCOL_VERSION, 'today\'s protocol version has moved');
    const executor = await previous.createExecutor({ simd: false });
    assert.equal(executor.version, PREVIOUS.version, 'the wasm module is the previous release\'s');

    await withServer(async (server) => {
      const admin = adminClient(server.url);
      const population = await admin.createPopulation({ plan: SMALL_TEXT_PLAN, seed: 1, rounds: 1, clients_per_round: 2 });
      const texts = [['win a free prize now click here', 'meeting moved to thursday afternoon'],
        ['cheap meds online buy now', 'notes from the design review']];
      const leaves = texts.map((train) => new previous.TextLeafData(executor, { train: { texts: train, labels: [1, 0] } }));
      const summaries = await Promise.all(leaves.map((dataset) => previous.runLeaf({
        server: server.url, population: population.id, token: population.client_token, executor, dataset,
        backoff: { baseMs: 20, maxMs: 200 },
      })));
      leaves.forEach((d) => d.delete());

      assert.deepEqual(summaries.map((s) => [s.uploaded, s.stopped]), [[1, 'finished'], [1, 'finished']]);
      const status = await admin.status(population.id);
      assert.equal(status.state, 'finished');
      assert.equal(status.history[0].reports, 2);
      const [before, after] = await Promise.all([0, 1].map((round) =>
        call(`${server.url}/v1/populations/${population.id}/rounds/${round}/model`)));
      assert.equal(after.status, 200);
      assert.notDeepEqual(after.bytes, before.bytes, 'the round\'s two reports moved the model');
    });
  });
