// fedleaf-admin status: a population's status JSON (GET /v1/populations/{p}, public; every field
// in src/server/README.md "Status JSON") as one screen — state, round (a buffered population's
// version) of rounds with a progress bar (paused: how to resume it; finished early, by an
// operator or a private population's spent budget: the reason; private: ε spent of max), the
// open round's reports, the last closed round's
// reports, examples, train and eval loss/accuracy, what robust aggregation did, the staleness of
// a buffered version, tasks out, rejections, the current model — or with --watch the screen
// refreshed every S seconds until the population finishes: in place on a terminal, else printed
// again whenever the population moved (state, round, reports, tasks out, rejections). A watch
// rides out a server that is restarting or overloaded (network errors, 429, 5xx: it says so and
// keeps polling); any other refusal (404: unknown population) ends it with status 1.
import { setTimeout as sleep } from 'node:timers/promises';

import { AdminUsageError } from './admin_usage_error.js';
import { ProtocolError } from '../protocol/protocol_error.js';
import { networkErrorMessage } from '../protocol/network_error.js';

export const DEFAULT_WATCH_S = 2;

export const STATUS_FLAGS = {
  watch: { type: 'string', value: '[S]', optionalValue: String(DEFAULT_WATCH_S),
    help: `refresh the screen every S seconds (default ${DEFAULT_WATCH_S}) with a progress bar of rounds, until the ` +
      'population finishes; S, when given, follows --watch (put POPULATION first: status spam --watch 5)' },
  json: { type: 'boolean', default: false, help: 'print the status JSON as the server sent it' },
};

const BAR_WIDTH = 30;

/** '[#########---------------------]  3/10 rounds': `done` of `total`, `width` cells. */
export function progressBar(done, total, unit = 'rounds', width = BAR_WIDTH) {
  const filled = total > 0 ? Math.min(width, Math.floor((width * done) / total)) : 0;
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} ${unit}`;
}

const fixed = (value, digits = 4) => (typeof value === 'number' ? value.toFixed(digits) : '-');
const counts = (object) => Object.entries(object ?? {}).map(([name, n]) => `${name} ${n}`).join(', ');

function seconds(s) {
  if (s < 120) return `${Math.max(0, Math.round(s))} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

// What robust aggregation did in a closed round, or null when it did nothing.
function robustLine(robust = {}) {
  const parts = [];
  if (Object.keys(robust.clipped ?? {}).length) parts.push(`clipped reports ${counts(robust.clipped)}`);
  if (Object.keys(robust.clipped_rows ?? {}).length) parts.push(`clipped rows ${counts(robust.clipped_rows)}`);
  if (robust.capped) parts.push(`examples capped in ${robust.capped} reports (cap ${robust.example_cap})`);
  if (Object.keys(robust.withheld_rows ?? {}).length) parts.push(`rows withheld ${counts(robust.withheld_rows)}`);
  if (robust.withheld_nonfinite) parts.push(`non-finite elements kept ${robust.withheld_nonfinite}`);
  return parts.length ? `  robust: ${parts.join('; ')}` : null;
}

function closedLine(entry, unit) {
  const train = `${entry.reports} reports, ${entry.examples} examples, train loss ${fixed(entry.mean_train_loss)}, ` +
    `accuracy ${fixed(entry.mean_train_accuracy)}`;
  const e = entry.eval;
  const evaluated = e?.reports ? `; eval ${e.reports} reports, loss ${fixed(e.loss)}, accuracy ${fixed(e.accuracy)}` +
    `${typeof e.auc === 'number' ? `, auc ${fixed(e.auc)}` : ''}` : '';
  const took = typeof entry.duration_s === 'number' ? ` in ${seconds(entry.duration_s)}` : '';
  return `${unit} ${entry.round} closed${took}: ${train}${evaluated}`;
}

/**
 * The status screen's lines.
 * @param {object} status  the status JSON
 * @param {number} now  unix seconds (the open round's age and deadline are shown against it)
 * @returns {string[]}
 */
// A private population's guarantee so far: ε spent (the server's accountant, after the rounds
// released) of max_epsilon, ε at the end of the configured run, δ, and what bounds one device.
function privacyLine(p) {
  return `privacy: ε ${fixed(p.epsilon_spent, 3)} spent of max ${p.max_epsilon} (${fixed(p.epsilon_at_end, 3)} at the ` +
    `end) at δ ${p.delta}, per ${p.unit ?? 'device'}: noise ${p.noise_multiplier} × clip ${p.clip_norm}, ` +
    `≤ ${p.max_participations} rounds, ${p.min_separation} apart`;
}

