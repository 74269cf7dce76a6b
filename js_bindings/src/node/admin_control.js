// fedleaf-admin pause | resume | finish POPULATION: an operator's action on a population
// (POST /v1/populations/{p}:pause, :resume, :finish; admin token). The server answers with the
// population's status after it; the command prints its new state in one line (--json: the whole
// status). A transition the population's state does not allow (resume a running one, anything on
// a finished or failed one) is the server's 409, whose message names the rule: exit status 1.
export const CONTROL_FLAGS = {
  json: { type: 'boolean', default: false, help: "print the population's status JSON the server answered" },
};

export const FINISH_FLAGS = {
  reason: { type: 'string', value: 'TEXT', help: 'why it is finished, kept and shown by its status (at most 500 ' +
    'characters; default "finished by an operator")' },
  ...CONTROL_FLAGS,
};

/** The one-line summary of a population's state after an action. */
export function controlLine(status) {
  const at = status.mode === 'buffered' ? 'version' : 'round';
  const reason = status.finish_reason ? ` (${status.finish_reason})` : '';
  return `population ${status.id}: ${status.state}${reason}, ${at} ${status.round} of ${status.rounds}`;
}

/** The command function of `action` ('pause', 'resume' or 'finish'). */
export function controlCommand(action) {
  return async ({ args, positionals: [population], client, out }) => {
    const status = await client.controlPopulation(population, action, { reason: args.reason });
    out(args.json ? JSON.stringify(status, null, 2) : controlLine(status));
    return 0;
  };
}
