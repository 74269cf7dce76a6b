// Device stores (js_bindings/src/leaf/device_store.js, src/node/device_file_store.js): a device
// saved under its key loads back; the file store writes mode 0600 in a folder it creates, keeps
// other keys, and names the file when it cannot read it; a ProtocolError carries retry_round.
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
