// fileDeviceStore: fedleaf-leaf's device credentials in a JSON file (device_store.js), one entry
// per server and population, written with mode 0600 (a credential is a secret: whoever holds it
// takes part as that device). The file is replaced whole through a temporary file and rename, so
// a killed leaf never leaves half a file.
//
//   const store = fileDeviceStore(defaultDeviceFile());   // ~/.fedleaf/devices.json

import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

import { checkedDevice } from '../leaf/device_store.js';

/** ~/.fedleaf/devices.json: where fedleaf-leaf keeps its devices without --device-file. */
export function defaultDeviceFile() {
  return join(homedir(), '.fedleaf', 'devices.json');
}

function readAll(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return {};
    throw new Error(`device file ${path}: ${error.code ?? error.message}`);
  }
  let all;
  try {
    all = JSON.parse(text);
  } catch {
    throw new Error(`device file ${path}: not JSON (a file fedleaf-leaf wrote holds {"<server> <population>": {deviceId, credential}})`);
  }
  if (!all || typeof all !== 'object' || Array.isArray(all)) {
    throw new Error(`device file ${path}: expected a JSON object`);
  }
  return all;
}

/** A device store over the JSON file at `path` (created with its folder on first save). */
export function fileDeviceStore(path) {
  return {
    async load(key) { return checkedDevice(readAll(path)[key]); },
    async save(key, device) {
      const all = readAll(path);
      all[key] = checkedDevice(device);
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const tmp = `${path}.${process.pid}.tmp`;
      writeFileSync(tmp, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
      renameSync(tmp, path);
    },
  };
}
