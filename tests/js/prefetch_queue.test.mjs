// PrefetchQueue (js_bindings/src/leaf/prefetch_queue.js): jobs prepared ahead and the lease bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { PrefetchQueue } from '../../js_bindings/src/leaf/prefetch_queue.js';

// prepare() that counts the jobs holding a slot: a task job holds one until done().
function tasks() {
  const state = { prepared: 0, holding: 0, maxHolding: 0 };
  state.prepare = async () => {
    state.prepared += 1;
    state.holding += 1;
    state.maxHolding = Math.max(state.maxHolding, state.holding);
    return { task: { task_id: `t${state.prepared}` } };
  };
  state.done = (queue) => {
    state.holding -= 1;
    queue.done();
  };
  return state;
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('fill prepares up to prefetch jobs ahead, in order, and next takes the oldest', async () => {
  const state = tasks();
  const queue = new PrefetchQueue({ prefetch: 2, prepare: state.prepare });
  const first = await queue.next();
  queue.fill(1);
  queue.fill(1);
  await settle();
  assert.equal(state.prepared, 3, 'the one running and two ahead');
  assert.equal((await queue.next()).task.task_id, 't2');
  assert.equal(first.task.task_id, 't1');
});

test('fill stops at maxTasks counting the tasks started', async () => {
  const state = tasks();
  const queue = new PrefetchQueue({ prefetch: 3, maxTasks: 2, prepare: state.prepare });
  await queue.next();
  queue.fill(1);
  await settle();
  assert.equal(state.prepared, 2);
});

test('tasks held at once never exceed prefetch + 1: a claim waits for a slot given back', async () => {
  const state = tasks();
  const queue = new PrefetchQueue({ prefetch: 1, prepare: state.prepare });
  await queue.next();
  queue.fill(1);
  await settle();
  const third = queue.next().then(() => queue.next());  // t2 from the queue, then a new claim
  await settle();
  assert.equal(state.prepared, 2, 'the third claim waits: two tasks hold both slots');
  state.done(queue);
  await third;
  assert.equal(state.prepared, 3);
  assert.equal(state.maxHolding, 2);
});

test('a job without a task, or one that fails, gives its slot back at once', async () => {
  let calls = 0;
  const queue = new PrefetchQueue({
    prefetch: 0,
    prepare: async () => {
      calls += 1;
      if (calls === 1) return { idle: 5 };
      if (calls === 2) throw new Error('download failed');
      return { task: { task_id: 't' } };
    },
  });
  assert.deepEqual(await queue.next(), { idle: 5 });
  await assert.rejects(queue.next(), /download failed/);
  assert.equal((await queue.next()).task.task_id, 't', 'the one slot is free again');
});

test('an abort ends the wait for a slot with the signal\'s reason', async () => {
  const controller = new AbortController();
  const queue = new PrefetchQueue({ prefetch: 0, signal: controller.signal, prepare: async () => ({ task: {} }) });
  await queue.next();
  const waiting = queue.next();
  controller.abort(new Error('stopped'));
  await assert.rejects(waiting, /stopped/);
});
