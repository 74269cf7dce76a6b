// runLeaf on a buffered population ("mode": "buffered", FedBuff) against a real fedleaf-server:
// a task's round is the version it trains on; with prefetch the leaf claims the next version's
// task and downloads that version's rows (model:select by version) while the current task trains;
// it never holds two train tasks of one version; a prefetched task whose version was superseded
// meanwhile still uploads (its staleness is the server's business), and every upload is accepted
// or refused with the documented status (409 stale, 410 training over). The server records each
// version's staleness from its task records.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';

import { createExecutor, runLeaf, TextLeafData } from '../../js_bindings/src/index.js';
import { loadSpamAssassin } from '../../js_bindings/src/datasets/spamassassin.js';
import { spamAssassinClientData } from '../../js_bindings/src/node/simulate.js';
import { withServer, adminClient } from '../server/server_harness.mjs';
import { textPlan } from '../e2e/browser/executor_cases.mjs';

const PLAN = textPlan({ vocab: 16384, dim: 8, optimizer: { type: 'adam', learning_rate: 0.03 }, batchSize: 16 });
const fast = { baseMs: 20, maxMs: 200 };

let executor;
let records;
before(async () => {
  executor = await createExecutor();
  const all = await loadSpamAssassin();
  records = all.filter((_, i) => i % 10 === 0);
});

function leafData(index, count) {
  return new TextLeafData(executor, spamAssassinClientData(records, index, count));
}

async function createBuffered(server, fields) {
  return adminClient(server.url).createPopulation({ plan: PLAN, seed: 1, mode: 'buffered', ...fields });
}

// Follows one leaf's events: the train tasks it holds (claimed, not yet uploaded or dropped), and
// each moment it held two of one version (runLeaf swallows an observer's exceptions: assert
// doubles is empty afterwards).
function holdings(name) {
  const held = new Map();  // task id → version
  const log = [];
  const doubles = [];
  return {
    log,
    doubles,
    onEvent(event) {
      log.push(event);
      if (event.type === 'claimed' && event.task.kind === 'train') {
        const version = event.task.round;
        if ([...held.values()].includes(version)) doubles.push(`${name}: two tasks of version ${version}`);
        held.set(event.task.task_id, version);
      }
      if (event.type === 'uploaded' || event.type === 'dropped') held.delete(event.taskId);
    },
  };
}

// Every upload is accepted (201/200) or refused as the protocol documents for a buffered
// population: 409 naming the staleness, 410 once its version is closed or training is over.
function assertUploadsAnswered(log, name) {
  for (const e of log.filter((x) => x.type === 'uploaded')) {
    assert.ok(e.status === 201 || e.status === 200, `${name}: upload of task ${e.taskId} answered ${e.status}`);
  }
  for (const e of log.filter((x) => x.type === 'dropped')) {
    if (e.status === 409) {
      assert.match(e.reason, /staleness \d+ exceeds max_staleness \d+/, `${name}: ${e.reason}`);
    } else {
      assert.equal(e.status, 410, `${name}: task ${e.taskId} dropped: ${e.status} ${e.reason}`);
    }
  }
}

// Every closed version recorded the staleness of exactly its reports, none past max_staleness.
function assertRecordedStaleness(status, maxStaleness) {
  for (const entry of status.history.filter((h) => h.status === 'closed' && h.round < status.rounds)) {
    const { counts, mean, max } = entry.staleness;
    const reports = Object.values(counts).reduce((a, b) => a + b, 0);
    assert.equal(reports, entry.reports, `version ${entry.round}: staleness of every report`);
    const sum = Object.entries(counts).reduce((a, [s, n]) => a + Number(s) * n, 0);
    assert.equal(mean, sum / reports);
    assert.equal(max, Math.max(...Object.keys(counts).map(Number)));
    assert.ok(max <= maxStaleness, `version ${entry.round}: staleness ${max}`);
  }
}

