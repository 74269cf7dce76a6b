// indexedDbDeviceStore: a browser leaf's device credential kept in IndexedDB (device_store.js),
// so a reloaded tab stays the same device. Clearing the site's data forgets it: the next run
// enrolls a new device (docs/design.md "Privacy", the unit of privacy).
//
//   await runLeaf({..., deviceStore: indexedDbDeviceStore()});

import { checkedDevice } from './device_store.js';

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/**
 * @param {object} [options]
 * @param {string} [options.database='fedleaf']  the IndexedDB database
 * @param {IDBFactory} [options.indexedDB]  default globalThis.indexedDB
 */
export function indexedDbDeviceStore({ database = 'fedleaf', indexedDB = globalThis.indexedDB } = {}) {
  if (!indexedDB) throw new TypeError('indexedDbDeviceStore: no IndexedDB here (use another device store)');
  const STORE = 'devices';
  let opened;
  const db = () => {
    opened ??= (() => {
      const req = indexedDB.open(database, 1);
      req.onupgradeneeded = () => req.result.createObjectStore(STORE);
      return request(req);
    })();
    return opened;
  };
  const run = async (mode, body) => {
    const tx = (await db()).transaction(STORE, mode);
    const result = await request(body(tx.objectStore(STORE)));
    await new Promise((resolve, reject) => {
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
    return result;
  };
  return {
    async load(key) { return checkedDevice(await run('readonly', (store) => store.get(key))); },
    async save(key, device) { await run('readwrite', (store) => store.put(checkedDevice(device), key)); },
  };
}