export function statusScreen(status, now) {
  const buffered = status.mode === 'buffered';
  const unit = buffered ? 'version' : 'round';
  const finished = status.state === 'finished';
  const lines = [];
  const mode = buffered ? `buffered: ${status.buffered.buffer_size} reports a version, concurrency ` +
    `${status.buffered.concurrency}, max staleness ${status.buffered.max_staleness}` : 'synchronous';
  lines.push(`population ${status.id}: ${status.state}, ${unit} ${status.round} of ${status.rounds} (${mode})`);
  if (status.state === 'paused') {
    lines.push(`paused: claims get no task until \`fedleaf-admin resume ${status.id}\` (reports in flight still ` +
      'count; the deadline keeps ticking)');
  }
  if (status.privacy) lines.push(privacyLine(status.privacy));
  if (status.finish_reason) lines.push(`finished early: ${status.finish_reason}`);
  // A population an operator finished early shows the rounds it ran, not its planned end.
  const done = finished && !status.finish_reason ? status.rounds : Math.min(status.round, status.rounds);
  lines.push(progressBar(done, status.rounds, `${unit}s`));
  const history = status.history ?? [];
  const open = history.find((entry) => entry.status === 'open');
  if (open && !finished) {
    const wanted = buffered ? `${status.reports} of ${status.buffered.buffer_size} reports in the buffer`
      : `${status.reports} of ${status.clients_per_round} reports (min ${status.min_reports})`;
    const tasks = buffered ? `${status.tasks_out} tasks out of ${status.buffered.concurrency}`
      : `${status.train_tasks_per_round} train tasks`;
    const evalTasks = status.eval_tasks_per_round ? `, ${status.eval_tasks_per_round} eval tasks` : '';
    lines.push(`${unit} ${open.round} open ${seconds(now - open.started_at)}, deadline in ` +
      `${seconds(open.deadline - now)}: ${wanted}, ${tasks}${evalTasks}`);
  }
  const closed = history.filter((entry) => entry.status === 'closed' && entry.round < status.rounds);
  const last = closed[closed.length - 1];
  if (last) {
    lines.push(closedLine(last, unit));
    const robust = robustLine(last.robust);
    if (robust) lines.push(robust);
    if (last.staleness) {
      lines.push(`  staleness: mean ${fixed(last.staleness.mean, 2)}, max ${last.staleness.max} (${counts(last.staleness.counts)})`);
    }
  }
  const final = history.find((entry) => entry.round === status.rounds);
  if (final?.eval?.reports) {
    const e = final.eval;
    lines.push(`final model (${unit} ${final.round}): eval ${e.reports} reports, loss ${fixed(e.loss)}, accuracy ` +
      `${fixed(e.accuracy)}${typeof e.auc === 'number' ? `, auc ${fixed(e.auc)}` : ''}`);
  }
  const rejected = counts(status.rejections);
  lines.push(`rejections: ${rejected || 'none'}`);
  lines.push(`model: ${unit} ${status.round}, etag ${status.model_etag}`);
  return lines;
}

// What a non-terminal watch prints again on: the population moved.
function progressKey(status) {
  return JSON.stringify([status.state, status.round, status.reports, status.tasks_out, status.rejections]);
}

/** The --watch interval: a number of seconds > 0. */
export function watchSeconds(value) {
  const s = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!(s > 0)) throw new AdminUsageError(`--watch must be a number of seconds > 0, got '${value}'`);
  return s;
}

/**
 * Polls the status every `intervalS` until the population finishes (resolves 0). Retryable
 * failures are shown and polled through; any other ProtocolError rejects.
 * @param {{client: object, population: string, intervalS: number, out: (line: string) => void,
 *          tty?: {write: (text: string) => void, columns: number}}} options  tty: redraw in place there
 */
export async function watchStatus({ client, population, intervalS, out, tty }) {
  let drawn = 0;
  let lastKey;
  const show = (lines) => {
    if (tty) {
      // A line as wide as the terminal may wrap, and the redraw would then move up too few lines.
      const cut = lines.map((line) => (line.length >= tty.columns ? line.slice(0, tty.columns - 1) : line));
      tty.write(`${drawn ? `\x1b[${drawn}F\x1b[J` : ''}${cut.join('\n')}\n`);
      drawn = cut.length;
    } else {
      if (lastKey !== undefined) out('');
      for (const line of lines) out(line);
    }
  };
  let lastLines = [];
  for (;;) {
    let status;
    try {
      status = await client.status(population);
    } catch (error) {
      if (error instanceof ProtocolError && !error.retryable) throw error;
      const why = error instanceof ProtocolError ? `HTTP ${error.status}: ${error.message}` : networkErrorMessage(error);
      const note = `(no status: ${why}; polling again every ${intervalS} s)`;
      if (tty) show([...lastLines, note]);
      else if (lastKey !== 'error') out(note);
      if (!tty) lastKey = 'error';
    }
    if (status) {
      lastLines = statusScreen(status, Date.now() / 1000);
      const key = progressKey(status);
      if (tty || key !== lastKey) show(lastLines);
      lastKey = key;
      if (status.state === 'finished') return 0;
    }
    await sleep(intervalS * 1000);
  }
}

/** status: one screen, the raw JSON, or the watch. */
export async function statusCommand({ args, positionals: [population], client, out }) {
  if (args.watch !== undefined && args.json) throw new AdminUsageError('--watch and --json: give one');
  if (args.watch !== undefined) {
    const intervalS = watchSeconds(args.watch);
    const tty = process.stdout.isTTY ? { write: (text) => process.stdout.write(text), columns: process.stdout.columns } : undefined;
    return watchStatus({ client, population, intervalS, out, tty });
  }
  const status = await client.status(population);
  if (args.json) out(JSON.stringify(status, null, 2));
  else for (const line of statusScreen(status, Date.now() / 1000)) out(line);
  return 0;
}
