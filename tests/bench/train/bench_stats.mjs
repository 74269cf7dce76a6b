// The train bench's measures: CPU time and peak RSS of an engine process, the digest of a trained
// update, and the median, quantiles and spread over rounds.


export function median(values) {
  const v = [...values].sort((x, y) => x - y);
  const n = v.length;
  return n % 2 ? v[(n - 1) / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Linear-interpolated quantile q of values.
function quantile(values, q) {
  const v = [...values].sort((x, y) => x - y);
  const at = q * (v.length - 1);
  const lo = Math.floor(at);
  return lo + 1 < v.length ? v[lo] + (at - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

export function spread(values) {
  return {
    median: median(values), min: Math.min(...values), max: Math.max(...values),
    q1: quantile(values, 0.25), q3: quantile(values, 0.75), rounds: values,
  };
}

// FNV-1a, 64 bits, as hex (train_bench.cc computes the same over the native result).
export function fnv1a(bytes) {
  let h = 0xcbf29ce484222325n;
  const mask = (1n << 64n) - 1n;
  for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & mask;
  return h.toString(16).padStart(16, '0');
}

// CPU time (user + system) of this process since `start` (a process.cpuUsage() value), in s.
export function cpuSecondsSince(start) {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1e6;
}

export function peakRss() {
  return process.resourceUsage().maxRSS * 1024;
}
