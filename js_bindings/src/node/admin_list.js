// fedleaf-admin ls: GET /v1/populations (admin token) as a table, one population a line.
export const LIST_FLAGS = {
  json: { type: 'boolean', default: false, help: "print the server's answer as JSON" },
};

/**
 * `rows` (arrays of strings) under `header` in columns two spaces apart, each as wide as its
 * widest cell; numbers (cells of digits, '/' and '.') right-aligned.
 * @param {string[]} header
 * @param {string[][]} rows
 * @returns {string[]} the lines
 */
export function formatTable(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((row) => /^[\d./]+$/.test(row[i])));
  const line = (cells) => cells.map((cell, i) => (numeric[i] ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
    .join('  ').trimEnd();
  return [line(header), ...rows.map(line)];
}

/** ls: the populations, their state, round (version) of rounds, clients per round and mode. */
export async function listCommand({ args, client, out }) {
  const { populations } = await client.listPopulations();
  if (args.json) {
    out(JSON.stringify({ populations }, null, 2));
    return 0;
  }
  if (populations.length === 0) {
    out('no populations');
    return 0;
  }
  const rows = populations.map((p) => [p.id, p.state, `${p.round}/${p.rounds}`,
    p.mode === 'buffered' ? '-' : String(p.clients_per_round), p.mode ?? 'synchronous']);
  for (const line of formatTable(['ID', 'STATE', 'ROUND', 'CLIENTS', 'MODE'], rows)) out(line);
  return 0;
}
