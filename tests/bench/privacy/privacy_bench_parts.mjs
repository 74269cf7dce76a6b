// The privacy bench's schedule and statistics (privacy_bench.mjs), apart so a test can check the
// schedule keeps the participation limits it claims.
import { readFileSync } from 'node:fs';

// Devices 0..n-1 in a ring, each round the next `perRound` of them: round t takes devices
// (t·perRound + j) mod n, j < perRound. A device's rounds are then ⌊n/perRound⌋ or
// ⌈n/perRound⌉ apart, so min_separation (rounds strictly between) is ⌊n/perRound⌋ − 1, and over
// `rounds` rounds no device takes part more than maxParticipations times (counted exactly).
export function deviceRing(n, perRound, rounds) {
  if (!(Number.isInteger(n) && Number.isInteger(perRound) && perRound >= 1 && perRound <= n)) {
    throw new RangeError(`devices per round must be in [1, ${n}], got ${perRound}`);
  }
  const devicesOf = (t) => Array.from({ length: perRound }, (_, j) => (t * perRound + j) % n);
  const counts = new Map();
  for (let t = 0; t < rounds; t += 1) for (const d of devicesOf(t)) counts.set(d, (counts.get(d) ?? 0) + 1);
  return {
    devicesOf,
    minSeparation: Math.floor(n / perRound) - 1,
    maxParticipations: Math.max(1, ...counts.values()),
  };
}

// The population: `records` cut into devices of `perDevice` in order (copy 0), then, while fewer
// than `count` devices, copy c = 1, 2, … of `records` shuffled by a generator seeded with c and
// cut likewise. Without `count`: copy 0's devices only.
export function populationDevices(records, perDevice, count) {
  const perCopy = Math.floor(records.length / perDevice);
  if (!(Number.isInteger(perDevice) && perDevice >= 1 && perCopy >= 1)) {
    throw new RangeError(`records per device must be in [1, ${records.length}], got ${perDevice}`);
  }
  const n = count ?? perCopy;
  if (!(Number.isInteger(n) && n >= 1)) throw new RangeError(`--devices must be a positive integer, got ${count}`);
  const devices = [];
  for (let c = 0; devices.length < n; c += 1) {
    const order = records.map((_, i) => i);
    if (c > 0) shuffle(order, c);
    for (let d = 0; d < perCopy && devices.length < n; d += 1) {
      devices.push(order.slice(d * perDevice, (d + 1) * perDevice).map((i) => records[i]));
    }
  }
  return devices;
}

// Fisher–Yates with mulberry32 seeded by `seed`: the same order on every machine.
function shuffle(values, seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = values.length - 1; i > 0; i -= 1) {
    const j = Math.floor(next() * (i + 1));
    [values[i], values[j]] = [values[j], values[i]];
  }
}

// CPU time (user + system) the process `pid` has used, in ms (Linux /proc).
export function processCpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);  // utime, stime (fields 14, 15 of stat)
  return (ticks * 1000) / 100;  // USER_HZ is 100 on Linux
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// "(min–max)" of the values, times `scale`, for a table cell; '' for a single value.
export function spread(values, scale = 1) {
  if (values.length < 2) return '';
  const digits = scale === 1 ? 1 : 2;
  return `(${(Math.min(...values) * scale).toFixed(digits)}–${(Math.max(...values) * scale).toFixed(digits)})`;
}
