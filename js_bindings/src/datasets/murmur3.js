// MurmurHash3_x86_32 over bytes: the hash of fedleaf's feature hashing (src/core/features/murmur3.h)
// and of its deterministic data splits. Same results as the C++ implementation, in any JS engine.
//
//   murmur3_32(new TextEncoder().encode('spam-2/00017'), 0)  // → unsigned 32-bit integer

/** @param {Uint8Array} bytes  @param {number} seed  @returns {number} */
export function murmur3_32(bytes, seed) {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed >>> 0;
  const blocks = bytes.length >>> 2;
  for (let i = 0; i < blocks; i++) {
    const p = 4 * i;
    let k = bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16) | (bytes[p + 3] << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = 4 * blocks;
  let k = 0;
  switch (bytes.length & 3) {
    case 3: k ^= bytes[tail + 2] << 16; // falls through
    case 2: k ^= bytes[tail + 1] << 8; // falls through
    case 1:
      k ^= bytes[tail];
      k = Math.imul(k, c1);
      k = (k << 15) | (k >>> 17);
      k = Math.imul(k, c2);
      h ^= k;
  }
  h ^= bytes.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
