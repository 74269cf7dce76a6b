// Byte counts for people: the demo page, the dashboard, the Node progress line and the demo
// table all print sizes this one way.

/**
 * "512 B", "1.5 kB", "18.2 MB", "1.07 GB" (SI units); "–" for a non-finite value.
 * @param {number} bytes
 * @returns {string}
 */
export function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return '–';
  if (bytes < 1000) return `${Math.round(bytes)} B`;
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(bytes < 1e4 ? 1 : 0)} kB`;
  if (bytes < 1e9) return `${(bytes / 1e6).toFixed(bytes < 1e7 ? 2 : 1)} MB`;
  return `${(bytes / 1e9).toFixed(2)} GB`;
}