test('prefetch by version: the next version\'s task is claimed and its rows downloaded while the current one trains, and a superseded task still uploads',
  () => withServer(async (server) => {
    // K = 1: every accepted report publishes a version; max_staleness 1.
    const pop = await createBuffered(server, { rounds: 4, buffer_size: 1, concurrency: 3, max_staleness: 1 });
    const data = leafData(0, 2);
    const other = leafData(1, 2);
    const leaf = holdings('leaf');
    const requests = [];  // [event index when sent, url]
    const recording = (url, init) => {
      requests.push([leaf.log.length, String(url)]);
      return fetch(url, init);
    };

    // The leaf's first task trains until a task of a later version is downloaded: that needs the
    // prefetched claim to ask for the next version (min_round) and to get it once another leaf's
    // report publishes it. Without prefetch by version the gate never opens (60 s: a failure).
    let first;
    let reporter;
    let opened;
    const nextVersionDownloaded = new Promise((resolve, reject) => {
      opened = resolve;
      setTimeout(() => reject(new Error('no task of a later version was downloaded while the first trained')), 60_000).unref();
    });
    const gated = Object.create(executor);
    gated.runTask = async (task, model, dataset, options) => {
      if (task.task_id === first.task_id) await nextVersionDownloaded;
      return executor.runTask(task, model, dataset, options);
    };
    const summary = await runLeaf({
      server: server.url, population: pop.id, token: pop.client_token, executor: gated, dataset: data,
      prefetch: 1, backoff: fast, fetch: recording,
      onEvent: (e) => {
        leaf.onEvent(e);
        if (e.type === 'claimed' && !first) {
          first = e.task;
          // Another leaf's one report publishes version 1 (first's version 0 is superseded).
          reporter = runLeaf({ server: server.url, population: pop.id, token: pop.client_token, executor,
            dataset: other, prefetch: 0, maxTasks: 1, backoff: fast });
        }
        const claimed = (id) => leaf.log.find((x) => x.type === 'claimed' && x.task.task_id === id)?.task;
        if (e.type === 'downloaded' && claimed(e.taskId)?.round > first.round) opened();
      },
    });
    assert.equal((await reporter).uploaded, 1);

    const at = (type, taskId) => leaf.log.findIndex((e) => e.type === type && (e.taskId ?? e.task?.task_id) === taskId);
    const firstUploadEnds = Math.max(at('uploaded', first.task_id), at('dropped', first.task_id));
    const next = leaf.log.find((e) => e.type === 'claimed' && e.task.round > first.round).task;
    assert.equal(first.round, 0);
    assert.equal(next.round, 1, 'the prefetched claim is for the next version');
    assert.ok(at('claimed', next.task_id) < at('trained', first.task_id), 'claimed while the first trains');
    assert.ok(at('downloaded', next.task_id) < firstUploadEnds, 'its model downloaded before the first upload ends');
    const select = requests.find(([, url]) => url.endsWith(`/populations/${pop.id}/rounds/1/model:select`));
    assert.ok(select && select[0] < at('trained', first.task_id), 'model:select by version 1 while the first trains');

    // The first task (version 0) was superseded by version 1 before it finished: it still uploads,
    // and the server folds it at staleness 1 into version 1.
    assert.equal(leaf.log[firstUploadEnds].type, 'uploaded');
    assertUploadsAnswered(leaf.log, 'leaf');
    assert.deepEqual(leaf.doubles, []);
    assert.equal(summary.stopped, 'finished');
    const status = await adminClient(server.url).status(pop.id);
    assert.equal(status.state, 'finished');
    assert.deepEqual(status.history[0].staleness, { mean: 0, max: 0, counts: { 0: 1 } }, 'the reporter\'s');
    assert.deepEqual(status.history[1].staleness, { mean: 1, max: 1, counts: { 1: 1 } }, 'the first task\'s');
    assertRecordedStaleness(status, 1);
    data.delete();
    other.delete();
  }));

// Prefetch 2 starts two claims at once; each must ask past the version the one before brought.
test('leaves prefetching two tasks never hold two train tasks of one version, and every upload is answered as documented',
  () => withServer(async (server) => {
    const pop = await createBuffered(server, { rounds: 6, buffer_size: 2, concurrency: 6, max_staleness: 1 });
    const data = [leafData(0, 3), leafData(1, 3), leafData(2, 3)];
    const leaves = data.map((_, i) => holdings(`leaf ${i}`));
    const summaries = await Promise.all(data.map((dataset, i) => runLeaf({
      server: server.url, population: pop.id, token: pop.client_token, executor, dataset,
      prefetch: 2, backoff: fast, onEvent: leaves[i].onEvent,
    })));
    for (const [i, leaf] of leaves.entries()) {
      assertUploadsAnswered(leaf.log, `leaf ${i}`);
      assert.deepEqual(leaf.doubles, []);
      // One dataset reports at most once per version: its accepted tasks are of distinct versions.
      const accepted = leaf.log.filter((e) => e.type === 'uploaded')
        .map((e) => leaf.log.find((x) => x.type === 'claimed' && x.task.task_id === e.taskId).task.round);
      assert.equal(new Set(accepted).size, accepted.length, `leaf ${i} accepted versions ${accepted}`);
      assert.equal(summaries[i].stopped, 'finished');
    }
    const status = await adminClient(server.url).status(pop.id);
    assert.equal(status.state, 'finished');
    assert.deepEqual(status.history.filter((h) => h.round < 6).map((h) => h.reports), [2, 2, 2, 2, 2, 2]);
    assertRecordedStaleness(status, 1);
    const stale = leaves.flatMap((l) => l.log).filter((e) => e.type === 'dropped' && e.status === 409).length;
    assert.equal(status.rejections.stale ?? 0, stale, 'each 409 a leaf saw is a stale rejection');
    data.forEach((d) => d.delete());
  }));
