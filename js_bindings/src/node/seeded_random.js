// The one seeded generator of the simulator, the tests and the benches: the same numbers on
// every run and machine, so a run can be replayed from its seed.

/** A seeded generator of uniform numbers in [0, 1) (mulberry32: 32-bit state, fast, good enough). */
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
