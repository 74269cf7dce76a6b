// The privacy bench's ring schedule keeps the participation limits it declares (the private
// populations it creates refuse a device that breaks them, so a wrong schedule would fail the
// bench, not flatter it).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { deviceRing, median, populationDevices } from './privacy_bench_parts.mjs';

test('every device of the ring keeps min_separation and max_participations', () => {
  for (const [n, perRound, rounds] of [[2420, 200, 40], [121, 8, 30], [10, 3, 17], [7, 7, 5], [5, 1, 12]]) {
    const ring = deviceRing(n, perRound, rounds);
    const last = new Map();
    const count = new Map();
    for (let t = 0; t < rounds; t += 1) {
      const members = ring.devicesOf(t);
      assert.equal(new Set(members).size, perRound, `round ${t} of ${n}/${perRound}: distinct devices`);
      for (const d of members) {
        if (last.has(d)) assert.ok(t - last.get(d) - 1 >= ring.minSeparation, `device ${d} in rounds ${last.get(d)} and ${t}`);
        last.set(d, t);
        count.set(d, (count.get(d) ?? 0) + 1);
      }
    }
    assert.equal(Math.max(...count.values()), ring.maxParticipations);
  }
});

test('a round larger than the population is refused', () => {
  assert.throws(() => deviceRing(10, 11, 3), /devices per round must be in \[1, 10\]/);
});

test('median of odd and even counts', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 2, 3]), 2.5);
});

test('the population: copy 0 in order, later copies shuffled, no device holding one email twice', () => {
  const records = Array.from({ length: 11 }, (_, i) => `email ${i}`);
  assert.deepEqual(populationDevices(records, 2), [0, 2, 4, 6, 8].map((i) => [records[i], records[i + 1]]));
  const grown = populationDevices(records, 2, 12);
  assert.equal(grown.length, 12);
  assert.deepEqual(grown.slice(0, 5), populationDevices(records, 2));
  for (const device of grown) assert.equal(new Set(device).size, device.length);
  const copy1 = grown.slice(5, 10).flat();
  assert.equal(new Set(copy1).size, 10);                       // a copy's devices share no email
  assert.notDeepEqual(copy1, records.slice(0, 10));             // shuffled
  assert.deepEqual(populationDevices(records, 2, 12), grown);   // the same on every run
  assert.throws(() => populationDevices(records, 12), /records per device must be in \[1, 11\]/);
  assert.throws(() => populationDevices(records, 2, 0), /--devices must be a positive integer/);
});
