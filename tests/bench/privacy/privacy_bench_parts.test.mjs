// The privacy bench's ring schedule keeps the participation limits it declares (the private
// populations it creates refuse a device that breaks them, so a wrong schedule would fail the
// bench, not flatter it).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { deviceRing, median } from './privacy_bench_parts.mjs';

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
