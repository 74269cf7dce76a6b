// Number formatting shared by the demo page and the dashboard (their API calls go through the
// package's ProtocolClient).

export { formatBytes } from './fedleaf/src/leaf/format_bytes.js';

export function formatCount(n) {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–';
}

export function formatPercent(fraction, digits = 1) {
  return Number.isFinite(fraction) ? `${(fraction * 100).toFixed(digits)}%` : '–';
}

export function formatDuration(seconds) {
  if (!Number.isFinite(seconds)) return '–';
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 120) return `${seconds.toFixed(1)} s`;
  return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}
