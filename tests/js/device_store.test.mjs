// Device stores (js_bindings/src/leaf/device_store.js, indexeddb_device_store.js over a fake
// IndexedDB, src/node/device_file_store.js): a device saved under its key loads back; the file
// store writes mode 0600 in a folder it creates, keeps other keys, and names the file when it
// cannot read it; a ProtocolError carries retry_round.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { deviceKey, memoryDeviceStore } from '../../js_bindings/src/leaf/device_store.js';
import { defaultDeviceFile, fileDeviceStore } from '../../js_bindings/src/node/device_file_store.js';
import { protocolError } from '../../js_bindings/src/protocol/protocol_error.js';
import { tempDir } from '../server/server_harness.mjs';

test('the memory store keeps devices by key for the run', async () => {
  const store = memoryDeviceStore();
  assert.equal(await store.load('k'), undefined);
  await store.save('k', { deviceId: 'd', credential: 'c', extra: 1 });
  assert.deepEqual(await store.load('k'), { deviceId: 'd', credential: 'c' });
  assert.equal(deviceKey('http://h:8080', 'spam'), 'http://h:8080/ spam');
});

test('the file store keeps each key in a 0600 file and survives a new store on the same file', async () => {
  const file = path.join(tempDir('fedleaf-device-store-'), 'sub', 'devices.json');
  await fileDeviceStore(file).save('a', { deviceId: 'd1', credential: 'c1' });
  await fileDeviceStore(file).save('b', { deviceId: 'd2', credential: 'c2' });
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const reopened = fileDeviceStore(file);
  assert.deepEqual(await reopened.load('a'), { deviceId: 'd1', credential: 'c1' });
  assert.deepEqual(await reopened.load('b'), { deviceId: 'd2', credential: 'c2' });
  assert.equal(await reopened.load('c'), undefined);
  assert.match(defaultDeviceFile(), /\.fedleaf[/\\]devices\.json$/);

  writeFileSync(file, 'not json');
  await assert.rejects(reopened.load('a'), new RegExp(`device file ${file}: not JSON`));
  writeFileSync(file, '[1]');
  await assert.rejects(reopened.load('a'), /expected a JSON object/);
});

test('a min_separation refusal carries the round the device may return at', async () => {
  const body = JSON.stringify({ error: { code: 'min_separation', message: 'min_separation: …', retry_round: 7 } });
  const error = await protocolError(new Response(body, { status: 429, headers: { 'Retry-After': '12' } }), 'http://s/');
  assert.deepEqual([error.status, error.code, error.retryRound, error.retryAfterMs], [429, 'min_separation', 7, 12_000]);
});

// A minimal IndexedDB (open with upgrade, readonly/readwrite transactions, get/put) with the
// browser's event order: a request's success, then its transaction's complete.
function fakeIndexedDB() {
  const databases = new Map();
  const later = (fn) => setTimeout(fn, 0);
  const request = (compute, tx) => {
    const req = {};
    later(() => {
      req.result = compute();
      req.onsuccess?.();
      if (tx) later(() => tx.oncomplete?.());
    });
    return req;
  };
  return {
    opened: 0,
    open(name, version) {
      this.opened += 1;
      const req = {};
      later(() => {
        let db = databases.get(name);
        const fresh = !db;
        if (fresh) {
          const stores = new Map();
          db = {
            stores, version,
            createObjectStore(store) { stores.set(store, new Map()); },
            transaction(store, mode) {
              const tx = {};
              const data = stores.get(store);
              tx.objectStore = () => ({
                get: (key) => request(() => data.get(key), tx),
                put: (value, key) => {
                  assert.equal(mode, 'readwrite');
                  return request(() => data.set(key, structuredClone(value)), tx);
                },
              });
              return tx;
            },
          };
          databases.set(name, db);
        }
        req.result = db;
        if (fresh) req.onupgradeneeded?.();
        req.onsuccess?.();
      });
      return req;
    },
  };
}

test('the IndexedDB store keeps devices across stores on the same database', async () => {
  const { indexedDbDeviceStore } = await import('../../js_bindings/src/leaf/indexeddb_device_store.js');
  const indexedDB = fakeIndexedDB();
  const store = indexedDbDeviceStore({ indexedDB });
  assert.equal(await store.load('k'), undefined);
  await store.save('k', { deviceId: 'd', credential: 'c' });
  assert.deepEqual(await store.load('k'), { deviceId: 'd', credential: 'c' });
  assert.equal(indexedDB.opened, 1, 'the database is opened once per store');
  assert.deepEqual(await indexedDbDeviceStore({ indexedDB }).load('k'), { deviceId: 'd', credential: 'c' });
  assert.throws(() => indexedDbDeviceStore({ indexedDB: null }), /no IndexedDB here/);
});
