// fedleaf-admin device ls | revoke POPULATION: a private population's devices (admin token).
//   ls POPULATION           GET /v1/populations/{p}/devices (every page): id, enrolled, rounds
//                           taken, last round, state — never a credential;
//   revoke POPULATION ID    POST /v1/populations/{p}/devices/{id}:revoke: the device's claims get
//                           403 from then on; leases it already holds may still report.
import { formatTable } from './admin_list.js';
import { AdminUsageError } from './admin_usage_error.js';

export const DEVICE_FLAGS = {
  json: { type: 'boolean', default: false, help: "ls: print the devices as JSON ({devices: [...]})" },
};

const ACTIONS = ['ls', 'revoke'];

const when = (s) => new Date(s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

/** The rows of `device ls`: id, enrolled, participations, last round, state. */
export function deviceRows(devices) {
  return formatTable(['ID', 'ENROLLED', 'ROUNDS', 'LAST', 'STATE'], devices.map((d) => [d.id, when(d.enrolled_at),
    String(d.participations), d.last_round === null ? '-' : String(d.last_round),
    d.revoked ? `revoked ${when(d.revoked_at)}` : 'live']));
}

/** device ACTION POPULATION [ID]. */
export async function deviceCommand({ args, positionals: [action, population, id], client, out }) {
  if (!ACTIONS.includes(action)) {
    throw new AdminUsageError(`unknown device action '${action}' (actions: ${ACTIONS.join(', ')})`);
  }
  if ((action === 'revoke') !== (id !== undefined)) {
    throw new AdminUsageError(action === 'revoke' ? 'missing ID (device revoke POPULATION ID)'
      : `unexpected argument '${id}'`);
  }
  if (action !== 'ls' && args.json) throw new AdminUsageError('--json is for device ls');
  if (action === 'revoke') {
    if (!/^[0-9a-f]{1,64}$/.test(id)) throw new AdminUsageError(`ID must be a device id (lower-case hex), got '${id}'`);
    await client.revokeDevice(population, id);
    out(`device ${id} of ${population}: revoked`);
    return 0;
  }
  const devices = [];
  let after;
  do {
    const page = await client.listDevices(population, { after });
    devices.push(...page.devices);
    after = page.next_after ?? undefined;
  } while (after !== undefined);
  if (args.json) out(JSON.stringify({ devices }, null, 2));
  else for (const line of deviceRows(devices)) out(line);
  return 0;
}
