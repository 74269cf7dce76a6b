// Where a leaf keeps its device credential (issue 39: a private population admits enrolled
// devices only). runLeaf enrolls once, when a claim answers 401 device_required, and saves the
// credential under a key naming the server and the population; the next run loads it, so a
// restarted leaf stays the same device (its participation limits go on counting).
//
//   const store = memoryDeviceStore();                 // this run only
//   await store.save('http://h:8080/ spam', {deviceId, credential});
//   const device = await store.load('http://h:8080/ spam');   // {deviceId, credential} | undefined
//
// A store is any object with these two methods: memoryDeviceStore() here,
// indexedDbDeviceStore() (indexeddb_device_store.js) in a browser, fileDeviceStore(path)
// (src/node/device_file_store.js) for fedleaf-leaf.

/** The key a leaf's device is kept under: its server and population. */
export function deviceKey(server, population) {
  return `${new URL(server).href} ${population}`;
}

/** Checks what a store loaded: {deviceId, credential} strings, else undefined. */
export function checkedDevice(value) {
  return value && typeof value.deviceId === 'string' && typeof value.credential === 'string'
    ? { deviceId: value.deviceId, credential: value.credential } : undefined;
}

/**
 * A store that keeps devices in memory: a restarted leaf enrolls again (a new device).
 * @returns {{load(key: string): Promise<{deviceId: string, credential: string}|undefined>,
 *            save(key: string, device: {deviceId: string, credential: string}): Promise<void>}}
 */
export function memoryDeviceStore() {
  const devices = new Map();
  return {
    async load(key) { return devices.get(key); },
    async save(key, device) { devices.set(key, checkedDevice(device)); },
  };
}
