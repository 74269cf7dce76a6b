// Small helpers shared by the demo page and the dashboard: number formatting and the protocol
// header every API call carries.

/** The protocol version the pages speak (major.minor of the fedleaf release they ship with). */
export const PROTOCOL_VERSION = '0.1';

export { formatBytes } from './fedleaf/src/format_bytes.js';

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

/** fetch of the task repository's JSON API; throws an Error with the server's message. */
export async function apiJson(path, { token, method = 'GET', body } = {}) {
  const headers = { 'Fedleaf-Version': PROTOCOL_VERSION };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: reported below when the status is an error
  }
  if (!response.ok) {
    const error = new Error(json?.error?.message ?? (text || `HTTP ${response.status}`));
    error.status = response.status;
    throw error;
  }
  return json;
}
